#!/usr/bin/env python3
"""The architecture's rules, checked on the source tree (issue 35). Fails
(exit 1) when:

  folder-library  a source CMakeLists.txt gives a library lies outside
                  that library's folder (FOLDERS: the folders are the
                  libraries);
  private-header  a file includes a private header of another library's
                  folder ("../src/util.h" from io/ or mpi/); public headers
                  are include/lumosim/*.h, and the private headers two
                  libraries share are include/internal/*.h (not installed);
  cli-mpi         src/cli/ names an MPI symbol (MPI_*, outside comments and
                  strings): MPI belongs below the CLI, in the run layer
                  (include/lumosim/world.h);
  long-function   a library function (src/ but src/cli/, io/, mpi/) exceeds
                  200 lines;
  whatif-option   a what-if option is defined outside the step table
                  (src/run/whatif_steps.c, or a file defining a row of it);
  raw-alloc       library code calls malloc, calloc, realloc, strdup or
                  strndup, not the allocation seam's lsim_* wrappers
                  (include/lumosim/alloc.h: the OOM tests reach every
                  allocation through it).

Rules that do not hold yet have known exceptions below, each with its
count today: a count may only go down (a new violation, or more of an old
one, fails), so the list can only shrink. Run: check_arch.py [ROOT]."""
import glob
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
MAX_LINES = 200

# Known exceptions: (rule, what) -> count today. Lower a count (or drop the
# entry) when a violation is fixed; never raise one.
KNOWN = {
}


def rel(p):
    return os.path.relpath(p, ROOT)


def sources(*globs):
    out = []
    for g in globs:
        out += glob.glob(os.path.join(ROOT, g), recursive=True)
    return sorted(set(out))


# Each library's folder tree, the deeper folder first (docs/ARCHITECTURE.md
# section 0): the CMake target lumosim_<lib> is compiled from lib's folder
# and nothing else, cli being the program.
FOLDERS = (('src/cli/', 'cli'), ('src/', 'core'), ('io/chakra/', 'chakra'), ('io/', 'io'), ('mpi/', 'mpi'))


def library(path):
    """The library whose folder holds a file (FOLDERS), or None (include/,
    tests, tools)."""
    r = rel(path)
    for top, lib in FOLDERS:
        if r.startswith(top):
            return lib
    return None


def check_folders(found):
    """Every source CMakeLists.txt lists for lumosim_<lib> (add_library,
    target_sources) or for the program lumosim lies in that library's
    folder."""
    path = os.path.join(ROOT, 'CMakeLists.txt')
    if not os.path.exists(path):
        return
    s = re.sub(r'#[^\n]*', '', open(path, errors='replace').read())
    for m in re.finditer(r'\b(?:add_library|add_executable|target_sources)\(\s*lumosim(?:_(\w+))?\b([^)]*)\)', s):
        lib = m.group(1) or 'cli'
        for src in re.findall(r'(?<![\w/}$])((?:src|io|mpi)/[\w/.-]+\.c)\b', m.group(2)):
            if library(os.path.join(ROOT, src)) != lib:
                found[('folder-library', '%s in %s' % (src, 'lumosim' if lib == 'cli' else 'lumosim_' + lib))] = 1


def check_private_headers(found):
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for f in sources('src/**/*.[ch]', 'io/**/*.[ch]', 'mpi/**/*.[ch]'):
        for m in inc.finditer(open(f, errors='replace').read()):
            h = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
            if not os.path.exists(h) or rel(h).startswith('include/'):
                continue  # public (include/lumosim) or found on the include path
            lf, lh = library(f), library(h)
            if lh and lf != lh:
                found.setdefault(('private-header', '%s -> %s' % (rel(f), rel(h))), 0)
                found[('private-header', '%s -> %s' % (rel(f), rel(h)))] += 1


def check_cli_mpi(found):
    sym = re.compile(r'\bMPI_[A-Za-z_0-9]+')
    for f in sources('src/cli/*.[ch]'):
        s = strip_strings(strip_comments(open(f, errors='replace').read()))
        n = len(sym.findall(s))
        if n:
            found[('cli-mpi', rel(f))] = n


def strip_strings(s):
    """String and character literals emptied: a message that says "MPI_Init
    failed" names no symbol."""
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', '""', s)


def strip_comments(s):
    s = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), s, flags=re.S)
    return re.sub(r'//[^\n]*', '', s)


