#!/usr/bin/env python3
"""check_arch.py must fail on a tree that breaks each of its rules: a tree
of one violation per rule is made in a temporary folder, and the checker's
exit status and FAIL lines are compared with what was planted."""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check_arch.py')
LONG = '    x++;\n' * 205


def write(root, path, text):
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'w') as f:
        f.write(text)


def main():
    with tempfile.TemporaryDirectory() as root:
        write(root, 'src/util.h', '/* private */\n')
        write(root, 'io/priv.c', '#include "../src/util.h"\n')
        write(root, 'src/cli/m.c', 'void f(void) { MPI_Barrier(MPI_COMM_WORLD); }\n/* MPI_Init in a comment */\n')
        write(root, 'src/a.c', '#include <stdlib.h>\nvoid *f(void) { return strdup("malloc(3)"); } /* calloc( */\n')
        write(root, 'src/b.c', 'static int\nlongfn(void)\n{\n' + LONG + '}\n')
        write(root, 'include/lumosim/h.h', 'static inline int hfn(void)\n{\n' + LONG + '}\n')
        write(root, 'src/run/opts.c', 'static const lsim_wi_opt O[] = {{"--x"}};\n')
        write(root, 'CMakeLists.txt', '# io/x.c in a comment\nadd_library(lumosim_core STATIC src/ok.c io/w.c)\n'
                                      'target_sources(lumosim_io PRIVATE io/y.c)\n')
        write(root, 'src/ok.c', '#include "lumosim/alloc.h"\nvoid *g(void) { return lsim_malloc(3); }\n')
        p = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        fails = sorted(l.split(' (')[0] for l in p.stdout.splitlines() if l.startswith('FAIL '))
        want = sorted(['FAIL folder-library: io/w.c in lumosim_core', 'FAIL private-header: io/priv.c -> src/util.h', 'FAIL cli-mpi: src/cli/m.c',
                       'FAIL raw-alloc: src/a.c', 'FAIL long-function: src/b.c:longfn',
                       'FAIL long-function: include/lumosim/h.h:hfn', 'FAIL whatif-option: src/run/opts.c'])
        if p.returncode != 1 or fails != want:
            print('exit %d, FAIL lines:\n  %s\nwanted:\n  %s' % (p.returncode, '\n  '.join(fails), '\n  '.join(want)))
            return 1
        print('check_arch.py refuses each planted violation (%d)' % len(want))
    return 0


if __name__ == '__main__':
    sys.exit(main())
