"""Token streams from Python: Dataset.tokens (pagedb_tokens_open) and
pagedb.torch.TokenDataset under DataLoader.  Every token of every document
is in exactly one block's input per epoch over 2 ranks x 2 workers, except
the documented tail (the stream's last (tokens - 1) % B) and the blocks a
rank split leaves over (blocks % world); blocks are identical for the same
seed and epoch; a resumed loader continues exactly; views of the map."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import pagedb                                                  # noqa: E402
from pagedb.torch import DataLoader, TokenDataset              # noqa: E402

B, NDOC = 8, 41
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def doc(i):
    """Document I: unique uint32 tokens (i * 1000 + position); every 9th empty."""
    n = 0 if i % 9 == 4 else 1 + (i * 7) % 23
    return np.arange(i * 1000, i * 1000 + n, dtype=np.uint32)


@pytest.fixture(scope="module", params=[None, "lz4"])
def dspath(request, tmp_path_factory):
    p = str(tmp_path_factory.mktemp("tokens") / "t.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("tok", pagedb.Tensor("uint32", (None,)), request.param)
        ds.add_field("label", "int")
        with ds.writer() as w:
            for i in range(NDOC):
                w.append({"tok": doc(i), "label": i}, id=i)
        ds.commit()
    return p


def stream_of(path, kind, seed, epoch):
    """The stream as the documentation defines it: the documents in id
    order, concatenated, whatever the kind, seed and epoch (which order the
    blocks)."""
    return np.concatenate([doc(i) for i in range(NDOC)])


def test_blocks_are_slices_of_the_stream(dspath):
    s = stream_of(dspath, "random", 5, 2)
    with pagedb.open(dspath) as ds:
        t = ds.tokens("tok", B, "random", 5, 2)
        assert (t.tokens, t.blocks, t.documents, t.block_size, t.dtype) == \
            (len(s), (len(s) - 1) // B, sum(1 for i in range(NDOC) if len(doc(i))), B, "uint32")
        out = np.zeros((t.blocks, B + 1), np.int64)
        t.read(np.arange(t.blocks), out)
        for b in range(t.blocks):
            assert (out[b] == s[b * B:b * B + B + 1]).all()
            assert (t.block(b) == s[b * B:b * B + B + 1]).all()
        same = np.zeros((t.blocks, B + 1), np.uint32)
        assert (t.read(np.arange(t.blocks), same) == out).all()
        assert t.stored                      # the index file's map: an O(1) open


def test_block_orders(dspath):
    """RANDOM: a permutation of the blocks per (seed, epoch); SEQUENTIAL:
    in order; QUASI_RANDOM: every block once."""
    with pagedb.open(dspath) as ds:
        r = [ds.tokens("tok", 2, "random", seed, ep).order() for seed, ep in ((1, 0), (1, 0), (1, 1), (2, 0))]
        n = ds.tokens("tok", 2).blocks
        assert all(sorted(o.tolist()) == list(range(n)) for o in r)
        assert (r[0] == r[1]).all() and (r[0] != r[2]).any() and (r[0] != r[3]).any()
        assert ds.tokens("tok", 2, "sequential", 9, 9).order().tolist() == list(range(n))
        assert sorted(ds.tokens("tok", 2, "quasi_random", 1, 0).order().tolist()) == list(range(n))


def test_views_and_errors(dspath, tmp_path):
    with pagedb.open(dspath) as ds:
        t = ds.tokens("tok", 4, "sequential")
        s = np.concatenate([doc(i) for i in range(NDOC)])
        views = 0
        for b in range(t.blocks):
            a = t.block(b)
            assert not a.flags.writeable and a.dtype == np.uint32 and (a == s[b * 4:b * 4 + 5]).all()
            views += isinstance(a.base, memoryview)
        assert views > 0
        with pytest.raises(pagedb.RangeError):
            t.block(t.blocks)
        with pytest.raises(pagedb.RangeError):
            t.block(-1)
        with pytest.raises(pagedb.MismatchError):
            ds.tokens("label", 4)
        with pytest.raises(pagedb.RangeError):
            ds.tokens("tok", 0)
        with pytest.raises(ValueError):
            ds.tokens("tok", 4, "shuffled")
        with pytest.raises(ValueError):
            t.read([0, 1], np.zeros((2, 4), np.int64))       # rows of block_size + 1
        with pytest.raises(pagedb.MisuseError):
            t.order(2, 2)
    p = str(tmp_path / "f.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("f", pagedb.Tensor("float32", (None,)))
        with pytest.raises(pagedb.MismatchError):
            ds.tokens("f", 4)


def blocks_of(loader):
    out = []
    for batch in loader:
        assert batch.dtype == torch.int64 and batch.shape[1] == B + 1
        out.extend(batch.numpy().tolist())
    return out


def make_loader(path, rank, world, epoch=0, workers=2, seed=3):
    ds = TokenDataset(path, "tok", B, kind="random", seed=seed, rank=rank, world=world)
    ds.set_epoch(epoch)
    return ds, DataLoader(ds, batch_size=3, num_workers=workers, multiprocessing_context="fork" if workers else None)


@pytest.mark.parametrize("epoch", [0, 1])
def test_every_token_once_over_ranks_and_workers(dspath, epoch):
    s = stream_of(dspath, "random", 3, epoch)
    world, seen = 2, []
    for rank in range(world):
        ds, dl = make_loader(dspath, rank, world, epoch)
        got = blocks_of(dl)
        assert len(got) == len(ds) == ((len(s) - 1) // B) // world
        seen.extend(got)
    nblocks = (len(s) - 1) // B
    read = {tuple(b) for b in seen}
    # Which blocks the split left over: the rest of the epoch's blocks.
    with pagedb.open(dspath) as d:
        t = d.tokens("tok", B, "random", 3, epoch)
        dropped = sorted(set(range(nblocks)) - set(np.concatenate([t.order(r, world) for r in range(world)]).tolist()))
    assert len(dropped) == nblocks % world
    inputs = [tok for b in seen for tok in b[:B]]
    missing = [int(x) for b in dropped for x in s[b * B:b * B + B]] + [int(x) for x in s[nblocks * B:]]
    assert len(inputs) == len(set(inputs))                        # no token twice
    assert sorted(inputs + missing) == sorted(s.tolist())         # and every one once, but those
    assert len(s) - nblocks * B == (len(s) - 1) % B + 1           # the tail as documented
    assert len(read) == len(seen)


def test_same_seed_and_epoch_same_blocks(dspath):
    a = blocks_of(make_loader(dspath, 0, 2, 1)[1])
    b = blocks_of(make_loader(dspath, 0, 2, 1, workers=0)[1])
    c = blocks_of(make_loader(dspath, 0, 2, 2)[1])
    d = blocks_of(make_loader(dspath, 0, 2, 1, seed=4)[1])
    assert a == b and a != c and a != d


def test_resume_exact(dspath):
    full = blocks_of(make_loader(dspath, 1, 2, 1)[1])
    ds, dl = make_loader(dspath, 1, 2, 1)
    part = []
    for k, batch in enumerate(dl):
        part.extend(batch.numpy().tolist())
        if k == 1:
            break
    state = ds.state_dict()
    assert state["position"] == 6 and state["block_size"] == B
    again, dl2 = make_loader(dspath, 1, 2, 0)
    again.load_state_dict(state)
    rest = blocks_of(dl2)
    assert part + rest == full
    with pytest.raises(ValueError):
        TokenDataset(dspath, "tok", B + 1, kind="random", seed=3, rank=1, world=2).load_state_dict(state)


def test_split_and_plain_iteration(dspath):
    ds = TokenDataset(dspath, "tok", B, kind="sequential", split=True, dtype=torch.int32)
    pairs = list(ds)
    s = stream_of(dspath, "sequential", 0, 0)
    assert len(pairs) == (len(s) - 1) // B
    for b, (x, y) in enumerate(pairs):
        assert x.dtype == torch.int32 and x.shape == (B,) and y.shape == (B,)
        assert (x.numpy() == s[b * B:b * B + B]).all() and (y.numpy() == s[b * B + 1:b * B + B + 1]).all()
    xs, ys = next(iter(DataLoader(ds, batch_size=4)))
    assert xs.shape == (4, B) and (xs[:, 1:] == ys[:, :-1]).all()


def test_document_deleted_after_the_stream_was_made(tmp_path):
    """A stream is a snapshot of the documents at its making: a block that
    needs a document deleted since fails (NotFoundError), never giving other
    tokens; the others still read; the next stream leaves it out."""
    p = str(tmp_path / "d.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("tok", pagedb.Tensor("uint16", (None,)))
        with ds.writer() as w:
            for i in range(6):
                w.append({"tok": np.full(10, i, np.uint16)}, id=i)
        ds.commit()
        t = ds.tokens("tok", 5, "sequential")
        assert t.blocks == 11
        ds.delete(2)
        ds.commit()
        assert (t.block(0) == [0, 0, 0, 0, 0, 0]).all()
        with pytest.raises(pagedb.NotFoundError):
            t.block(4)                                   # tokens 20..25: document 2
        with pytest.raises(pagedb.NotFoundError):
            t.read([3], np.zeros((1, 6), np.int64))      # tokens 15..20: into document 2
        t2 = ds.tokens("tok", 5, "sequential")
        assert t2.tokens == 50 and (t2.block(5) == [3, 3, 3, 3, 3, 4]).all()


def test_stream_outlives_an_index_rewrite(tmp_path):
    """A stream reads the index file's map in place: a field added (the
    index rewritten and replaced) leaves the stream's map readable until the
    dataset closes, and a new stream reads the new file's."""
    p = str(tmp_path / "r.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("tok", pagedb.Tensor("uint16", (None,)))
        with ds.writer() as w:
            for i in range(50):
                w.append({"tok": np.full(10 + i % 3, i, np.uint16)}, id=i)
        ds.commit()
        t = ds.tokens("tok", 7, "random", 1, 0)
        want = [t.block(b).copy() for b in range(t.blocks)]
        assert t.stored
        ds.add_field("extra", "int")
        got = [t.block(b) for b in range(t.blocks)]
        assert all((a == b).all() for a, b in zip(want, got))
        t2 = ds.tokens("tok", 7, "random", 1, 0)
        assert t2.stored and all((t2.block(b) == want[b]).all() for b in range(t2.blocks))
