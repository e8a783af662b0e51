"""pagedb.torch: PyTorch datasets over a pagedb dataset.

    from pagedb.torch import IterableDataset, DataLoader
    ds = IterableDataset("fmnist.pagedb", kind="random", seed=0, transform=decode)
    loader = DataLoader(ds, batch_size=64, num_workers=2)
    for epoch in range(3):
        ds.set_epoch(epoch)
        for batch in loader: ...
    state = ds.state_dict()          # mid-epoch: saved with the checkpoint
    ds.load_state_dict(state)        # in the resumed job: reads what was not read

* ``MapDataset``: ``ds[i]`` is the i-th id's sample (of all ids, or of a
  subset), for torch's samplers.
* ``IterableDataset``: walks ``pagedb_order`` for the epoch (``set_epoch``),
  this rank's part of it -- rank and world from ``torch.distributed`` when it
  is initialised, or given -- split again among the DataLoader's workers,
  reading ahead through ``Dataset.iterate`` (``pagedb_reader_prefetch``).
* ``collate``: torch's ``default_collate`` that also takes variable-shape
  tensors (a list, or a padded tensor with shapes) and missing values.

Each process opens the dataset itself (a handle cannot be pickled for
spawn; a forked worker could read through the parent's, but one code path
serves both, and the worker's own handle needs no lock shared with the
parent's threads): the objects here carry the path and the options, and
open lazily in whichever process iterates them.

Workers and order.  The DataLoader takes batches from its workers in turn
(worker 0, 1, ..., 0, 1, ...).  Worker w therefore reads the chunks k of
``batch_size`` consecutive entries of the order with k % num_workers == w,
so the batches come out of the DataLoader in exactly the order's order,
whatever the number of workers.  The position -- how many entries of this
rank's order the consumer has received -- is counted in the main process by
``pagedb.torch.DataLoader`` (a torch DataLoader that also tells the dataset
its batch size): that is what ``state_dict`` saves and ``load_state_dict``
resumes from.
"""
import functools
import math
import mmap as _mmap
import multiprocessing as _mp
import multiprocessing.context as _mpctx
import multiprocessing.reduction as _mpred
import os
import tempfile
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

try:
    import torch
except ImportError as _e:  # torch is the optional extra pagedb[torch]
    raise ImportError("pagedb.torch needs PyTorch, which is not installed: pip install 'pagedb[torch]'"
                      " (or pip install torch; Debian: python3-torch); import pagedb works without it") from _e
import torch.utils.data as _tud
from torch.multiprocessing.reductions import StorageWeakRef as _StorageWeakRef

import pagedb as _pagedb

__all__ = ["MapDataset", "IterableDataset", "DataLoader", "default_transform", "collate_packed", "collate"]


def _own(v: Any) -> Any:
    """V as default_transform leaves it: a memoryview copied into a uint8
    array, a tensor field's read-only NumPy array (a view of the map) into a
    torch tensor of its own; anything else as it is."""
    if isinstance(v, memoryview):
        return np.array(v, dtype=np.uint8)
    if isinstance(v, np.ndarray) and not v.flags.writeable:
        return torch.from_numpy(v.copy())
    if isinstance(v, torch.Tensor) and v.dtype == torch.bfloat16:
        return v.clone()
    return v


def default_transform(sample: Dict[str, Any]) -> Dict[str, Any]:
    """A sample with its memoryviews copied into uint8 NumPy arrays and its
    tensors (NumPy views of the map) into torch tensors, which can cross
    from a worker to the main process (a memoryview cannot be pickled) and
    be collated."""
    return {k: _own(v) for k, v in sample.items()}


