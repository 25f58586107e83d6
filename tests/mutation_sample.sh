#!/bin/bash
# mutation_sample.sh MUTATE_SH WORK EXCLUDE
#
# The CI sample of the mutation harness (bench/mutate.sh --sample: every
# mutant of the list still applies, three planted in a scratch copy and
# killed by the bundled tests), its record written with --docs into a page
# of the test's own:
#  - the text around the markers is kept, what was between them replaced;
#  - the block names the three mutants KILLED and the score 3 of 3;
#  - a page without the markers is refused (exit 2) before anything runs,
#    and left byte-identical.
set -u
mut=${1:?usage: mutation_sample.sh MUTATE_SH WORK EXCLUDE} work=${2:?} excl=${3:?}
fail() { echo "mutation_sample: $*"; exit 1; }
mkdir -p "$work" || exit 1
page=$work/page.md
printf 'before\n<!-- BEGIN bench/mutate.sh -->\nold text\n<!-- END bench/mutate.sh -->\nafter\n' >"$page"

# a page without the markers: refused first, untouched
printf 'no markers here\n' >"$work/bare.md"
cp "$work/bare.md" "$work/bare.orig"
bash "$mut" --sample --docs "$work/bare.md" --work "$work/never" >"$work/bare.out" 2>&1
st=$?
[ $st -eq 2 ] || fail "a page without markers: exit $st, expected 2: $(tail -3 "$work/bare.out")"
grep -q "needs the lines" "$work/bare.out" || fail "a page without markers: $(tail -3 "$work/bare.out")"
cmp -s "$work/bare.md" "$work/bare.orig" || fail "a page without markers was changed"
[ ! -e "$work/never" ] || fail "a page without markers: the run started anyway"

bash "$mut" --sample -j 2 --work "$work/run" --keep --exclude "$excl" --docs "$page" || fail "the sample failed (exit $?)"
[ "$(head -n 1 "$page")" = before ] && [ "$(tail -n 1 "$page")" = after ] || fail "the text around the markers changed"
# byte for byte after the block: no line added (chomp under an undefined
# record separator kept the block's last newline, a blank line a run)
[ "$(sed -n '/^<!-- END bench\/mutate.sh -->$/,$p' "$page")" = "$(printf '<!-- END bench/mutate.sh -->\nafter')" ] ||
    fail "the text after the block changed: $(sed -n '/^<!-- END bench\/mutate.sh -->$/,$p' "$page" | od -c | head -3)"
grep -q "old text" "$page" && fail "the old block is still there"
grep -q '^\*\*score: 3 of 3 non-equivalent mutants killed (100 %)' "$page" || fail "no score 3 of 3: $(cat "$page")"
for m in latency_plus_1us breakdown_swap clock_offset_sign; do
    grep -q "^| $m | [a-z/]* | kill | KILLED | [a-z_]" "$page" || fail "$m is not KILLED by a named test in the block"
done
grep -q "^Written by \`bash bench/mutate.sh --sample " "$page" || fail "the block does not say how it was written"
echo "mutation_sample: ok"
