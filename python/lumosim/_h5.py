"""Checked reading of lumosim HDF5 files (internal).

Every failure is a LumosimFileError whose message is one line naming the file
and, where there is one, the dataset: the same style as the C readers
(docs/hdf5-schema.md, "Validation on read").
"""

import os

import numpy as np

from . import _schema

try:  # h5py is required; the import error is reported by lumosim.load
    import h5py
except ImportError:  # pragma: no cover - checked in load()
    h5py = None


class LumosimFileError(ValueError):
    """A file lumosim's Python reader cannot read.

    ``str(e)`` is one line, ``"PATH: what is wrong"``; ``e.path`` is the
    file and ``e.reason`` the part after the colon.
    """

    def __init__(self, path, reason):
        self.path = str(path)
        self.reason = reason
        super().__init__("%s: %s" % (self.path, reason))


def text(v):
    """An HDF5 string (bytes, numpy bytes, str, 0-d array) as str."""
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v).decode("utf-8", "replace")
    return str(v)


def texts(a):
    """A 1-D array of HDF5 strings as a list of str."""
    return [text(x) for x in np.asarray(a).reshape(-1)]


class Reader:
    """An open lumosim file with checked accessors. Use as a context manager."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if h5py is None:
            raise LumosimFileError(self.path, "cannot read it: the Python package h5py is not installed")
        if not os.path.exists(self.path):
            raise LumosimFileError(self.path, "no such file")
        if os.path.isdir(self.path):
            raise LumosimFileError(self.path, "is a directory, not a lumosim file")
        try:
            ok = h5py.is_hdf5(self.path)
        except OSError as e:
            raise LumosimFileError(self.path, "cannot open: %s" % (e.strerror or e))
        if not ok:
            raise LumosimFileError(self.path, "not an HDF5 file or truncated")
        try:
            self.f = h5py.File(self.path, "r")
        except OSError as e:
            raise LumosimFileError(self.path, "not an HDF5 file or truncated (%s)" % _short(e))
        try:
            self.kind = self._root_kind()
            self.schema_version = self._root_version()
        except BaseException as e:
            self.f.close()
            self._translate(e)
            raise

    # -- context manager ---------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, typ, e, tb):
        self.f.close()
        if e is not None:
            self._translate(e)
        return False

    def _translate(self, e):
        """h5py's errors on damaged metadata (checksums) that the checked
        accessors did not see first become one LumosimFileError."""
        if isinstance(e, (OSError, RuntimeError, KeyError)) and not isinstance(e, LumosimFileError):
            raise LumosimFileError(self.path, "cannot read it: the file is truncated or corrupt (%s)"
                                   % _short(e)) from None

    def fail(self, reason):
        raise LumosimFileError(self.path, reason)

    def check(self, where, a, lo, hi, row="GPU", unknown=None, unit=""):
        """Every value of ``a`` (read from ``where``, one per row) within
        ``lo`` .. ``hi`` (each may be an array, one bound per row), or equal
        to ``unknown``: the ranges of the C readers (_schema.py), so that a
        value they refuse is refused here too, never printed."""
        a = np.asarray(a, dtype=np.int64)
        ok = (a >= lo) & (a <= hi)
        if unknown is not None:
            ok |= a == unknown
        bad = np.nonzero(~ok)[0]
        if bad.size:
            i = int(bad[0])
            lo_i = int(np.broadcast_to(lo, a.shape)[i])
            hi_i = int(np.broadcast_to(hi, a.shape)[i])
            self.fail("%s of %s %d is %d%s (valid: %s%d .. %d%s)"
                      % (where, row, i, int(a[i]), unit, "" if unknown is None else "%d or " % unknown, lo_i, hi_i,
                         unit))
        return a

    def _missing_or_corrupt(self, what, where, e):
        msg = str(e)
        if "doesn't exist" in msg or "does not exist" in msg or "not found" in msg:
            self.fail("missing %s %s" % (what, where))
        self.fail("cannot open %s: the file is truncated or corrupt (%s)" % (where, _short(e)))

    # -- root --------------------------------------------------------------
    def _root_kind(self):
        if "kind" not in self.f.attrs:
            self.fail("not a lumosim file (no root attribute 'kind')")
        kind = text(self.f.attrs["kind"])
        if kind not in (_schema.KIND_STORE, _schema.KIND_RESULTS, _schema.KIND_SEARCH):
            self.fail("not a lumosim file (root attribute kind is %r)" % kind)
        return kind

    def _root_version(self):
        if "schema_version" not in self.f.attrs:
            self.fail("not a lumosim file (no root attribute 'schema_version')")
        v = self.f.attrs["schema_version"]
        try:
            v = int(np.asarray(v).reshape(-1)[0])
        except (TypeError, ValueError, IndexError):
            self.fail("root attribute schema_version is not an integer")
        if v not in _schema.SCHEMA_VERSIONS:
            self.fail("schema version %d not supported (this lumosim reads %s)"
                      % (v, ", ".join(str(x) for x in _schema.SCHEMA_VERSIONS)))
        return v

    # -- attributes --------------------------------------------------------
    def attrs(self, where):
        """All attributes of a group as a dict of plain Python values."""
        obj = self.group(where)
        out = {}
        for k in obj.attrs:
            try:
                v = obj.attrs[k]
            except OSError as e:
                self.fail("cannot read attribute %s of %s (%s)" % (k, where, _short(e)))
            if isinstance(v, np.ndarray) and v.ndim > 0:
                out[k] = texts(v) if v.dtype.kind in "SOU" else v.tolist()
            elif isinstance(v, (bytes, np.bytes_, str)) or (isinstance(v, np.ndarray) and v.dtype.kind in "SOU"):
                out[k] = text(v)
            elif isinstance(v, np.generic):
                out[k] = v.item()
            else:
                out[k] = v
        return out

    # -- groups and datasets -----------------------------------------------
    def has(self, where):
        try:
            return where in self.f
        except (OSError, RuntimeError, KeyError):
            return False

    def group(self, where):
        try:
            g = self.f[where]
        except KeyError as e:
            self._missing_or_corrupt("group", where, e)
        except OSError as e:
            self.fail("cannot open %s: the file is truncated or corrupt (%s)" % (where, _short(e)))
        if not isinstance(g, h5py.Group):
            self.fail("%s is not a group" % where)
        return g

    def dataset(self, where):
        try:
            d = self.f[where]
        except KeyError as e:
            self._missing_or_corrupt("dataset", where, e)
        except OSError as e:
            self.fail("cannot open %s: the file is truncated or corrupt (%s)" % (where, _short(e)))
        if not isinstance(d, h5py.Dataset):
            self.fail("%s is not a dataset" % where)
        return d

    def read(self, where, start=None, stop=None):
        d = self.dataset(where)
        try:
            if start is None:
                return d[()]
            return d[start:stop]
        except (OSError, RuntimeError) as e:
            self.fail("cannot read %s: the file is truncated or corrupt (checksum or decompression failure: %s)"
                      % (where, _short(e)))

    def col(self, where, rows=None, kinds="iu", start=None, stop=None):
        """A 1-D column; ``rows``: the length it must have; ``kinds``: the
        numpy dtype kinds allowed ('i' int, 'u' unsigned, 'f' float, 'S' string)."""
        d = self.dataset(where)
        if d.ndim != 1:
            self.fail("%s has rank %d, expected 1" % (where, d.ndim))
        if d.dtype.kind not in kinds:
            self.fail("%s has type %s, expected %s" % (where, d.dtype, _kinds(kinds)))
        if rows is not None and d.shape[0] != rows:
            self.fail("%s has %d rows, expected %d (from the offsets and counts)" % (where, d.shape[0], rows))
        return self.read(where, start, stop)

    def col2(self, where, rows, width=None, kinds="iu"):
        """A 2-D column (``rows x K``) and its column names (attribute ``columns``)."""
        d = self.dataset(where)
        if d.ndim != 2:
            self.fail("%s has rank %d, expected 2" % (where, d.ndim))
        if d.dtype.kind not in kinds:
            self.fail("%s has type %s, expected %s" % (where, d.dtype, _kinds(kinds)))
        if d.shape[0] != rows:
            self.fail("%s has %d rows, expected %d" % (where, d.shape[0], rows))
        if width is not None and d.shape[1] != width:
            self.fail("%s has %d columns, expected %d" % (where, d.shape[1], width))
        names = None
        if "columns" in d.attrs:
            names = texts(d.attrs["columns"])
            if len(names) != d.shape[1]:
                self.fail("%s: attribute columns has %d names for %d columns" % (where, len(names), d.shape[1]))
        return self.read(where), names

    def extents(self, group, prefix, rows, table=None, table_rows=None):
        """Checked ``PREFIX_offset``/``PREFIX_count`` of a per-GPU table:
        offsets are the prefix sums of the counts. Returns (offsets, counts)
        as int64 arrays; ``table_rows``: the length of the flat table, when
        known, which must equal the sum of the counts."""
        off = self.col("%s/%s_offset" % (group, prefix), rows, "u").astype(np.int64)
        cnt = self.col("%s/%s_count" % (group, prefix), rows, "u").astype(np.int64)
        want = np.concatenate([[0], np.cumsum(cnt)[:-1]]) if rows else off
        bad = np.nonzero(off != want)[0]
        if bad.size:
            i = int(bad[0])
            self.fail("%s/%s_offset of GPU %d is %d, expected %d (offsets are the prefix sums of the counts)"
                      % (group, prefix, i, off[i], want[i]))
        if table is not None and table_rows is not None and int(cnt.sum()) != table_rows:
            self.fail("%s has %d rows, expected %d (from the offsets and counts)" % (table, table_rows, int(cnt.sum())))
        return off, cnt

    def extents_shared(self, group, prefix, rows, table=None, table_rows=None):
        """Like ``extents``, for a table whose rows a GPU may share with an
        earlier GPU (docs/hdf5-schema.md, "Shared structure"): its offset is
        then that GPU's, with the same count, and it adds no rows."""
        off = self.col("%s/%s_offset" % (group, prefix), rows, "u").astype(np.int64)
        cnt = self.col("%s/%s_count" % (group, prefix), rows, "u").astype(np.int64)
        own = {}
        acc = 0
        for i in range(rows):
            if off[i] != acc and cnt[i] and own.get(int(off[i])) == int(cnt[i]):
                continue
            if off[i] != acc:
                self.fail("%s/%s_offset of GPU %d is %d, expected %d (the prefix sum of the counts, or an earlier "
                          "GPU's rows)" % (group, prefix, i, off[i], acc))
            own[int(off[i])] = int(cnt[i])
            acc += int(cnt[i])
        if table is not None and table_rows is not None and acc != table_rows:
            self.fail("%s has %d rows, expected %d (from the offsets and counts)" % (table, table_rows, acc))
        return off, cnt

    def enum_names(self, where, fallback):
        """The names of the values 0..N-1 of an enum column: its attribute
        ``enum_names`` when the file has one (lumosim writes it since the
        attribute exists), else ``fallback`` (the package's table,
        _schema.py): files written before still read."""
        d = self.dataset(where)
        if "enum_names" not in d.attrs:
            return tuple(fallback)
        try:
            names = tuple(texts(d.attrs["enum_names"]))
        except (OSError, TypeError, ValueError) as e:
            self.fail("cannot read attribute enum_names of %s (%s)" % (where, _short(e)))
        if not names or len(set(names)) != len(names) or any(not n for n in names):
            self.fail("%s: attribute enum_names is empty, repeats a name or has an empty one" % where)
        return names

    def units(self, where, expected):
        """Check a column's ``units`` attribute, when it has one, against
        the units this package reads it in (the suffix it gives the column,
        e.g. "ns" for ``*_ns``); a file without the attribute is taken as
        documented. Returns the units."""
        d = self.dataset(where)
        if "units" not in d.attrs:
            return expected
        u = text(d.attrs["units"])
        if u != expected:
            self.fail("%s has units %r, this package reads it as %r" % (where, u, expected))
        return u

    def exists(self, where):
        """Whether the file has an object at ``where`` (optional datasets)."""
        return where in self.f

    def nrows(self, where):
        d = self.dataset(where)
        if d.ndim < 1:
            self.fail("%s is a scalar, expected a column" % where)
        return int(d.shape[0])