def collate_packed(batch: Any) -> Dict[str, Any]:
    """What ``default_collate([default_transform(s) for s in batch])`` makes
    of a ``pagedb.Batch``, from its arrays directly: an INT or REAL field a
    tensor of the batch's values, a TEXT field a list of str, a BYTES field
    a uint8 tensor of shape (samples, length) when every value has the same
    length -- else a list of uint8 tensors, views of one buffer.  Each
    tensor is one buffer, so the batch crosses from a worker to the main
    process in a few shared-memory segments.  None when a value is missing
    (the caller then collates sample by sample)."""
    if batch.present:
        return None
    out = {}
    for name, col in batch.columns.items():
        if name in batch.tensor:
            out[name] = _tensor_col(col)
        elif type(col) is not tuple:
            out[name] = torch.from_numpy(col)
        elif name in batch.text:
            out[name] = batch.values(name)
        else:
            data, off = col
            t = torch.from_numpy(data)
            n = len(off) - 1
            lens = np.diff(off)
            if n and (lens == lens[0]).all():
                out[name] = t.view(n, int(lens[0])) if lens[0] else torch.empty((n, 0), dtype=torch.uint8)
            else:
                out[name] = list(torch.split(t, lens.tolist()))
    return out


def collate(batch: Sequence[Any], ragged: str = "list") -> Any:
    """torch's ``default_collate`` that takes tensors of different shapes
    (a variable-shape tensor field's values) too: where the values of one
    key (or position) are tensors or NumPy arrays whose shapes differ, RAGGED
    says what they become -- 'list', the list of them as tensors; 'pad', the
    pair (padded, shapes) that ``read_packed(ragged='pad')`` gives: one
    zero-padded tensor (samples, *largest) and an int64 tensor (samples,
    ndim) of their shapes.  Where some are None (a missing value) and the
    others tensors: the list, None kept.  Everything else is
    ``default_collate``'s.
    ``pagedb.torch.DataLoader`` collates with it when given no collate_fn
    (RAGGED: the dataset's); with torch's own DataLoader give
    ``collate_fn=functools.partial(pagedb.torch.collate, ragged='pad')``."""
    if ragged not in ("list", "pad"):
        raise ValueError("ragged=%r: use 'list' or 'pad'" % (ragged,))
    elem = batch[0] if len(batch) else None
    if type(elem) is dict:
        return {k: collate([d[k] for d in batch], ragged) for k in elem}
    arrays = (torch.Tensor, np.ndarray)
    if any(v is None for v in batch) and any(isinstance(v, arrays) for v in batch) and \
            all(v is None or isinstance(v, arrays) for v in batch):
        # A value missing (None): the list, as read_packed gives it.
        return [v if v is None or isinstance(v, torch.Tensor) else torch.as_tensor(v) for v in batch]
    if isinstance(elem, arrays) and all(isinstance(v, arrays) for v in batch):
        shapes = [tuple(v.shape) for v in batch]
        if any(sh != shapes[0] for sh in shapes):
            ts = [v if isinstance(v, torch.Tensor) else torch.as_tensor(v) for v in batch]
            if ragged == "list" or len({len(sh) for sh in shapes}) != 1:
                return ts
            big = tuple(max(d) for d in zip(*shapes))
            pad = ts[0].new_zeros((len(ts),) + big)
            for k, t in enumerate(ts):
                pad[(k,) + tuple(slice(0, d) for d in t.shape)] = t
            return pad, torch.tensor(shapes, dtype=torch.int64)
    return _tud.default_collate(batch)


def _collate_fn(ragged):
    """The collate function pagedb.torch uses when given none."""
    return _tud.default_collate if ragged is None else functools.partial(collate, ragged=ragged)


def _tensor_col(col):
    """A tensor field's column of a Batch as torch tensors: one (samples, ...)
    tensor over the batch's buffer, a list of them (ragged='list'), or the
    pair (padded, shapes) (ragged='pad')."""
    def t(a):
        return a if isinstance(a, torch.Tensor) else torch.from_numpy(a)
    if isinstance(col, list):
        return [t(a) for a in col]
    if type(col) is tuple:
        return t(col[0]), torch.from_numpy(col[1])
    return t(col)


class _Opener:
    """The path and open options; the open Dataset of the current process."""

    def __init__(self, path, open_kw):
        self.path = os.fspath(path)
        self.open_kw = dict(open_kw)
        self._ds = None
        self._pid = None

    @property
    def ds(self):
        if self._ds is None or self._pid != os.getpid():
            self._ds = _pagedb.open(self.path, "r", **self.open_kw)
            self._pid = os.getpid()
        return self._ds

    def __getstate__(self):
        return {"path": self.path, "open_kw": self.open_kw, "_ds": None, "_pid": None}

    def __setstate__(self, state):
        self.__dict__.update(state)


