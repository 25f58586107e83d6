#!/bin/sh
# test_html.sh [OPTION]... ITERS LUMOSIM-ARG...
#
# Runs "$LUMOSIM report LUMOSIM-ARG... --html DIR/r.html" and checks the page:
#   - exit status 0, nothing on stdout, the file exists and nothing else was
#     left in DIR (the page is written under a temporary name and renamed);
#   - one HTML document (<!DOCTYPE html> ... </html>), balanced <svg>/<table>/<g>;
#   - self-contained: no <script, no http:// or https://, no <link, <img,
#     <iframe, <object, <embed, src=, url( or @import;
#   - exactly ITERS groups with class="iter", each with a data-iter name
#     (one per ProfilerStep iteration, or one "window" group per rank without);
#   - a second run writes a byte-identical page.
# LUMOSIM-ARG are the trace paths, optionally preceded by report options
# (--latency observed, --bin-ms N). In LUMOSIM-ARG and --pre, @TMP@ stands for
# the test's scratch directory.
#
# Options:
#   --require P      exit 77 (CTest skip) if P does not exist (shared traces)
#   --contains TEXT  the page must contain TEXT (fixed string; repeatable)
#   --absent TEXT    the page must not contain TEXT (fixed string; repeatable)
#   --max-bytes N    the page must be at most N bytes
#   --pre ARGS       first run "$LUMOSIM ARGS" (ARGS split at blanks; must
#                    exit 0), e.g. to synthesize and simulate a job into
#                    @TMP@/r.h5 (repeatable, run in order)
#   --screenshot     instead: render the page with headless chromium (or
#                    chromium-browser; $CHROMIUM overrides) and check the PNG
#                    with $HTML_PNG_CHECK (not blank, chart colours present).
#                    Exit 77 (skip) when no chromium is installed.
#   --png-color SPEC with --screenshot: the colours the PNG must show
#                    (html_png_check's --color RRGGBB[,RRGGBB...]:MINPIXELS;
#                    repeatable) instead of the breakdown bars' colours
#
# Environment: LUMOSIM = the lumosim binary; HTML_PNG_CHECK = the
# html_png_check binary (--screenshot only); HTML_KEEP = a directory to copy
# the page (and the screenshot) into, for a look (optional).
set -u

: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"

screenshot=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-html.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
: >"$tmp/contains"
: >"$tmp/absent"
maxbytes=0
: >"$tmp/pre"
pngcolors=

while [ $# -gt 0 ]; do
    case "$1" in
    --require)
        if [ ! -e "$2" ]; then
            echo "SKIP: $2 is missing (shared traces not checked out beside the repository?)"
            exit 77
        fi
        shift 2 ;;
    --contains) printf '%s\n' "$2" >>"$tmp/contains"; shift 2 ;;
    --absent) printf '%s\n' "$2" >>"$tmp/absent"; shift 2 ;;
    --max-bytes) maxbytes=$2; shift 2 ;;
    --pre) printf '%s\n' "$2" >>"$tmp/pre"; shift 2 ;;
    --screenshot) screenshot=1; shift ;;
    --png-color) pngcolors="$pngcolors --color $2"; shift 2 ;;
    --) shift; break ;;
    -*) echo "test_html.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    echo "usage: test_html.sh [--require P] [--contains TEXT]... [--absent TEXT]... [--pre ARGS]... [--screenshot]" \
        "ITERS LUMOSIM-ARG..." >&2
    exit 2
fi
iters=$1
shift
case "$iters" in
'' | *[!0-9]*) echo "test_html.sh: ITERS must be a number, got '$iters'" >&2; exit 2 ;;
esac

chromium=
if [ "$screenshot" -eq 1 ]; then
    : "${HTML_PNG_CHECK:?set HTML_PNG_CHECK to the html_png_check binary}"
    if [ -n "${CHROMIUM:-}" ]; then
        chromium=$CHROMIUM
    else
        for c in chromium chromium-browser; do
            if command -v "$c" >/dev/null 2>&1; then
                chromium=$(command -v "$c")
                break
            fi
        done
    fi
    if [ -z "$chromium" ]; then
        echo "SKIP: no chromium or chromium-browser on PATH (apt-get install chromium)"
        exit 77
    fi
fi

fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}
# $1 with every @TMP@ replaced by the scratch directory
subst() {
    s=$1 o=
    while :; do
        case "$s" in
        *@TMP@*) o=$o${s%%@TMP@*}$tmp; s=${s#*@TMP@} ;;
        *) printf '%s' "$o$s"; return ;;
        esac
    done
}
# run "$LUMOSIM $1", $1 split at blanks, @TMP@ replaced
run_pre() {
    set -f
    # shellcheck disable=SC2086 # split on purpose
    set -- $1
    set +f
    for a do
        shift
        set -- "$@" "$(subst "$a")"
    done
    echo "before: $LUMOSIM $*"
    "$LUMOSIM" "$@" </dev/null >"$tmp/pre.out" 2>&1
    prc=$?
    if [ "$prc" -ne 0 ]; then
        echo "FAIL: exit status $prc"
        tail -n 20 "$tmp/pre.out"
        exit 1
    fi
}
for a do
    shift
    set -- "$@" "$(subst "$a")"
done
while IFS= read -r line; do
    [ -n "$line" ] && run_pre "$line"
