# ab_loop.sh: the alternation shared by the before/after benchmarks
# (ab_replay.sh, replay_e2e.sh), sourced. ab_loop REPS A B FN TRACE...
# calls FN SIDE BIN TRACE for each trace, REPS times, "before" (A) then
# "after" (B) each time, so that the load of a shared machine falls on both
# builds alike. FN's status stops the loop (set -e callers exit).
ab_loop() {
    local reps=$1 a=$2 b=$3 fn=$4 t side
    shift 4
    for t in "$@"; do
        for _ in $(seq "$reps"); do
            for side in before after; do
                if [ "$side" = before ]; then "$fn" "$side" "$a" "$t" || return 1; else "$fn" "$side" "$b" "$t" || return 1; fi
            done
        done
    done
}
