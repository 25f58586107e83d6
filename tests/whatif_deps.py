#!/usr/bin/env python3
"""The call graph between the files of src/whatif/ (which file uses a
function another defines), and its cycles: printed, exit 1 when any."""
import glob, os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
files = sorted(glob.glob(os.path.join(root, 'src/whatif/*.c')))
DEF = re.compile(r'^(?!static)[a-z][\w \*]*?\b(\w+)\(', re.M)
defs = {}
for f in files:
    for m in DEF.finditer(open(f).read()):
        defs.setdefault(m.group(1), os.path.basename(f))
dep = {os.path.basename(f): set() for f in files}
for f in files:
    b, s = os.path.basename(f), open(f).read()
    for name, df in defs.items():
        if df != b and re.search(r'\b' + name + r'\(', s):
            dep[b].add(df)
cycles = []
def visit(n, path):
    for m in sorted(dep.get(n, ())):
        if m in path:
            c = path[path.index(m):] + [m]
            if min(c[:-1]) == c[0] and c not in cycles: cycles.append(c)
        else:
            visit(m, path + [m])
for n in sorted(dep):
    visit(n, [n])
for b in sorted(dep):
    print(b, '->', ', '.join(sorted(dep[b])))
for c in cycles:
    print('CYCLE:', ' -> '.join(c))
sys.exit(1 if cycles else 0)
