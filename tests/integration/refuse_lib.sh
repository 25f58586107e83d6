# refuse_lib.sh: sourced by the tests that check a refusal (issue 17,
# "Numbers"; issue 40). The caller sets tmp (a scratch directory), w (the
# work directory, under tmp) and fail (a function counting failures).
#
# refuse NAME RC PHRASE... -- COMMAND... runs COMMAND in the current
# directory and checks: exit status RC; stderr exactly one line,
# "lumosim: error: ...", holding every PHRASE; stdout empty; and w holding
# exactly the files it held before, each byte-identical (cmp): no output,
# no *.tmp-* left, no input touched. Refused within 20 s of CPU time
# (ulimit -t: the work done, whatever the machine's load; a refusal comes
# before the work); `timeout 120` only guards against a hang.
snapshot() { rm -rf "$tmp/snap" && cp -a "$w" "$tmp/snap"; }
unchanged() { # NAME
    local a b f
    a=$(cd "$w" && find . -type f | LC_ALL=C sort)
    b=$(cd "$tmp/snap" && find . -type f | LC_ALL=C sort)
    [ "$a" = "$b" ] || fail "$1: files added or removed: $(diff <(echo "$b") <(echo "$a") | grep '^[<>]' | tr '\n' ' ')"
    for f in $b; do
        [ -f "$w/$f" ] && { cmp -s "$w/$f" "$tmp/snap/$f" || fail "$1: $f changed"; }
    done
}
# refuse NAME RC PHRASE... -- COMMAND...
refuse() {
    local name=$1 want=$2 rc n
    shift 2
    local ph=()
    while [ "$1" != -- ]; do ph+=("$1"); shift; done
    shift
    snapshot
    (ulimit -t 20 && exec timeout 120 "$@") >"$tmp/out" 2>"$tmp/err"
    rc=$?
    # SIGXCPU (128 + 24): more than 20 s of CPU before the refusal
    [ "$rc" -ne 152 ] || fail "$name: used 20 s of CPU time: refused late, after the work"
    [ "$rc" -ne 124 ] || fail "$name: hung (killed after 120 s)"
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want"
    n=$(awk 'END { print NR }' "$tmp/err")
    [ "$n" -eq 1 ] || fail "$name: $n lines on stderr, want 1: $(head -c 600 "$tmp/err")"
    grep -q '^lumosim: error: ' "$tmp/err" || fail "$name: stderr is not 'lumosim: error: ...': $(head -c 300 "$tmp/err")"
    for p in "${ph[@]}"; do
        grep -qF -- "$p" "$tmp/err" || fail "$name: '$p' not in: $(head -c 600 "$tmp/err")"
    done
    [ ! -s "$tmp/out" ] || fail "$name: stdout not empty ($(wc -c <"$tmp/out") bytes)"
    unchanged "$name"
    echo "ok: $name (exit $rc): $(head -n 1 "$tmp/err")"
}

