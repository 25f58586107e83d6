#!/bin/bash
# interrupt.sh SEED_TRACE   (environment: LUMOSIM, GEN_TRACE)
# SIGINT or SIGTERM at any moment of a run that writes outputs must leave no
# temporary file behind, and any output that exists must be complete.
# A background job of a script starts with SIGINT ignored, and lumosim
# leaves an ignored signal ignored (nohup): each run is started with SIGINT
# given back its default (bash's subshell trap; dash keeps it ignored).
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$GEN_TRACE" --size-mb 25 "$1" "$tmp/big.json" >/dev/null || { echo "gen_trace failed"; exit 1; }
n=0
for sig in INT TERM; do
    for d in 0.05 0.15 0.3 0.45 0.6 0.8 1.0 1.3; do
        out="$tmp/out$n"
        mkdir "$out"
        ( trap - INT; exec "$LUMOSIM" replay --trace-out "$out/p.json.gz" "$tmp/big.json" ) >/dev/null 2>&1 &
        pid=$!
        sleep "$d"
        kill -s "$sig" "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        ( trap - INT; exec "$LUMOSIM" build "$tmp/big.json" -o "$out/job.h5" ) >/dev/null 2>&1 &
        pid=$!
        sleep "$d"
        kill -s "$sig" "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        if ls "$out" | grep -q 'tmp-'; then echo "SIG$sig after ${d}s left: $(ls "$out")"; exit 1; fi
        if [ -e "$out/p.json.gz" ] && ! gzip -t "$out/p.json.gz" 2>/dev/null; then echo "incomplete trace after SIG$sig"; exit 1; fi
        if [ -e "$out/job.h5" ] && ! "$LUMOSIM" info "$out/job.h5" >/dev/null 2>&1; then echo "unreadable store after SIG$sig"; exit 1; fi
        n=$((n + 1))
    done
done
echo "ok: $n interrupted runs left no temporary file and no partial output"