class MapDataset(_tud.Dataset):
    """``ds[i]``: the sample of the i-th id (ascending ids, or the IDS given,
    e.g. ``pagedb.open(p).sql_ids(...)``), with FIELDS (None: all), passed
    through TRANSFORM (default: ``default_transform``).  RAGGED ('list' or
    'pad'): what ``pagedb.torch.DataLoader`` makes of a batch's
    variable-shape tensors (see ``collate``)."""

    def __init__(self, path: str, ids: Any = None, fields: Optional[Sequence[Any]] = None,
                 transform: Optional[Callable[[Dict[str, Any]], Any]] = default_transform,
                 with_ids: bool = False, ragged: str = "list", **open_kw: Any) -> None:
        if ragged not in ("list", "pad"):
            raise ValueError("ragged=%r: use 'list' or 'pad'" % (ragged,))
        self._open = _Opener(path, open_kw)
        self.ids = np.asarray(self._open.ds.ids() if ids is None else ids, dtype=np.int64)
        self.fields = fields
        self.transform = transform
        self.with_ids = with_ids
        self.ragged = ragged     # how pagedb.torch.DataLoader collates variable shapes (collate)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        """The sample; with WITH_IDS its dict has its id too, under "id" (a
        name no field can have)."""
        sid = int(self.ids[i])
        sample = self._open.ds.get(sid, self.fields)
        if self.with_ids:
            sample["id"] = sid
        return self.transform(sample) if self.transform else sample


def _dist_rank_world():
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


class IterableDataset(_tud.IterableDataset):
    """The samples of one epoch's order, this rank's part, in order.

    kind, seed, drop_last: as ``Dataset.order``; ids: a subset to read (its
    order follows pagedb's); fields: the fields to read (None: all);
    transform: applied to each sample dict in the worker (default
    ``default_transform``; give ``None`` to get the zero-copy memoryviews, in
    the process that reads them); window: read-ahead bytes; raw: TEXT as
    memoryview; rank, world: default from torch.distributed, else 0 of 1;
    batch_size: the chunk each worker reads at a time (``DataLoader`` sets it
    to its own); batch_transform: instead of TRANSFORM, a function of a whole
    ``pagedb.Batch`` (every value of a batch read by one call, a few arrays),
    whose result is the DataLoader's batch; open_kw: for ``pagedb.open`` (vfs,
    read_mode, verify).

    Under ``pagedb.torch.DataLoader`` each worker makes whole batches: it
    reads a batch's samples in one call (``Iterator.next_batch``, or
    ``next_packed`` into one buffer per field when the transform is the
    default or BATCH_TRANSFORM is given), applies the transform to each
    sample and collates them, so torch's per-sample fetching is skipped.
    The epoch and position reach the workers through shared memory at each
    ``iter(loader)``: ``set_epoch`` and ``load_state_dict`` work with
    ``persistent_workers=True`` too.
    """

    def __init__(self, path: str, kind: str = "random", seed: int = 0, ids: Any = None,
                 fields: Optional[Sequence[Any]] = None,
                 transform: Optional[Callable[[Dict[str, Any]], Any]] = default_transform,
                 window: int = 16 << 20, raw: bool = False, rank: Optional[int] = None,
                 world: Optional[int] = None, drop_last: bool = False, batch_size: int = 1,
                 batch_transform: Optional[Callable[[Any], Any]] = None, with_ids: bool = False,
                 ragged: str = "list", **open_kw: Any) -> None:
        if ragged not in ("list", "pad"):
            raise ValueError("ragged=%r: use 'list' or 'pad'" % (ragged,))
        self.with_ids, self.ragged = with_ids, ragged
        self._open = _Opener(path, open_kw)
        self.kind, self.seed, self.drop_last = kind, seed, drop_last
        self.subset = None if ids is None else np.asarray(ids, dtype=np.int64)
        self.fields, self.transform, self.window, self.raw = fields, transform, window, raw
        self.rank, self.world = rank, world
        self.batch_size = max(1, int(batch_size or 1))
        self.batch_transform = batch_transform
        self.collate_fn = None   # set by DataLoader: workers then yield whole batches
        self.epoch = 0
        self.position = 0        # entries of this epoch's order the consumer received
        # (epoch, position) where the next iter(loader) starts, for workers
        # that outlive an epoch (persistent_workers): written by the main
        # process before it starts them iterating, read by them in __iter__.
        self._start = _mp.RawArray("q", 2)
        self._ring = None        # set by DataLoader while its workers start
        self._order = None       # ((epoch, rank, world, pid), the order): order()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_order"] = None       # made again where it is used
        if _mpctx.get_spawning_popen() is None:
            state["_start"] = None   # shared memory crosses only to a starting process
            state["_ring"] = None
        return state

    def _publish(self):
        """Tell the workers where the next iteration starts."""
        if self._start is not None:
            self._start[0], self._start[1] = self.epoch, self.position

    def _started(self):
        """(epoch, position) of the iteration starting: the main process's, as
        published (this process may be a persistent worker, whose copy of the
        dataset is from an earlier epoch)."""
        if self._start is not None and _tud.get_worker_info() is not None:
            return int(self._start[0]), int(self._start[1])
        return self.epoch, self.position

    def _rank_world(self):
        r, w = _dist_rank_world()
        return (r if self.rank is None else self.rank), (w if self.world is None else self.world)

    def order(self, epoch=None):
        """This rank's order for EPOCH (default: the current one).  The last
        one is kept: len() and iter() of one epoch ask for it both (a random
        order of 1,000,000 ids takes about a second on this machine)."""
        rank, world = self._rank_world()
        key = (self.epoch if epoch is None else epoch, rank, world, os.getpid())
        if self._order is None or self._order[0] != key:
            self._order = (key, self._open.ds.order(self.kind, self.seed, key[0], rank, world, self.drop_last,
                                                    ids=self.subset))
        return self._order[1]

    def __len__(self):
        return len(self.order())

    def set_epoch(self, epoch: int) -> None:
        """Read EPOCH's order from its start (unless load_state_dict set a
        position in this very epoch)."""
        if epoch != self.epoch:
            self.position = 0
        self.epoch = epoch

    def state_dict(self) -> Dict[str, Any]:
        rank, world = self._rank_world()
        return {"epoch": self.epoch, "position": self.position, "kind": self.kind, "seed": self.seed,
                "rank": rank, "world": world, "drop_last": self.drop_last}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        rank, world = self._rank_world()
        for k, mine in (("kind", self.kind), ("seed", self.seed), ("rank", rank), ("world", world),
                        ("drop_last", self.drop_last)):
            if k in state and state[k] != mine:
                raise ValueError("load_state_dict: the state has %s=%r, this dataset %r" % (k, state[k], mine))
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])

    def _my_ids(self):
        """The ids this worker reads: its chunks of the rest of the order."""
        epoch, position = self._started()
        ids = self.order(epoch)[position:]
        info = _tud.get_worker_info()
        if info is None or info.num_workers == 1:
            return ids
        b, w, nw = self.batch_size, info.id, info.num_workers
        nchunk = -(-len(ids) // b)
        mine = np.arange(w, nchunk, nw)
        if len(mine) == 0:
            return ids[:0]
        starts = mine * b
        idx = (starts[:, None] + np.arange(b)[None, :]).ravel()
        return ids[idx[idx < len(ids)]]

    def __iter__(self):
        ids = self._my_ids()
        it = self._open.ds.iterate(ids, self.fields, self.window, self.raw, self.with_ids)
        try:
            if self.collate_fn is not None or self.batch_transform is not None:
                info = _tud.get_worker_info()
                if self._ring is None or info is None:
                    yield from self._batches(it, ids)
                else:
                    put, w = self._ring.put, info.id
                    for batch in self._batches(it, ids):
                        # The name now holds the descriptor, not the
                        # tensors: they are not kept alive while the next
                        # batch is read (see _batches).
                        batch = put(w, batch)
                        yield batch
            else:
                yield from self._samples(it)
        finally:
            it.close()

    def _samples(self, it):
        """Sample by sample (a plain torch DataLoader, or batch_size None),
        read a batch at a time."""
        t, b = self.transform, self.batch_size
        for chunk in iter(lambda: it.next_batch(b), []):
            if t is None:
                yield from chunk
            else:
                yield from map(t, chunk)

    def _batches(self, it, ids):
        """Whole batches, one read call each (see the class's docstring).
        IDS: the iterator's ids (a batch's "id" column is cut from them)."""
        b, t, bt = self.batch_size, self.transform, self.batch_transform
        collate = self._collate()
        ds = self._open.ds
        if bt is None and t is default_transform and collate is _tud.default_collate:
            plan = _fixed_plan(ds, self.fields)
            if plan is not None:
                yield from self._filled(it, ids, plan)
                return
        if bt is not None or (t is default_transform and collate is _tud.default_collate):
            while True:
                out = self._packed(it, ds, b)
                if out is None:
                    return
                yield out
                # Nothing of this batch is held while the next is read: its
                # buffer can then reuse their memory (fresh memory costs a
                # page fault per 4 KiB).
                del out
        else:
            if collate is _tud.default_collate:
                collate = _collate_fn(self.ragged)   # variable shapes too
            for chunk in iter(lambda: it.next_batch(b), []):
                yield collate([t(s) for s in chunk] if t is not None else chunk)

    def _collate(self):
        return self.collate_fn or _tud.default_collate

    def _packed(self, it, ds, b):
        """The next batch through next_packed (every value copied into one
        buffer per field), collated; None at the end."""
        packed = it.next_packed(b)
        if packed is None:
            return None
        batch = ds._batch(packed, self.fields, self.raw, self.ragged)
        del packed
        if self.batch_transform is not None:
            return self.batch_transform(batch)
        out = collate_packed(batch)
        if out is None:   # a missing value: sample by sample (collate keeps a None in a list)
            out = _collate_fn(self.ragged)([self.transform(s) for s in batch])
        if self.with_ids and isinstance(out, dict):
            out["id"] = torch.from_numpy(batch.ids)
        return out

    def _filled(self, it, ids, plan):
        """Batches of fixed-size fields only (PLAN, see _fixed_plan): each
        field's tensor made empty here and filled by one next_into call --
        the values copied once, from the map into the tensor, with the GIL
        released, and no object per sample.  A batch with a missing value
        is read through next_packed instead (next_into leaves the position
        where it was)."""
        b, ds = self.batch_size, self._open.ds
        while True:
            k = min(b, len(it) - it.position)
            if k <= 0:
                return
            arrs = [np.empty((k,) + shape, dtype) for _, shape, dtype, _ in plan]
            try:
                n = it.next_into(k, arrs)
            except _pagedb.NotFoundError:
                out = self._packed(it, ds, b)
                if out is None:
                    return
                yield out
                del out
                continue
            assert n == k
            out = {}
            for (name, _, _, bf16), a in zip(plan, arrs):
                out[name] = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if bf16 else torch.from_numpy(a)
            if self.with_ids:
                at = it.position
                out["id"] = torch.from_numpy(ids[at - k:at].copy())
            del arrs
            yield out
            del out


def _fixed_plan(ds, fields):
    """[(name, shape, NumPy dtype, is_bfloat16)] of FIELDS (None: all) when
    every one has values of one size -- a tensor field of fixed shape, an
    INT or a REAL field -- else None."""
    if fields is None:
        fds = list(ds.fields)
    else:
        names = [fields] if isinstance(fields, (str, int)) else list(fields)
        fds = [ds.fields[f] if isinstance(f, int) else ds._field(f) for f in names]
    plan = []
    for fd in fds:
        if fd.type == "int":
            plan.append((fd.name, (), np.dtype(np.int64), False))
        elif fd.type == "real":
            plan.append((fd.name, (), np.dtype(np.float64), False))
        elif fd.type == "tensor" and None not in fd.shape:
            bf16 = fd.dtype == "bfloat16"
            plan.append((fd.name, tuple(fd.shape), np.dtype(np.uint16 if bf16 else fd.dtype), bf16))
        else:
            return None
    return plan or None


class _T:
    """Where a tensor of a batch in the ring was (its index in _InRing.places)."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _InRing:
    """What a worker hands torch for a batch whose tensors are in the ring:
    the batch with each tensor replaced by a _T, and the tensors' places
    (offset in the ring, bytes, dtype, shape); W, the worker whose slot
    they are in."""

    def __init__(self, w, spec, places):
        self.w, self.spec, self.places = w, spec, places


