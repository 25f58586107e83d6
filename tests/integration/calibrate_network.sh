#!/bin/sh
# calibrate_network.sh TEST_DATA TOPOLOGY_DIR   (environment: LUMOSIM)
#
# lumosim calibrate on the network alone: fitted on the AWS p5 nccl-tests
# rows of 2 and 8 nodes (TEST_DATA/nccl, CC-BY 4.0, NOTICE there), the
# predicted bus bandwidth it prints for the held-out 4- and 16-node rows is
# compared with the busbw column of the CSV itself (read here with awk):
# all-reduce rows >= 512 MB and all-to-all rows >= 256 MB within 10 %. The
# topology it writes loads back with nccl_tuning on. Bad inputs (a CSV
# without a needed column, a row with a non-number, a topology with an
# oversubscription below 1, a zero bandwidth, an unknown key) give exit 1, one
# "lumosim: error:" line naming the file and the column or key, nothing on
# stdout and no topology written.
set -u
dir=$1
topo=$2/aws_p5_efa.json
: "${LUMOSIM:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "calibrate network: $*"; exit 1; }
AR=$dir/nccl/nccl_p5_all_reduce.csv
A2A=$dir/nccl/nccl_p5_alltoall.csv

"$LUMOSIM" calibrate --nccl-csv "$AR" --nccl-csv "$A2A" --topology "$topo" --fit-nodes 2,8 \
    --topology-out "$tmp/t.json" >"$tmp/out" 2>"$tmp/err" || fail "exit $?: $(cat "$tmp/err")"
cat "$tmp/out"
grep -q '"nccl_tuning": true' "$tmp/t.json" || fail "written topology lacks nccl_tuning"
"$LUMOSIM" calibrate --nccl-csv "$AR" --topology "$tmp/t.json" --topology-out "$tmp/t2.json" >/dev/null 2>"$tmp/err" ||
    fail "the written topology does not load back: $(cat "$tmp/err")"

# model busbw per (kind, nodes, MB) from the report's rows
awk 'NF == 8 && $NF == "held-out" { print $1, $2, $3, $5 }' "$tmp/out" >"$tmp/model"
[ "$(wc -l <"$tmp/model")" -eq 32 ] || fail "want 32 held-out rows (18 + 14), got $(wc -l <"$tmp/model")"
check() { # KIND CSV MIN_MB
    awk -F, -v kind="$1" -v min="$3" '
        NR == FNR { split($0, a, " "); m[a[1] " " a[2] " " a[3]] = a[4]; next }
        FNR > 1 && ($1 == 4 || $1 == 16) && $3 + 0 >= min {
            key = kind " " $1 " " $3
            if (!(key in m)) { print "no model row for " key; bad = 1; next }
            err = (m[key] - $7) / $7
            if (err < -0.10 || err > 0.10) { printf "%s: model %s vs measured %s GB/s (%+.1f %%)\n", key, m[key], $7, 100 * err; bad = 1 }
            n++
        }
        END { if (!n) { print "no held-out row"; bad = 1 } exit bad }' "$tmp/model" "$2" || fail "$1: held-out rows off by more than 10 %"
}
check allreduce "$AR" 512
check alltoall "$A2A" 256

bad() { # NAME EXPECTED-TEXT ARGS...
    name=$1 want=$2
    shift 2
    mkdir "$tmp/o" || exit 1
    "$LUMOSIM" calibrate "$@" --topology-out "$tmp/o/t.json" >"$tmp/bout" 2>"$tmp/berr"
    rc=$?
    [ $rc -eq 1 ] || fail "$name: exit $rc, want 1"
    [ ! -s "$tmp/bout" ] || fail "$name: output on stdout"
    [ "$(wc -l <"$tmp/berr")" -eq 1 ] || fail "$name: not one line on stderr: $(cat "$tmp/berr")"
    grep -q "^lumosim: error: .*$want" "$tmp/berr" || fail "$name: want '$want' in: $(cat "$tmp/berr")"
    [ -z "$(ls -A "$tmp/o")" ] || fail "$name: left files: $(ls -A "$tmp/o")"
    rmdir "$tmp/o"
}
sed 's/out algbw(GB\/s)/algbw/' "$AR" >"$tmp/nocol_all_reduce.csv"
bad no_column "nocol_all_reduce.csv: line 1: no column \"out algbw(GB/s)\"" --nccl-csv "$tmp/nocol_all_reduce.csv"
sed '3s/,110.40,/,fast,/' "$AR" >"$tmp/nan_all_reduce.csv"
bad not_a_number "nan_all_reduce.csv: line 3: column out algbw(GB/s)" --nccl-csv "$tmp/nan_all_reduce.csv"
sed 's/"algo": "auto",/"algo": "auto", "oversubscription": 0.5,/' "$topo" >"$tmp/oversub.json"
bad oversubscription "oversub.json: key oversubscription" --nccl-csv "$AR" --topology "$tmp/oversub.json"
sed 's/"inter_bw": 50e9/"inter_bw": 0/' "$topo" >"$tmp/zero.json"
bad zero_bw "zero.json: key inter_bw: 0 is not positive" --nccl-csv "$AR" --topology "$tmp/zero.json"
sed 's/"algo": "auto",/"algo": "auto", "nics": 4,/' "$topo" >"$tmp/unknown.json"
bad unknown_key "unknown.json: key nics: unknown key" --nccl-csv "$AR" --topology "$tmp/unknown.json"
bad fit_nodes "--fit-nodes 2,x" --nccl-csv "$AR" --fit-nodes 2,x
echo "calibrate network: ok"
