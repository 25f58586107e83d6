#!/bin/sh
# html_scale.sh [LUMOSIM] [DIR]: the HTML report of the 4,096-GPU GPT-3 175B
# job (TP 8 x PP 8 x DP 64, the README's example) and its size against the
# 5 MB bound of issue 39 (docs/report-html.md "The job at scale"). Takes
# minutes of CPU and about 3 GB (sim and report); run it with nice on a
# quiet machine. Prints the page's size, bytes per GPU and the peak RSS of
# sim and report (GNU time), and renders a screenshot with headless chromium
# when one is installed. DIR (default a temporary one) keeps the files.
set -eu
L=${1:-build/lumosim}
d=${2:-$(mktemp -d)}
mkdir -p "$d"
rss() { /usr/bin/time -f "%M" -o "$d/rss" "$@" >/dev/null; echo "$(($(cat "$d/rss") / 1024)) MiB"; }
"$L" synth --model gpt3-175b --tp 8 --pp 8 --dp 64 --micro-batch 1 --global-batch 1536 --distributed-optimizer \
    -o "$d/job.h5" >/dev/null
echo "sim peak RSS:    $(rss "$L" sim "$d/job.h5" -o "$d/result.h5" --force)"
echo "report peak RSS: $(rss "$L" report "$d/result.h5" --html "$d/job.html")"
s=$(wc -c <"$d/job.html")
echo "page: $s bytes, $((s / 4096)) bytes per GPU (bound 5000000: $([ "$s" -le 5000000 ] && echo ok || echo OVER))"
if command -v chromium >/dev/null 2>&1; then
    HOME=$d/home chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
        --user-data-dir="$d/ud" --screenshot="$d/shot.png" --window-size=1280,2000 "file://$d/job.html" \
        >/dev/null 2>&1 && echo "screenshot: $d/shot.png"
fi
echo "files in $d"