def _strip(x, out):
    """X with its CPU tensors replaced by _T (appended to OUT), through
    dicts, lists and tuples; None if a tensor cannot go into the ring (one
    NumPy cannot view: the batch then crosses as torch moves it)."""
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu" or x.dtype in (torch.bfloat16, torch.complex32) or x.is_sparse:
            return None
        out.append(x)
        return _T(len(out) - 1)
    if type(x) is dict:
        d = {}
        for k, v in x.items():
            d[k] = _strip(v, out)
            if d[k] is None and v is not None:
                return None
        return d
    if type(x) in (list, tuple):
        items = [_strip(v, out) for v in x]
        if any(i is None and v is not None for i, v in zip(items, x)):
            return None
        return items if type(x) is list else tuple(items)
    return x


def _fill(x, tensors):
    """_strip's inverse: X with each _T replaced by its tensor."""
    if type(x) is _T:
        return tensors[x.i]
    if type(x) is dict:
        return {k: _fill(v, tensors) for k, v in x.items()}
    if type(x) is list:
        return [_fill(v, tensors) for v in x]
    if type(x) is tuple:
        return tuple(_fill(v, tensors) for v in x)
    return x


class _Ring:
    """Shared memory in which a DataLoader's workers hand over their
    batches' tensors, instead of torch's transfer: torch moves every tensor
    of every batch into a shared-memory segment of its own, made for it and
    faulted in page by page (10 ms of CPU for a 5 MB batch on the machine of
    doc/benchmarks.md, against 0.75 ms to copy it).

    Invariants:
      1. SLOTS slots of SLOT bytes per worker, in one file of /dev/shm (else
         the temporary directory), unlinked at once and mapped by the main
         process and its workers; a slot's bytes are allocated
         (posix_fallocate) before a worker writes them, so a full /dev/shm
         is an error the batch survives (it then crosses as torch moves
         it), never a SIGBUS.
      2. Worker w puts its k-th batch into slot k % SLOTS after taking one
         count of its semaphore (SLOTS at first): a slot is written only
         when the main process has released what was in it.  A wait that
         finds the main process gone ends with an error.
      3. The main process copies the tensors out into new ones and then
         releases the slot: a batch is the caller's to keep, and nothing it
         holds points into the ring.  A worker's batches reach the main
         process in the order it made them (torch keeps each worker's
         order), so its slots are released in the order they were filled.
      4. Used only by pagedb.torch.DataLoader with workers that do not
         outlive an iteration: a new ring for every iter(loader), so the
         batches of an iteration left unfinished hold no slot of the next.
      5. A tensor taken out (of 64 KiB or more) is made in a buffer of the
         main process's pool that no tensor uses any more (a weak reference
         to the storage of the last one made in it has expired: every view
         of it is gone too), else in a new buffer: fresh memory costs a
         page fault per 4 KiB, which on this VM was three quarters of a
         5 MB batch's take.  The pool forgets buffers in use beyond POOL
         (their tensors keep them alive) and keeps at most POOL.
    """

    POOL_MIN = 1 << 16
    POOL = 8

    def __init__(self, workers, slots, slot, ctx):
        self.slots, self.slot = slots, slot
        self.size = workers * slots * slot
        self.parent = os.getpid()
        self.sems = [ctx.Semaphore(slots) for _ in range(workers)]
        self.k = 0                      # the next slot's number, in a worker
        self.held = {}                  # slot -> bytes allocated, in a worker
        self.fd = None
        self.pool = []                  # [buffer, StorageWeakRef or None], in the main process
        for d in ("/dev/shm", tempfile.gettempdir()):
            try:
                self.fd, name = tempfile.mkstemp(prefix="pagedb-ring-", dir=d)
            except OSError:
                continue
            os.unlink(name)
            break
        if self.fd is None:
            raise OSError("no directory for the DataLoader's shared batches (/dev/shm, %s)" % tempfile.gettempdir())
        os.ftruncate(self.fd, self.size)
        self.mm = _mmap.mmap(self.fd, self.size)

    def __getstate__(self):
        # Only to a starting worker (spawn: the dataset's __getstate__ drops
        # the ring otherwise); the file's descriptor goes with it.
        state = dict(self.__dict__)
        del state["mm"]
        state["pool"] = []
        state["fd"] = _mpred.DupFd(self.fd)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.fd = state["fd"].detach()
        self.mm = _mmap.mmap(self.fd, self.size)

    def __del__(self):
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None

    def put(self, w, batch):
        """In worker W: BATCH's tensors copied into its next slot, and the
        _InRing that stands for it; BATCH itself if it has no tensor, if
        they do not fit a slot, or if the slot's memory cannot be had."""
        tensors = []
        spec = _strip(batch, tensors)
        sizes = [t.numel() * t.element_size() for t in tensors]
        need = sum((n + 63) & ~63 for n in sizes)
        if spec is None or not tensors or need > self.slot:
            return batch
        # Invariant 2: wait for the slot; a main process gone ends the wait.
        while not self.sems[w].acquire(timeout=1.0):
            try:
                os.kill(self.parent, 0)
            except ProcessLookupError:
                raise RuntimeError("pagedb.torch: the DataLoader's main process is gone") from None
        k = self.k % self.slots
        base = (w * self.slots + k) * self.slot
        try:
            if need > self.held.get(k, 0):                    # invariant 1
                os.posix_fallocate(self.fd, base, need)
                self.held[k] = need
            places, off = [], base
            for t, n in zip(tensors, sizes):
                if n:
                    src = t.detach().contiguous().numpy().reshape(-1).view(np.uint8)
                    np.frombuffer(self.mm, np.uint8, n, off)[:] = src
                places.append((off, n, t.dtype, tuple(t.shape)))
                off += (n + 63) & ~63
        except (OSError, TypeError, ValueError, RuntimeError):
            self.sems[w].release()
            return batch
        self.k += 1
        return _InRing(w, spec, places)

    def _tensor(self, n, dtype, shape):
        """A new tensor of N bytes (invariant 5)."""
        if n < self.POOL_MIN:
            return torch.empty(shape, dtype=dtype)
        free = None
        for e in self.pool:
            if e[1] is not None and e[1].expired():
                e[1] = None
            if e[1] is None and len(e[0]) >= n and (free is None or len(e[0]) < len(free[0])):
                free = e
        if free is None:
            # Room for a somewhat larger batch next time (they vary).
            free = [np.empty((n + (n >> 3) + 4095) & ~4095, np.uint8), None]
            self.pool.append(free)
            if len(self.pool) > self.POOL:
                drop = next((e for e in self.pool if e[1] is not None), None) or next(e for e in self.pool if e is not free)
                self.pool.remove(drop)
        t = torch.frombuffer(free[0], dtype=dtype, count=math.prod(shape))
        free[1] = _StorageWeakRef(t.storage())
        return t.view(shape)

    def take(self, d):
        """In the main process: the batch D stands for, its tensors copied
        out of the ring (invariant 3), and D's slot released."""
        try:
            out = []
            for off, n, dtype, shape in d.places:
                t = self._tensor(n, dtype, shape)
                if n:
                    t.view(-1).numpy().view(np.uint8)[:] = np.frombuffer(self.mm, np.uint8, n, off)
                out.append(t)
        finally:
            self.sems[d.w].release()
        return _fill(d.spec, out)


