"""pagedb: datasets of variable-length samples, read by id in O(1).

The engine is the C library (src/pagedb.h); this package is its Python
binding: the C extension module ``_pagedb`` (python/*.c), re-exported here,
plus a little pure Python on top.  ``doc/python.md`` is the manual.

    import pagedb
    with pagedb.open("cats.pagedb", "c") as ds:
        ds.add_field("image", "bytes")
        ds.add_field("label", "int")
        with ds.writer() as w:
            w.append({"image": jpeg_bytes, "label": 3})
        ds.commit()
        ds[0]          # {'image': <memory ...>, 'label': 3}

``pagedb.torch`` (importable when torch is installed) has the PyTorch
datasets.
"""
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as _np
import numpy.typing as _npt

import importlib.util as _ilu

if _ilu.find_spec(__name__ + "._pagedb") is not None:
    # pip install (setup.py): the extension is inside the package.
    from . import _pagedb
else:
    # make install (Makefile.am) and the build tree: _pagedb beside the
    # package, known by the name of the pip layout from here on.
    import sys as _sys
    import _pagedb  # type: ignore[no-redef]
    _sys.modules[__name__ + "._pagedb"] = _pagedb
from ._pagedb import *  # noqa: F401,F403  (the constants, Error and its subclasses, Field)
from ._pagedb import Error, Writer, Iterator, Field  # noqa: F401

__all__ = [n for n in dir(_pagedb) if not n.startswith("_")] + ["open", "Dataset", "Batch"]
__version__ = _pagedb.libversion()


class Batch:
    """Many samples read by one call (``Dataset.read_packed``,
    ``Iterator.next_packed``): a few arrays, not an object per sample.

    ``ids``: int64 array.  ``columns[name]``: for an INT or REAL field an
    int64 or float64 array, one value per sample; for BYTES and TEXT a pair
    ``(data, offsets)``: the values back to back in one uint8 array, sample
    k's bytes at ``data[offsets[k]:offsets[k+1]]``.  ``present[name]`` (only
    for a field some sample lacks): a bool array, False where the value is
    missing.  ``batch[k]`` is sample k as ``ds[i]`` gives it (BYTES as a
    memoryview of the batch's buffer, TEXT as str unless RAW, missing values
    None); ``batch.values(name)`` every sample's value of one field."""

    __slots__ = ("ids", "columns", "present", "text", "_gets")

    def __init__(self, ids: Any, columns: Dict[str, Any], present: Dict[str, Any], text: Iterable[str] = ()) -> None:
        self.ids, self.columns, self.present = ids, columns, present
        self.text = frozenset(text)      # the TEXT fields to decode (none when raw)
        self._gets = None                # [(name, getter)], made at the first batch[k]

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self):
        return "<pagedb.Batch of %d samples: %s>" % (len(self.ids), ", ".join(self.columns))

    def _getter(self, name):
        """A function of k: field NAME's value of sample k."""
        col, pres = self.columns[name], self.present.get(name)
        if type(col) is tuple:
            view, off = memoryview(col[0]), col[1].tolist()
            if name in self.text:
                def get(k):
                    return str(view[off[k]:off[k + 1]], "utf-8")
            else:
                def get(k):
                    return view[off[k]:off[k + 1]]
        else:
            vals = col.tolist()
            get = vals.__getitem__
        if pres is None:
            return get
        return lambda k: get(k) if pres[k] else None

    def __getitem__(self, k: int) -> Dict[str, Any]:
        n = len(self.ids)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("sample %d of a batch of %d" % (k, n))
        if self._gets is None:
            self._gets = [(name, self._getter(name)) for name in self.columns]
        return {name: g(k) for name, g in self._gets}

    def __iter__(self) -> "Iterable[Dict[str, Any]]":
        """The samples, as batch[k] gives them."""
        gets = [(name, self._getter(name)) for name in self.columns]
        for k in range(len(self.ids)):
            yield {name: g(k) for name, g in gets}

    def values(self, name: str) -> List[Any]:
        """Every sample's value of field NAME, as a list (see batch[k])."""
        return list(map(self._getter(name), range(len(self.ids))))


