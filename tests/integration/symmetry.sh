#!/bin/sh
# symmetry.sh   (environment: LUMOSIM)
#
# sim --symmetry (include/lumosim/symmetry.h, docs/scaling.md "Symmetry
# reduction"): the reduced run (one GPU simulated per class, the default)
# writes the same archive (h5diff, the run's provenance excluded) and the
# same JSON report as --symmetry off, and the class counts are the ones the
# layout gives (synthesized rank = tp + TP (dp + DP pp), docs/synthesis.md):
#  1. GPT-3 175B, 4 layers, TP 2 PP 2 DP 8: the TP ranks and DP replicas of
#     a stage share its structure and partners, so PP classes;
#  2. a MoE job (qwen3-30b-a3b, 2 layers, TP 1 PP 2 DP 8 EP 4): PP classes;
#  3. job 1 with --slow-gpu G (whatif): the slow GPU's data-parallel
#     replica splits into TP x PP singletons, the other replicas stay one
#     class per (tp, pp) position: 2 TP PP classes;
#  4. job 1 with --jitter: every GPU its own class, nothing reduced;
#  5. --symmetry with another value: a usage error.
set -u
: "${LUMOSIM:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "symmetry: $*"; exit 1; }

# classes STORE: the class count sim --stats prints; both archives and
# reports compared
same() {
    st=$1
    "$LUMOSIM" sim --stats --json --critical-path --detail nodes "$st" -o "$tmp/on.h5" >"$tmp/on.json" 2>"$tmp/err" ||
        fail "sim $st: $(cat "$tmp/err")"
    classes=$(sed -n 's/^lumosim: stats: symmetry: \([0-9]*\) classes of \([0-9]*\) GPUs.*/\1/p' "$tmp/err")
    how=$(sed -n 's/^lumosim: stats: symmetry: .*), \(.*\)$/\1/p' "$tmp/err")
    [ -n "$classes" ] || fail "$st: no symmetry line in --stats: $(cat "$tmp/err")"
    "$LUMOSIM" sim --symmetry off --json --critical-path --detail nodes "$st" -o "$tmp/off.h5" >"$tmp/off.json" \
        2>"$tmp/err" || fail "sim --symmetry off $st: $(cat "$tmp/err")"
    h5diff -q --exclude-path /runs/sim/provenance "$tmp/on.h5" "$tmp/off.h5" >"$tmp/d" 2>&1 ||
        fail "$st: the reduced archive differs from the full one: $(head -5 "$tmp/d")"
    cmp -s "$tmp/on.json" "$tmp/off.json" || fail "$st: the reduced report differs from the full one"
    rm -f "$tmp/on.h5" "$tmp/off.h5"
}

TP=2 PP=2 DP=8
N=$((TP * PP * DP))
"$LUMOSIM" synth --model gpt3-175b --layers 4 --tp $TP --pp $PP --dp $DP --micro-batch 1 --global-batch 32 \
    --no-memory-check -o "$tmp/g.h5" >/dev/null 2>"$tmp/err" || fail "synth: $(cat "$tmp/err")"
same "$tmp/g.h5"
[ "$classes" -eq $PP ] || fail "GPT-3 TP$TP PP$PP DP$DP: $classes classes, the layout gives $PP"
[ "$how" = "one GPU simulated per class" ] || fail "GPT-3: not reduced ($how)"
echo "ok: GPT-3 TP$TP PP$PP DP$DP: $classes classes of $N GPUs, reduced = full"

"$LUMOSIM" synth --model qwen3-30b-a3b --layers 2 --tp 1 --pp 2 --dp 8 --ep 4 --micro-batch 1 --global-batch 16 \
    --no-memory-check -o "$tmp/m.h5" >/dev/null 2>"$tmp/err" || fail "synth MoE: $(cat "$tmp/err")"
same "$tmp/m.h5"
[ "$classes" -eq 2 ] || fail "MoE TP1 PP2 DP8 EP4: $classes classes, the layout gives 2"
echo "ok: MoE TP1 PP2 DP8 EP4: $classes classes of 16 GPUs, reduced = full"

G=5 # tp 1, dp 2, pp 0
"$LUMOSIM" whatif "$tmp/g.h5" --slow-gpu $G:1.5 -o "$tmp/s.h5" >/dev/null 2>"$tmp/err" || fail "whatif: $(cat "$tmp/err")"
same "$tmp/s.h5"
want=$((2 * TP * PP))
[ "$classes" -eq $want ] || fail "--slow-gpu $G: $classes classes, the layout gives 2 TP PP = $want"
echo "ok: --slow-gpu $G: $classes classes, reduced = full"

"$LUMOSIM" whatif "$tmp/g.h5" --jitter 0.05 -o "$tmp/j.h5" >/dev/null 2>"$tmp/err" || fail "whatif: $(cat "$tmp/err")"
same "$tmp/j.h5"
[ "$classes" -eq $N ] || fail "--jitter: $classes classes, not every GPU's own ($N)"
[ "$how" = "every GPU simulated" ] || fail "--jitter: $how"
echo "ok: --jitter: $N classes, nothing reduced"

"$LUMOSIM" sim --symmetry maybe "$tmp/g.h5" >/dev/null 2>"$tmp/err" && fail "--symmetry maybe accepted"
[ "$(wc -l <"$tmp/err")" -ge 1 ] && grep -q -- "--symmetry" "$tmp/err" || fail "--symmetry maybe: $(cat "$tmp/err")"
echo "ok: --symmetry maybe refused"