def _short(e):
    s = str(e).strip().splitlines()
    return s[0] if s else type(e).__name__


def _kinds(kinds):
    names = {"i": "integer", "u": "unsigned integer", "f": "float", "S": "string"}
    return " or ".join(names.get(k, k) for k in kinds)


def strings_like(r, gpus_group, ngpus, scnt):
    """``/gpus/strings_like`` checked (docs/hdf5-schema.md, "Shared
    strings"): per GPU -1 (its string table is its own rows) or an earlier
    GPU with a table of its own whose strings its rows replace in places.
    Absent (stores written before it): all -1."""
    name = "%s/strings_like" % gpus_group
    if not r.exists(name):
        return np.full(ngpus, -1, dtype=np.int64)
    like = r.col(name, ngpus, "i").astype(np.int64)
    for g in range(ngpus):
        t = int(like[g])
        if t != -1 and (t < 0 or t >= g or like[t] != -1 or scnt[g] > scnt[t]):
            r.fail("%s of GPU %d is %d: not -1 nor an earlier GPU with a string table of its own and at least as "
                   "many strings" % (name, g, t))
    return like


def _one_table(r, group, g, b, offs, base, n, cb, cn):
    out = []
    for k in range(n):
        o = int(offs[base + k])
        if o >= cn:
            r.fail("%s/strings/offset of GPU %d: string %d starts at byte %d, the GPU has %d" % (group, g, k, o, cn))
        end = b.find(b"\0", cb + o, cb + cn)
        if end < 0:
            r.fail("%s/strings/chars of GPU %d: string %d is not NUL-terminated" % (group, g, k))
        out.append(b[cb + o:end].decode("utf-8", "replace"))
    return out