class Dataset(_pagedb.Dataset):
    """A pagedb dataset: ``Dataset(path, mode='r', vfs=None, read_mode='mmap',
    verify=False, page_size=0)``; see ``pagedb.open``."""

    def __repr__(self):
        state = "closed" if self.closed else "%d samples" % len(self)
        return "<pagedb.Dataset %r (%s)>" % (self.path, state)

    def __iter__(self) -> Iterator:  # type: ignore[override]
        """The samples (dicts) in the order their bytes lie in the file."""
        return self.iterate(self.order("sequential"))

    def read_packed(self, ids: Any, fields: Any = None, raw: bool = False) -> Batch:
        """The samples IDS (fields FIELDS, None: all) read by one call, as a
        ``Batch``: one array per field (BYTES and TEXT values back to back in
        one buffer), copied out of the dataset, so it pins nothing.  RAW:
        ``batch[k]`` gives TEXT as memoryview.  A missing sample raises
        NotFoundError; a missing value is None in ``batch[k]``."""
        return Batch(*self._read_packed(ids, fields), text=() if raw else self._text_fields(fields))

    def _text_fields(self, fields):
        if fields is None:
            fields = range(len(self.fields))
        elif isinstance(fields, (str, int)):
            fields = [fields]
        out = []
        for f in fields:
            fd = self.fields[f] if isinstance(f, int) else next((x for x in self.fields if x.name == f), None)
            if fd is not None and fd.type == "text":
                out.append(fd.name)
        return out

    def ids(self) -> "_npt.NDArray[_np.int64]":
        """Every committed id, ascending, as an int64 array."""
        return _np.sort(self.order("sequential"))

    def sql_ids(self, sql: str) -> "_npt.NDArray[_np.int64]":
        """The first column of SQL's rows as an int64 array of ids, e.g.
        ``ds.sql_ids("SELECT id FROM sample WHERE label < 5")``."""
        rows = self.sql(sql)
        out = _np.empty(len(rows), dtype=_np.int64)
        for i, r in enumerate(rows):
            if not isinstance(r[0], int):
                raise MismatchError("sql_ids: row %d's first column is %r, not an id" % (i, r[0]))  # noqa: F405
            out[i] = r[0]
        return out

    def order(self, kind: str = "random", seed: int = 0, epoch: int = 0, rank: int = 0, world: int = 1,  # type: ignore[override]
              drop_last: bool = False, ids: Any = None) -> "_npt.NDArray[_np.int64]":
        """The ids rank RANK of WORLD reads in epoch EPOCH (pagedb_order), as an
        int64 array.  With IDS (a subset, e.g. from sql_ids), the global order
        is restricted to them -- keeping pagedb's order, so 'quasi_random'
        keeps its page locality -- and split among the ranks as pagedb does:
        WORLD contiguous equal parts, the last padded from the start (or, with
        drop_last, cut to a multiple of WORLD)."""
        if ids is None:
            return super().order(kind, seed, epoch, rank, world, drop_last)
        if world < 1 or not 0 <= rank < world:
            raise MisuseError("order: rank %d of world %d" % (rank, world))  # noqa: F405
        full = super().order(kind, seed, epoch, 0, 1, False)
        sub = _np.asarray(ids, dtype=_np.int64)
        g = full[_np.isin(full, sub)]
        if len(g) != len(_np.unique(sub)):
            missing = _np.setdiff1d(sub, full)
            raise NotFoundError("order: %d of the ids given are not committed samples (the first: %d)"  # noqa: F405
                                % (len(missing), missing[0]))
        n = len(g)
        if drop_last:
            per = n // world
        else:
            per = -(-n // world)
        if n == 0 or per == 0:
            return _np.empty(0, dtype=_np.int64)
        pos = (_np.arange(per, dtype=_np.int64) + rank * per) % n
        return g[pos]


def open(path: str, mode: str = "r", vfs: Optional[str] = None, read_mode: str = "mmap", verify: bool = False,  # noqa: A001
         page_size: int = 0) -> Dataset:
    """Open the dataset whose data file is PATH (its catalog is PATH-catalog).

    mode: 'r' read-only, 'w' read-write, 'c' read-write, created if missing.
    vfs: a registered VFS name ('posix', 'io_uring', 'direct'), None: default.
    read_mode: 'mmap' -- BYTES values are zero-copy memoryviews of the file's
    map (values of compressed fields are copies) -- or 'copy' (pread into a
    buffer of each value's own).  verify: check every value's checksum.
    page_size: for a new dataset, before its first field.
    """
    return Dataset(path, mode, vfs, read_mode, verify, page_size)
