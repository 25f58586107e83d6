#!/bin/sh
# html_scale.sh [LUMOSIM] [DIR]: the HTML report of the 4,096-GPU GPT-3 175B
# job (TP 8 x PP 8 x DP 64, the README's example) and its size against the
# 5 MB bound of issue 39 (docs/report-html.md "The job at scale"). Takes
# minutes of CPU and about 2 GB (sim); run it with nice on a quiet machine.
# Prints the page's size, bytes per GPU, the peak RSS of sim and the median
# peak RSS and wall time of report (--html, and --html --csv; once --csv
# drawn from every graph, as before) over three runs (GNU time), of the full
# and of a --detail summary archive, with both archives' sizes, and
# renders a screenshot with headless chromium when one is installed. DIR
# (default a temporary one) keeps the files.
set -eu
L=${1:-build/lumosim}
d=${2:-$(mktemp -d)}
mkdir -p "$d"
rss() { /usr/bin/time -f "%M %e" -o "$d/rss" "$@" >/dev/null; awk '{ printf "%d MiB, %.1f s wall", $1 / 1024, $2 }' "$d/rss"; }
# median of three runs: peak RSS (MiB) and wall seconds, in two columns
med3() {
    for k in 1 2 3; do /usr/bin/time -f "%M %e" -o "$d/rss.$k" "$@" >/dev/null; done
    cat "$d/rss.1" "$d/rss.2" "$d/rss.3" | sort -n -k1,1 | sed -n 2p | awk '{ printf "%d MiB", $1 / 1024 }'
    printf ', '
    cat "$d/rss.1" "$d/rss.2" "$d/rss.3" | sort -n -k2,2 | sed -n 2p | awk '{ printf "%.1f s wall (median of 3)\n", $2 }'
}
"$L" synth --model gpt3-175b --tp 8 --pp 8 --dp 64 --micro-batch 1 --global-batch 1536 --distributed-optimizer \
    -o "$d/job.h5" >/dev/null
echo "sim peak RSS:    $(rss "$L" sim "$d/job.h5" -o "$d/result.h5" --force)"
echo "report peak RSS: $(med3 "$L" report "$d/result.h5" --html "$d/job.html")"
echo "report --csv:    $(med3 "$L" report "$d/result.h5" --html "$d/job.html" --csv "$d/job.csv")"
# the CSV drawn from every graph, as report --csv did before it read the
# tables (one run: about 10 GB and minutes)
echo "report --csv from every graph (before): $(LUMOSIM_TEST_REPORT_GRAPHS=1 rss "$L" report "$d/result.h5" \
    --html "$d/g.html" --csv "$d/g.csv")"
cmp -s "$d/job.csv" "$d/g.csv" && echo "CSV: the same bytes both ways ($(wc -l <"$d/job.csv") lines)" || echo "CSV: DIFFERS"
"$L" sim "$d/job.h5" -o "$d/summary.h5" --detail summary --force >/dev/null
echo "archive: $(wc -c <"$d/result.h5") bytes (--detail ops), $(wc -c <"$d/summary.h5") bytes (--detail summary)"
echo "report of the summary archive: $(med3 "$L" report "$d/summary.h5" --html "$d/summary.html")"
s=$(wc -c <"$d/job.html")
echo "page: $s bytes, $((s / 4096)) bytes per GPU (bound 5000000: $([ "$s" -le 5000000 ] && echo ok || echo OVER))"
if command -v chromium >/dev/null 2>&1; then
    HOME=$d/home chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
        --user-data-dir="$d/ud" --screenshot="$d/shot.png" --window-size=1280,2000 "file://$d/job.html" \
        >/dev/null 2>&1 && echo "screenshot: $d/shot.png"
fi
echo "files in $d"
