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
from ._pagedb import Error, Writer, Iterator, Field, Tokens  # noqa: F401

__all__ = [n for n in dir(_pagedb) if not n.startswith("_")] + ["open", "Dataset", "Batch", "Tensor"]
__version__ = _pagedb.libversion()


DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64")


class Tensor:
    """The type of a tensor field, for ``ds.add_field``: elements of DTYPE
    (one of ``pagedb.DTYPES``; a NumPy or torch dtype is taken by its name)
    and a SHAPE of 1 to 8 dimensions, each a size or None (variable):
    ``Tensor("float32", (768,))``, ``Tensor("uint16", (None,))``,
    ``Tensor("float32", (None, 80))``.  ``str(t)`` is the declaration
    pagedb stores, ``tensor:float32:768``, which ``add_field`` takes too."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape):
        name = str(dtype).replace("torch.", "")
        if name not in DTYPES:
            name = _np.dtype(dtype).name if name != "bfloat16" else name
        if name not in DTYPES:
            raise ValueError("tensor dtype %r: use one of %s" % (dtype, ", ".join(DTYPES)))
        if isinstance(shape, int) or shape is None:
            shape = (shape,)
        self.dtype, self.shape = name, tuple(None if d is None else int(d) for d in shape)

    def __str__(self):
        return "tensor:%s:%s" % (self.dtype, ",".join("*" if d is None else str(d) for d in self.shape))

    def __repr__(self):
        return "pagedb.Tensor(%r, %r)" % (self.dtype, self.shape)

    def __eq__(self, other):
        return isinstance(other, Tensor) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


def _bfloat16(bits):
    """A bfloat16 value read: the torch tensor over BITS (a read-only uint16
    array over the dataset's bytes), no copy.  NumPy has no bfloat16."""
    try:
        import torch
    except ImportError:
        raise ImportError("this tensor field holds bfloat16, which NumPy cannot represent: install torch"
                          " to read it (it reads as a torch.bfloat16 tensor)") from None
    import warnings
    with warnings.catch_warnings():
        # torch warns that the array is not writable: the map is read-only,
        # and so is the tensor (writing to it would fault, as a view's would).
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(bits.view(_np.int16)).view(torch.bfloat16)


def _from_torch(t):
    """A torch tensor given to a writer: (ndarray, is_bfloat16), the array
    over the tensor's CPU memory (copied there first if it is elsewhere)."""
    import torch
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(_np.uint16), True
    return t.numpy(), False


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

    __slots__ = ("ids", "columns", "present", "text", "tensor", "_gets")

    def __init__(self, ids: Any, columns: Dict[str, Any], present: Dict[str, Any], text: Iterable[str] = (),
                 tensor: Iterable[str] = ()) -> None:
        self.ids, self.columns, self.present = ids, columns, present
        self.text = frozenset(text)      # the TEXT fields to decode (none when raw)
        self.tensor = frozenset(tensor)  # the tensor fields (columns of arrays, see read_packed)
        self._gets = None                # [(name, getter)], made at the first batch[k]

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self):
        return "<pagedb.Batch of %d samples: %s>" % (len(self.ids), ", ".join(self.columns))

    def _getter(self, name):
        """A function of k: field NAME's value of sample k."""
        col, pres = self.columns[name], self.present.get(name)
        if name in self.tensor:
            if type(col) is tuple:       # (padded, shapes): each value cut back to its shape
                padded, shapes = col

                def get(k):
                    return padded[(k,) + tuple(slice(0, int(d)) for d in shapes[k])]
            else:                        # an array (samples, ...) or a list of arrays
                get = col.__getitem__
            return get if pres is None else (lambda k: get(k) if pres[k] else None)
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

    def add_field(self, name: str, type: Any, codec: Optional[str] = None, level: int = 0,  # noqa: A002
                  align: int = 0) -> int:
        """Add field NAME of TYPE ('bytes', 'text', 'int', 'real', or a
        ``pagedb.Tensor`` / its text 'tensor:float32:768') with CODEC (None,
        'lz4', 'lz4hc', 'zstd', 'zstd-dict', optionally ':LEVEL') and ALIGN
        (0: the type's default); returns its number."""
        if isinstance(type, Tensor):
            type = str(type)
        return int(super().add_field(name, type, codec, level, align))

    def read_packed(self, ids: Any, fields: Any = None, raw: bool = False, ragged: str = "list") -> Batch:
        """The samples IDS (fields FIELDS, None: all) read by one call, as a
        ``Batch``: one array per field (BYTES and TEXT values back to back in
        one buffer), copied out of the dataset, so it pins nothing.  RAW:
        ``batch[k]`` gives TEXT as memoryview.  A missing sample raises
        NotFoundError; a missing value is None in ``batch[k]``.

        A tensor field's column is one array of shape (samples, ...) when
        its declared shape is fixed (the one copy out of the dataset, viewed
        with its dtype); with variable dimensions, RAGGED says how: 'list',
        a list of arrays (views of the batch's one buffer), or 'pad', a
        pair (padded, lengths): the values zero-padded to the largest of
        each dimension, and an int64 array (samples, ndim) of their shapes.
        bfloat16 columns are torch tensors."""
        if ragged not in ("list", "pad"):
            raise ValueError("ragged=%r: use 'list' or 'pad'" % (ragged,))
        return self._batch(self._read_packed(ids, fields), fields, raw, ragged)

    def _batch(self, packed, fields, raw, ragged):
        """The Batch of PACKED, (ids, columns, present) as _read_packed and
        Iterator.next_packed give them: tensor columns made arrays."""
        bids, columns, present = packed
        text, tensors = self._batch_kinds(fields, raw)
        for name, fd in tensors.items():
            columns[name] = self._tensor_column(fd, columns[name], present.get(name), ragged)
        return Batch(bids, columns, present, text=text, tensor=tensors)

    def _batch_kinds(self, fields, raw):
        """(the TEXT fields to decode, {name: Field} of the tensor fields) of
        batches of FIELDS: looked up once per schema (a loader asks every
        batch)."""
        key = (len(self.fields), raw, fields if fields is None or isinstance(fields, (str, int)) else tuple(fields))
        cache = self.__dict__.setdefault("_kinds", {})
        kinds = cache.get(key)
        if kinds is None:
            names = [f.name for f in self.fields] if fields is None else \
                [self.fields[f].name if isinstance(f, int) else f
                 for f in ([fields] if isinstance(fields, (str, int)) else fields)]
            tensors = {n: self._field(n) for n in names if self._field(n).type == "tensor"}
            kinds = cache[key] = (frozenset(() if raw else self._text_fields(fields)), tensors)
        return kinds

    def _field(self, name):
        return next(x for x in self.fields if x.name == name)

    def _tensor_column(self, fd, col, present, ragged):
        """Field FD's (data, offsets) column of a batch as arrays (read_packed)."""
        data, off = col
        n = len(off) - 1
        npdt = _np.uint16 if fd.dtype == "bfloat16" else _np.dtype(fd.dtype)
        num = self.fields.index(fd)
        fixed = None not in fd.shape
        if fixed and present is None:
            out = data[: int(off[n])].view(npdt).reshape((n,) + fd.shape)
            return _bfloat16(out) if fd.dtype == "bfloat16" else out
        arrs = []                        # NumPy arrays (bfloat16: their uint16 bits)
        for k in range(n):
            if present is not None and not present[k]:
                arrs.append(None)
                continue
            raw = data[int(off[k]): int(off[k + 1])]
            shape, nb = self._tensor_shape(num, raw)
            arrs.append(raw[:nb].view(npdt).reshape(shape))
        bf = _bfloat16 if fd.dtype == "bfloat16" else (lambda a: a)
        if ragged == "list" or n == 0:
            return [None if a is None else bf(a) for a in arrs]
        shapes = _np.array([a.shape if a is not None else (0,) * len(fd.shape) for a in arrs], dtype=_np.int64)
        pad = _np.zeros((n,) + tuple(int(x) for x in shapes.max(axis=0)), dtype=npdt)
        for k, a in enumerate(arrs):
            if a is not None:
                pad[(k,) + tuple(slice(0, d) for d in a.shape)] = a
        return bf(pad), shapes

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

    def parts(self) -> List[Dict[str, Any]]:
        """The parts the dataset is made of (``commit_parts``), in order: a
        list of dicts with the columns of table part (doc/format.md, "Parts"):
        part, uuid, uri, name, first_page, pages, data_off, data_end, samples,
        id_min, id_max, seal, validator, committed.  [] for a dataset of one
        file."""
        if not self.sql("SELECT 1 FROM meta WHERE key = 'parts'"):
            return []
        cols = ("part", "uuid", "uri", "name", "first_page", "pages", "data_off", "data_end", "samples",
                "id_min", "id_max", "seal", "validator", "committed")
        rows = self.sql("SELECT %s FROM part ORDER BY part" % ", ".join(cols))
        return [dict(zip(cols, r)) for r in rows]

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
         page_size: int = 0, busy_timeout: Optional[int] = None) -> Dataset:
    """Open the dataset whose data file is PATH (its catalog is PATH-catalog).

    mode: 'r' read-only, 'w' read-write, 'c' read-write, created if missing.
    vfs: a registered VFS name ('posix', 'io_uring', 'direct'), None: default.
    read_mode: 'mmap' -- BYTES values are zero-copy memoryviews of the file's
    map (values of compressed fields are copies) -- or 'copy' (pread into a
    buffer of each value's own).  verify: check every value's checksum.
    page_size: for a new dataset, before its first field.
    busy_timeout: milliseconds (0..86400000) a read-write open waits for the
    write lock another handle holds (committers of parts taking turns), then
    BusyError; None leaves the setting as it is.  The setting is the
    process's (PAGEDB_CONFIG_BUSY_TIMEOUT): it stays for later opens, in
    every thread, until set again (-1: the environment's PAGEDB_BUSY_TIMEOUT,
    else 0).
    """
    if busy_timeout is not None:
        _pagedb.set_busy_timeout(busy_timeout)
    return Dataset(path, mode, vfs, read_mode, verify, page_size)
