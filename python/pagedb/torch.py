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

Each process opens the dataset itself (a pagedb handle must not cross a
fork, and cannot be pickled for spawn): the objects here carry the path and
the options, and open lazily in whichever process iterates them.

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
import os

import numpy as np
import torch
import torch.utils.data as _tud

import pagedb as _pagedb

__all__ = ["MapDataset", "IterableDataset", "DataLoader", "default_transform"]


def default_transform(sample):
    """A sample with its memoryviews copied into uint8 NumPy arrays, which
    can cross from a worker to the main process (a memoryview cannot be
    pickled) and be collated."""
    return {k: (np.array(v, dtype=np.uint8) if isinstance(v, memoryview) else v) for k, v in sample.items()}


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
    through TRANSFORM (default: ``default_transform``)."""

    def __init__(self, path, ids=None, fields=None, transform=default_transform, **open_kw):
        self._open = _Opener(path, open_kw)
        self.ids = np.asarray(self._open.ds.ids() if ids is None else ids, dtype=np.int64)
        self.fields = fields
        self.transform = transform

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        sample = self._open.ds.get(int(self.ids[i]), self.fields)
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
    to its own); open_kw: for ``pagedb.open`` (vfs, read_mode, verify).
    """

    def __init__(self, path, kind="random", seed=0, ids=None, fields=None, transform=default_transform,
                 window=16 << 20, raw=False, rank=None, world=None, drop_last=False, batch_size=1, **open_kw):
        self._open = _Opener(path, open_kw)
        self.kind, self.seed, self.drop_last = kind, seed, drop_last
        self.subset = None if ids is None else np.asarray(ids, dtype=np.int64)
        self.fields, self.transform, self.window, self.raw = fields, transform, window, raw
        self.rank, self.world = rank, world
        self.batch_size = max(1, int(batch_size or 1))
        self.epoch = 0
        self.position = 0        # entries of this epoch's order the consumer received

    def _rank_world(self):
        r, w = _dist_rank_world()
        return (r if self.rank is None else self.rank), (w if self.world is None else self.world)

    def order(self, epoch=None):
        """This rank's order for EPOCH (default: the current one)."""
        rank, world = self._rank_world()
        return self._open.ds.order(self.kind, self.seed, self.epoch if epoch is None else epoch, rank, world,
                                   self.drop_last, ids=self.subset)

    def __len__(self):
        return len(self.order())

    def set_epoch(self, epoch):
        """Read EPOCH's order from its start (unless load_state_dict set a
        position in this very epoch)."""
        if epoch != self.epoch:
            self.position = 0
        self.epoch = epoch

    def state_dict(self):
        rank, world = self._rank_world()
        return {"epoch": self.epoch, "position": self.position, "kind": self.kind, "seed": self.seed,
                "rank": rank, "world": world, "drop_last": self.drop_last}

    def load_state_dict(self, state):
        rank, world = self._rank_world()
        for k, mine in (("kind", self.kind), ("seed", self.seed), ("rank", rank), ("world", world),
                        ("drop_last", self.drop_last)):
            if k in state and state[k] != mine:
                raise ValueError("load_state_dict: the state has %s=%r, this dataset %r" % (k, state[k], mine))
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])

    def _my_ids(self):
        """The ids this worker reads: its chunks of the rest of the order."""
        ids = self.order()[self.position:]
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
        it = self._open.ds.iterate(ids, self.fields, self.window, self.raw)
        t = self.transform
        try:
            for sample in it:
                yield t(sample) if t else sample
        finally:
            it.close()


def _batch_len(batch):
    if isinstance(batch, dict):
        for v in batch.values():
            return _batch_len(v)
        return 0
    if isinstance(batch, (list, tuple)):
        return len(batch)
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() > 0 else 1
    return 1


class DataLoader(_tud.DataLoader):
    """A torch DataLoader over a ``pagedb.torch.IterableDataset`` that tells
    the dataset its batch size (so that workers read whole batches in turn)
    and counts, in this process, the samples handed out: the dataset's
    ``position``, which its ``state_dict`` saves."""

    def __init__(self, dataset, *args, **kw):
        super().__init__(dataset, *args, **kw)
        if isinstance(dataset, IterableDataset):
            dataset.batch_size = self.batch_size or 1

    def __iter__(self):
        ds = self.dataset
        if not isinstance(ds, IterableDataset):
            yield from super().__iter__()
            return
        auto = self.batch_size is not None
        for batch in super().__iter__():
            ds.position += _batch_len(batch) if auto else 1
            yield batch
