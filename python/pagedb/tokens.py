"""pagedb.torch.TokenDataset: language-model blocks from a token field.

    from pagedb.torch import TokenDataset, DataLoader
    ds = TokenDataset("corpus.pagedb", "tok", block_size=2048, kind="random", seed=0)
    loader = DataLoader(ds, batch_size=8, num_workers=2)
    for epoch in range(3):
        ds.set_epoch(epoch)
        for batch in loader:          # (8, 2049) int64
            x, y = batch[:, :-1], batch[:, 1:]

The documents are the values of a token field (a tensor field of one
variable dimension and an integer dtype: ``pagedb.Tensor("uint16",
(None,))``).  They are laid end to end in id order (``Dataset.tokens``:
pagedb_tokens_open, over the token map every commit keeps in the index
file) and the stream is cut into blocks of ``block_size + 1`` tokens:
block b is tokens ``b*B .. b*B + B``, so its first B tokens are an input and
its last B the target (each token is in exactly one block's input; the
stream's last ``(tokens - 1) % B`` tokens, the tail, are in none).  A block is one tensor of ``block_size + 1`` tokens -- LitData's
``TokensLoader`` convention (litgpt asks it for ``max_seq_length + 1`` and
splits) -- or, with ``split=True``, the pair ``(input, target)`` of
``block_size`` tokens each, nanoGPT's ``get_batch`` convention.  Either is
int64 by default (what ``nn.Embedding`` takes; ``dtype=torch.int32`` halves
the copy).

The epoch's blocks (a permutation keyed by seed and epoch for kind
"random", of groups of 64 neighbouring blocks for "quasi_random", stream
order for "sequential") are split among the ranks (``blocks // world`` each: the last ``blocks %
world`` are not read that epoch) and, within a rank, among the
DataLoader's workers exactly as ``IterableDataset`` splits its ids: worker
w reads the chunks of ``batch_size`` blocks k with k % num_workers == w, so
``pagedb.torch.DataLoader`` yields the rank's blocks in order and counts
them; ``state_dict``/``load_state_dict`` save and resume that position
(this class is an ``IterableDataset`` whose order is block numbers).

Kept apart from pagedb/torch.py (which re-exports it) so that the two
change independently.
"""
from typing import Any, Dict, Optional

import numpy as np
import torch
import torch.utils.data as _tud

from pagedb.torch import IterableDataset

__all__ = ["TokenDataset"]

_NP_DTYPES = {torch.int64: np.int64, torch.int32: np.int32}


class TokenDataset(IterableDataset):
    """Blocks of ``block_size + 1`` tokens of FIELD, an epoch's token stream.

    kind: "random" (the blocks in a permutation of SEED and the epoch),
    "quasi_random" (groups of 64 neighbouring blocks permuted) or
    "sequential" (stream order); the stream is the documents in id order
    whatever the kind; rank, world: default from
    torch.distributed, else 0 of 1; split: yield ``(input, target)``
    instead of one tensor; dtype: torch.int64 (default) or torch.int32;
    batch_size: blocks a worker reads at a time (``pagedb.torch.DataLoader``
    sets it to its own, and the workers then yield whole ``(batch,
    block_size + 1)`` tensors, read in one call); open_kw: for
    ``pagedb.open`` (vfs, read_mode, verify).
    """

    def __init__(self, path: str, field: Any, block_size: int, kind: str = "random", seed: int = 0,
                 rank: Optional[int] = None, world: Optional[int] = None, split: bool = False,
                 dtype: Any = torch.int64, batch_size: int = 1, **open_kw: Any) -> None:
        if dtype not in _NP_DTYPES:
            raise ValueError("dtype %r: use torch.int64 or torch.int32" % (dtype,))
        if int(block_size) < 1:
            raise ValueError("block_size %r: give 1 or more tokens" % (block_size,))
        super().__init__(path, kind=kind, seed=seed, transform=None, rank=rank, world=world, drop_last=True,
                         batch_size=batch_size, **open_kw)
        self.field, self.block_size, self.split, self.dtype = field, int(block_size), bool(split), dtype
        self._stream = None      # ((epoch, pid), pagedb.Tokens): stream()

    def __getstate__(self):
        state = super().__getstate__()
        state["_stream"] = None  # made again where it is used
        return state

    def stream(self, epoch: Optional[int] = None) -> Any:
        """The ``pagedb.Tokens`` of EPOCH (default: the current one); the
        last one is kept (O(1) to open over a stored map, O(documents)
        over an index without one)."""
        import os
        key = (self.epoch if epoch is None else epoch, os.getpid())
        if self._stream is None or self._stream[0] != key:
            self._stream = (key, self._open.ds.tokens(self.field, self.block_size, self.kind, self.seed, key[0]))
        return self._stream[1]

    def order(self, epoch=None):
        """This rank's block numbers for EPOCH (default: the current one)."""
        rank, world = self._rank_world()
        key = (self.epoch if epoch is None else epoch, rank, world)
        if self._order is None or self._order[0] != key:
            self._order = (key, self.stream(key[0]).order(rank, world))
        return self._order[1]

    def state_dict(self) -> Dict[str, Any]:
        state = super().state_dict()
        state.update(field=self.field, block_size=self.block_size)
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        for k, mine in (("field", self.field), ("block_size", self.block_size)):
            if k in state and state[k] != mine:
                raise ValueError("load_state_dict: the state has %s=%r, this dataset %r" % (k, state[k], mine))
        super().load_state_dict(state)

    def _read(self, stream, blocks):
        out = np.empty((len(blocks), self.block_size + 1), _NP_DTYPES[self.dtype])
        t = torch.from_numpy(stream.read(blocks, out))
        return (t[:, :-1], t[:, 1:]) if self.split else t

    def __iter__(self):
        epoch, _ = self._started()
        blocks = self._my_ids()
        stream = self.stream(epoch)
        b = self.batch_size
        if self.collate_fn is None:
            # Block by block (a plain torch DataLoader, or iterating the
            # dataset itself), read a batch_size at a time.
            for i in range(0, len(blocks), b):
                chunk = self._read(stream, blocks[i:i + b])
                if self.split:
                    yield from zip(chunk[0], chunk[1])
                else:
                    yield from chunk
            return
        info = _tud.get_worker_info()
        put = None if self._ring is None or info is None else self._ring.put
        for i in range(0, len(blocks), b):
            batch = self._read(stream, blocks[i:i + b])
            if put is not None:
                batch = put(info.id, batch)
            yield batch
