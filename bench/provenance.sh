# bench/provenance.sh: sourced by the bench scripts that write into docs/.
#
#   lsim_commit              the short commit of HEAD, "+ uncommitted changes"
#                            appended when the tree that is built differs from it
#   lsim_doc_allowed DOC     0 when DOC may be written: it is not under docs/,
#                            or the tree is clean, or LSIM_ALLOW_DIRTY=1 (the
#                            figures then say "+ uncommitted changes"); else
#                            prints why on stderr and returns 1
#
# A figure in docs/ names the commit and the command that produced it, so it
# must come from a commit: from a tree with uncommitted changes to what is
# built or measured, nobody could reproduce it. What counts: src, io,
# include, mpi, bench, data, tests/data and the top CMakeLists.txt, tracked
# or not (a new source file changes the build as much as an edited one).

LSIM_PROVENANCE_PATHS="src io include mpi bench data tests/data CMakeLists.txt"
# the repository: the callers live in bench/
LSIM_PROVENANCE_ROOT=$(cd "$(dirname "$0")/.." && pwd)

lsim_tree_dirty() {
    # shellcheck disable=SC2086
    [ -n "$(cd "$LSIM_PROVENANCE_ROOT" && git status --porcelain -- $LSIM_PROVENANCE_PATHS 2>/dev/null)" ]
}

lsim_commit() {
    c=$(git -C "$LSIM_PROVENANCE_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    if lsim_tree_dirty; then c="$c + uncommitted changes"; fi
    echo "$c"
}

lsim_doc_allowed() {
    case "$1" in
    docs/*|*/docs/*) ;;
    *) return 0 ;;
    esac
    lsim_tree_dirty || return 0
    [ "${LSIM_ALLOW_DIRTY:-0}" = 1 ] && return 0
    echo "$(basename "$0"): refusing to write $1 from a tree with uncommitted changes" \
        "(git status -- $LSIM_PROVENANCE_PATHS): commit first, or set LSIM_ALLOW_DIRTY=1" \
        "(the document then says so)" >&2
    return 1
}

# lsim_doc_section DOC SECTION_FILE NAME: SECTION_FILE's text into DOC
# between "<!-- BEGIN NAME: generated, do not edit by hand -->" and
# "<!-- END NAME -->", replacing what was there, or at the end the first time.
lsim_doc_section() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys
doc, sec, name = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
b, e = "<!-- BEGIN %s: generated, do not edit by hand -->" % name, "<!-- END %s -->" % name
s = open(doc).read()
if b in s and e in s:
    s = s[:s.index(b) + len(b)] + "\n\n" + sec + "\n" + s[s.index(e):]
else:
    s += "\n" + b + "\n\n" + sec + "\n" + e + "\n"
open(doc, "w").write(s)
PY
}