def _as_is(batch):
    return batch


class DataLoader(_tud.DataLoader):
    """A torch DataLoader over a ``pagedb.torch.IterableDataset`` whose
    workers make whole batches (see IterableDataset) -- batch_size and
    collate_fn are handed to the dataset, and torch is given batch_size
    None -- and that counts, in this process, the samples handed out: the
    dataset's ``position``, which its ``state_dict`` saves.  Any other
    dataset is loaded as torch's DataLoader does.

    shared_batches (default True): with workers that do not outlive an
    iteration (``persistent_workers=False``), the tensors of a batch cross
    from its worker in shared memory the loader reuses (a ring of
    ``prefetch_factor * num_workers + 1`` slots of SLOT_BYTES per worker,
    allocated as used) and are copied out into new tensors in this
    process, instead of through a new shared-memory segment per tensor as
    torch moves them; a batch yielded is yours to keep either way.  A batch
    larger than a slot, or with tensors NumPy cannot view (bfloat16,
    sparse), crosses as torch moves it; so do all batches with
    ``pin_memory=True`` (torch pins them as they arrive)."""

    def __init__(self, dataset: Any, batch_size: Optional[int] = 1, *args: Any,
                 collate_fn: Optional[Callable[[Any], Any]] = None, shared_batches: bool = True,
                 slot_bytes: int = 64 << 20, **kw: Any) -> None:
        self._pagedb = isinstance(dataset, IterableDataset) and batch_size is not None
        self.shared_batches, self.slot_bytes = bool(shared_batches), int(slot_bytes)
        if self._pagedb:
            dataset.batch_size = batch_size
            dataset.collate_fn = collate_fn or _tud.default_collate
            if kw.get("drop_last"):
                raise ValueError("DataLoader(drop_last=True) over a pagedb IterableDataset: give the dataset "
                                 "drop_last=True (its order is then cut to a multiple of the world), and "
                                 "batches are whole but the last")
            # The workers' batches are final: torch neither collates nor
            # converts them (a batch_transform's result arrives as it is).
            super().__init__(dataset, None, *args, collate_fn=_as_is, **kw)
        else:
            if isinstance(dataset, IterableDataset):
                dataset.collate_fn = None   # batch_size None: sample by sample
            if collate_fn is None and batch_size is not None and isinstance(dataset, MapDataset):
                collate_fn = _collate_fn(dataset.ragged)   # variable shapes too (collate)
            super().__init__(dataset, batch_size, *args, collate_fn=collate_fn, **kw)

    def __iter__(self):
        ds = self.dataset
        if not isinstance(ds, IterableDataset):
            yield from super().__iter__()
            return
        ds._publish()
        total = len(ds.order()) if self._pagedb else None
        ring = None
        # Not with pin_memory: torch pins a batch as it arrives, before this
        # process takes it out of the ring.
        if (self._pagedb and self.shared_batches and self.num_workers > 0 and not self.persistent_workers
                and not self.pin_memory):
            ctx = self.multiprocessing_context or _mp.get_context()
            try:
                # As many slots as torch lets a worker have batches in
                # flight, and one more: the wait of invariant 2 is then a
                # safeguard that never blocks (a slot takes memory only when
                # a batch is put in it).
                slots = (self.prefetch_factor or 2) * self.num_workers + 1
                ring = _Ring(self.num_workers, slots, self.slot_bytes, ctx)
            except OSError:
                ring = None                  # no shared memory to be had: torch's transfer
        ds._ring = ring
        try:
            if self._pagedb and self.num_workers == 0 and not self.pin_memory:
                # The dataset's batches are final and this process makes
                # them: torch's single-process iterator would only pass
                # them through (at some 100 us a batch of its profiling
                # hooks on the machine of doc/benchmarks.md).
                batches = iter(ds)
            else:
                batches = super().__iter__()     # the workers start here, with the ring
        finally:
            ds._ring = None
        for batch in batches:
            if type(batch) is _InRing:
                batch = ring.take(batch)
            if self._pagedb:
                ds.position = min(total, ds.position + ds.batch_size)
            else:
                ds.position += 1
            yield batch


# Token streams for language models live in a module of their own
# (pagedb/tokens.py), which builds on IterableDataset above: looked up on
# first use (PEP 562), so either module may be imported first.
__all__.append("TokenDataset")


def __getattr__(name: str) -> Any:
    if name == "TokenDataset":
        from pagedb.tokens import TokenDataset
        return TokenDataset
    raise AttributeError("module 'pagedb.torch' has no attribute %r" % (name,))