done <"$tmp/pre"
# occurrences of a fixed string in a file (several per line counted)
count() {
    awk -v pat="$1" '{ s = $0; while ((i = index(s, pat)) > 0) { n++; s = substr(s, i + length(pat)) } }
        END { print n + 0 }' "$2"
}

mkdir "$tmp/out" "$tmp/out2" || exit 1
page=$tmp/out/r.html
echo "command: $LUMOSIM report $* --html $page"
"$LUMOSIM" report "$@" --html "$page" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "FAIL: exit status $rc, expected 0"
    echo "--- stderr ---"
    head -n 40 "$tmp/stderr"
    exit 1
fi
if [ -s "$tmp/stderr" ]; then
    echo "--- stderr (not an error, shown for information) ---"
    head -n 20 "$tmp/stderr"
fi
[ -s "$tmp/stdout" ] && bad "stdout is not empty: $(head -c 200 "$tmp/stdout")"
if [ ! -s "$page" ]; then
    echo "FAIL: $page was not written"
    ls -la "$tmp/out"
    exit 1
fi
left=$(ls -A "$tmp/out")
[ "$left" = "r.html" ] || bad "the output directory holds more than the page (temporary files left?): $left"
echo "page: $(wc -c <"$page") bytes"

# one HTML document
head -n 1 "$page" | grep -qi '^<!DOCTYPE html>' || bad "the page does not start with <!DOCTYPE html>"
[ "$(tail -n 1 "$page")" = "</html>" ] || bad "the page does not end with </html>"
for tag in svg table; do
    o=$(count "<$tag" "$page")
    c=$(count "</$tag>" "$page")
    [ "$o" -eq "$c" ] || bad "<$tag> opened $o times, closed $c times"
done
o=$(count "<g " "$page")
c=$(count "</g>" "$page")
[ "$o" -eq "$c" ] || bad "<g> opened $o times, closed $c times"

# self-contained
for pat in '<script' 'http://' 'https://' '<link' '<img' '<iframe' '<object' '<embed' 'src=' 'url(' '@import'; do
    if grep -qiF -- "$pat" "$page"; then
        bad "the page contains '$pat' (it must be self-contained):"
        grep -niF -- "$pat" "$page" | head -n 3 | cut -c 1-200
    fi
done

# one group per iteration
n=$(count 'class="iter"' "$page")
nd=$(count '<g class="iter" data-iter="' "$page")
echo "iteration groups: $n (expected $iters)"
[ "$n" -eq "$iters" ] || bad "$n elements with class=\"iter\", expected $iters"
[ "$nd" -eq "$n" ] || bad "$nd of the $n iteration groups are <g class=\"iter\" data-iter=\"...\">"

while IFS= read -r text; do
    [ -n "$text" ] || continue
    grep -qF -- "$text" "$page" || bad "the page does not contain '$text'"
done <"$tmp/contains"
while IFS= read -r text; do
    [ -n "$text" ] || continue
    if grep -qF -- "$text" "$page"; then
        bad "the page contains '$text' ($(count "$text" "$page") times):"
        grep -nF -- "$text" "$page" | head -n 3 | cut -c 1-200
    fi
done <"$tmp/absent"
if [ "$maxbytes" -gt 0 ]; then
    sz=$(wc -c <"$page")
    [ "$sz" -le "$maxbytes" ] || bad "the page is $sz bytes, more than $maxbytes"
fi

# deterministic
"$LUMOSIM" report "$@" --html "$tmp/out2/r.html" >/dev/null 2>&1
cmp -s "$page" "$tmp/out2/r.html" || bad "a second run wrote a different page"

if [ -n "${HTML_KEEP:-}" ]; then
    mkdir -p "$HTML_KEEP" && cp "$page" "$HTML_KEEP/" && echo "kept: $HTML_KEEP/r.html"
fi

if [ "$screenshot" -eq 1 ] && [ "$fail" -eq 0 ]; then
    shot=$tmp/shot.png
    to=
    command -v timeout >/dev/null 2>&1 && to="timeout 60"
    echo "screenshot: $chromium"
    # HOME inside the temporary directory: chromium writes its caches there.
    HOME=$tmp/home $to "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$tmp/ud" --screenshot="$shot" --window-size=1280,2000 \
        "file://$page" >"$tmp/chromium.log" 2>&1
    crc=$?
    if [ ! -s "$shot" ]; then
        echo "FAIL: chromium (exit $crc) wrote no screenshot"
        tail -n 20 "$tmp/chromium.log"
        exit 1
    fi
    [ "$crc" -eq 0 ] || echo "note: chromium exited with $crc but wrote the screenshot"
    # the four breakdown colours fill the bars: far more pixels than the
    # legend swatches in those colours (about 2000)
    [ -n "$pngcolors" ] || pngcolors="--color 4e79a7,76b7b2,f28e2b,c9c3bf:6000"
    # shellcheck disable=SC2086 # split on purpose (colour specs have no blanks)
    "$HTML_PNG_CHECK" "$shot" --min-nonbg 1 --min-colors 8 $pngcolors || fail=1
    if [ -n "${HTML_KEEP:-}" ]; then
        cp "$shot" "$HTML_KEEP/" && echo "kept: $HTML_KEEP/shot.png"
    fi
fi

[ "$fail" -eq 0 ] && echo "ok"
exit "$fail"
