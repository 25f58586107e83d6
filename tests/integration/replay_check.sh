#!/usr/bin/env bash
# replay_check.sh [OPTION]... -- LUMOSIM-ARG... -- ASSERTION...
#
# Runs "$LUMOSIM replay --json LUMOSIM-ARG...", requires exit status 0, saves
# the JSON report (stdout) to a temporary file and checks each ASSERTION on it
# with json_check (syntax in json_check.c, e.g.
# 'ranks.0.node_error.max_abs_start_ns==0', 'abs(ranks.*.window.error)<=0.002').
#
# Options:
#   --require P   exit 77 (CTest skip) if P does not exist (shared traces)
#   --stage F     copy F into a temporary directory; the argument @STAGE@ in
#                 LUMOSIM-ARG is replaced by that directory (directory input)
#   --twice       run the replay twice and require byte-identical reports
#
# Environment: LUMOSIM = the lumosim binary, JSON_CHECK = the json_check binary.
set -u

: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
: "${JSON_CHECK:?set JSON_CHECK to the json_check binary}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-replay-check.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

twice=0
staged=0
while [ $# -gt 0 ]; do
    case "$1" in
    --require)
        if [ ! -e "$2" ]; then
            echo "SKIP: $2 is missing (shared traces not checked out beside the repository?)"
            exit 77
        fi
        shift 2 ;;
    --stage)
        mkdir -p "$tmp/stage" && cp "$2" "$tmp/stage/" || exit 1
        staged=1
        shift 2 ;;
    --twice) twice=1; shift ;;
    --) shift; break ;;
    *) echo "replay_check.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    if [ "$1" = "@STAGE@" ]; then
        [ "$staged" -eq 1 ] || { echo "replay_check.sh: @STAGE@ without --stage" >&2; exit 2; }
        args+=("$tmp/stage")
    else
        args+=("$1")
    fi
    shift
done
[ $# -gt 0 ] && shift # the second --
if [ ${#args[@]} -eq 0 ]; then
    echo "replay_check.sh: no lumosim arguments" >&2
    exit 2
fi

echo "command: $LUMOSIM replay --json ${args[*]}"
"$LUMOSIM" replay --json "${args[@]}" >"$tmp/report.json" 2>"$tmp/stderr"
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

if [ "$twice" -eq 1 ]; then
    "$LUMOSIM" replay --json "${args[@]}" >"$tmp/report2.json" 2>/dev/null
    if ! cmp -s "$tmp/report.json" "$tmp/report2.json"; then
        echo "FAIL: two runs of the same replay gave different reports"
        diff "$tmp/report.json" "$tmp/report2.json" | head -n 20
        exit 1
    fi
    echo "ok: two runs gave byte-identical reports"
fi

if [ $# -eq 0 ]; then
    # No assertions: the report must at least be valid JSON with a rank.
    set -- 'len(ranks)>=1'
fi
"$JSON_CHECK" "$tmp/report.json" "$@"
st=$?
if [ "$st" -ne 0 ]; then
    echo "--- report (first 60 lines) ---"
    head -n 60 "$tmp/report.json"
    exit 1
fi
echo "PASS"
