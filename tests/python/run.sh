#!/bin/sh
# CTest entry of the Python package's tests (label python): runs
# test_lumosim_py.py (or $LSIM_PY_SCRIPT, another script here) with the first interpreter that has h5py and pandas --
# $LSIM_PYTHON, then /usr/bin/python3 (Debian's python3-h5py and
# python3-pandas), then python3 on PATH (which may be a pyenv or venv one
# without them) -- and exits 77 (skip) when none has them.
#
#   LUMOSIM=build/lumosim LSIM_SOURCE_DIR=. sh tests/python/run.sh [unittest args]
here=$(cd "$(dirname "$0")" && pwd)
for p in "${LSIM_PYTHON:-}" /usr/bin/python3 python3; do
    [ -n "$p" ] || continue
    command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c 'import h5py, pandas, numpy' 2>/dev/null; then
        exec "$p" "$here/${LSIM_PY_SCRIPT:-test_lumosim_py.py}" "$@"
    fi
done
echo "skipped: no python3 with h5py and pandas (apt-get install python3-h5py python3-pandas)"
exit 77