def apply_patches(r, group, g, table, rows, ids):
    """GPU g's string table from the table it shares and its own rows
    (the strings they replace: ``ids``, ascending, inside the table)."""
    out = list(table)
    last = -1
    for k, (i, s) in enumerate(zip(ids, rows)):
        i = int(i)
        if i <= last or i >= len(out):
            r.fail("%s/strings/id of GPU %d: row %d replaces string %d, not one of the %d strings of the table it "
                   "shares, after the previous row's" % (group, g, k, i, len(out)))
        out[i] = s
        last = i
    if len(set(out)) != len(out):
        r.fail("%s/strings of GPU %d: a string repeats another" % (group, g))
    return out


def decode_strings(r, group, gpus_group, ngpus):
    """Every GPU's string table of a graph (``group`` = "" or
    "/runs/NAME/graph"): returns (flat list of str, int64 array of where
    each GPU's table starts in it). String ``k`` of GPU ``g`` is
    ``flat[start[g] + k]``. A GPU whose strings are another's (shared
    strings) gets the whole table, its own rows put in place."""
    nstr = r.nrows("%s/strings/offset" % group)
    nchar = r.nrows("%s/strings/chars" % group)
    soff, scnt = r.extents(gpus_group, "string", ngpus, "%s/strings/offset" % group, nstr)
    coff, ccnt = r.extents(gpus_group, "char", ngpus, "%s/strings/chars" % group, nchar)
    like = strings_like(r, gpus_group, ngpus, scnt)
    offs = r.col("%s/strings/offset" % group, nstr, "u").astype(np.int64)
    chars = r.col("%s/strings/chars" % group, nchar, "u")
    ids = r.col("%s/strings/id" % group, nstr, "u").astype(np.int64) if (like >= 0).any() else None
    b = chars.astype(np.uint8).tobytes()
    out = []
    start = np.zeros(ngpus, dtype=np.int64)
    own = {}
    for g in range(ngpus):
        rows = _one_table(r, group, g, b, offs, int(soff[g]), int(scnt[g]), int(coff[g]), int(ccnt[g]))
        start[g] = len(out)
        if like[g] >= 0:
            t = int(like[g])
            sid = ids[int(soff[g]):int(soff[g]) + int(scnt[g])]
            rows = apply_patches(r, group, g, out[own[t]:own[t] + int(scnt[t])], rows, sid)
        else:
            own[g] = len(out)
        out.extend(rows)
    return out, start