def functions(s):
    """(name, first line, lines) of each function defined at column 0: its
    head (name and parameters, which may span lines) up to the closing
    brace at column 0."""
    lines = s.split('\n')
    i = 0
    # the name at column 0 after its type, or alone with the type on the
    # line before ("static int\nname(...)")
    head = re.compile(r'^(?:[A-Za-z_][\w \*]*?\b)?(\w+)\(')
    while i < len(lines):
        m = head.match(lines[i])
        if m and not lines[i].rstrip().endswith(';') and m.group(1) not in ('if', 'while', 'for', 'switch', 'return'):
            j = i
            while j < len(lines) and not lines[j].startswith('{') and not lines[j].rstrip().endswith(';') \
                    and not lines[j].rstrip().endswith('{') and j - i < 12:
                j += 1
            if j < len(lines) and (lines[j].startswith('{') or lines[j].rstrip().endswith('{')) \
                    and not lines[j].rstrip().endswith(';'):
                k = j
                while k < len(lines) and not lines[k].startswith('}'):
                    k += 1
                yield m.group(1), i + 1, k - i + 1
                i = k + 1
                continue
        i += 1


def check_long_functions(found):
    # headers too: a static inline function is library code
    for f in sources('src/**/*.[ch]', 'io/**/*.[ch]', 'mpi/**/*.[ch]', 'include/**/*.h'):
        if library(f) == 'cli':
            continue
        s = strip_comments(open(f, errors='replace').read())
        for name, _, n in functions(s):
            if n > MAX_LINES:
                found[('long-function', '%s:%s' % (rel(f), name))] = 1


def check_whatif_options(found):
    table = os.path.join(ROOT, 'src/run/whatif_steps.c')
    for f in sources('src/**/*.[ch]', 'io/**/*.[ch]', 'mpi/**/*.[ch]'):
        s = strip_comments(open(f, errors='replace').read())
        r = rel(f)
        if f == table or re.search(r'\blsim_wi_row\s+\w+\s*=', s):
            continue  # the table, or a row of it in its own file
        # an option spelled as a step-table entry, or a whatif command's own
        # option table or switch in the CLI
        n = len(re.findall(r'\blsim_wi_opt\s+\w+\s*(\[\s*\])?\s*=', s))
        if r.startswith('src/cli/'):
            m = re.search(r'lsim_cli_parse_whatif\(int argc.*?\n}\n', s, re.S)
            body = m.group(0) if m else ''
            n += len(re.findall(r'\{\s*"-', body)) + len(re.findall(r'\bcase\s', body))
            n += len(re.findall(r'\bWHATIF_OPTS\b', s))
        if n:
            found[('whatif-option', r)] = n


def check_raw_alloc(found):
    call = re.compile(r'(?<![\w.>])(malloc|calloc|realloc|strdup|strndup)\s*\(')
    for f in sources('src/**/*.c', 'io/**/*.c', 'mpi/**/*.c'):
        if library(f) == 'cli' or rel(f) in ('src/alloc.c', 'src/common.c'):
            continue  # the seam itself, and lsim_alloc_big under lsim_malloc_big
        n = len(call.findall(strip_strings(strip_comments(open(f, errors='replace').read()))))
        if n:
            found[('raw-alloc', rel(f))] = n


def main():
    found = {}
    check_folders(found)
    check_private_headers(found)
    check_cli_mpi(found)
    check_long_functions(found)
    check_whatif_options(found)
    check_raw_alloc(found)
    bad = 0
    for key in sorted(found):
        n, k = found[key], KNOWN.get(key, 0)
        if n > k:
            print('FAIL %s: %s (%d%s)' % (key[0], key[1], n, ', known %d' % k if k else ''))
            bad = 1
    for key in sorted(KNOWN):
        n = found.get(key, 0)
        if n < KNOWN[key]:
            print('fixed %s: %s (%d, known %d): lower its count in tests/check_arch.py' % (key[0], key[1], n, KNOWN[key]))
    rules = ('folder-library', 'private-header', 'cli-mpi', 'long-function', 'whatif-option', 'raw-alloc')
    for r in rules:
        print('%-15s %d known exception(s), %d occurrence(s)' %
              (r, sum(1 for k in found if k[0] == r), sum(v for k, v in found.items() if k[0] == r)))
    return bad


if __name__ == '__main__':
    sys.exit(main())
