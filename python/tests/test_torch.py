"""pagedb.torch under DataLoader: 0, 2 and 3 workers x fork and spawn x world
1 and 2 (simulated ranks): every sample read exactly once per epoch (the
ranks' parts together), the order exactly pagedb_order's for the seed and
epoch, and a resumed iterator (state_dict / load_state_dict mid-epoch) that
continues exactly where the saved state was.  The datasets are tiny: spawn
workers import torch, which is most of this file's time."""
import pytest

torch = pytest.importorskip("torch")

import pagedb                                          # noqa: E402
from pagedb.torch import DataLoader, IterableDataset, MapDataset   # noqa: E402

N, BATCH = 37, 4
# 3 workers on a 2-core machine is the point of the 3-worker cases.
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


@pytest.fixture(scope="module")
def dspath(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("torch") / "t.pagedb")
    ds = pagedb.open(p, "c")
    ds.add_field("key", "int")
    ds.add_field("data", "bytes")
    with ds.writer() as w:
        for i in range(N):
            w.append({"key": i, "data": bytes([i]) * 8}, id=i)
    ds.commit()
    ds.close()
    return p


def keys_of(loader):
    out = []
    for batch in loader:
        assert (batch["data"][:, 0] == batch["key"]).all()    # the bytes are the sample's
        out.extend(batch["key"].tolist())
    return out


def loader(ds, workers, ctx):
    return DataLoader(ds, batch_size=BATCH, num_workers=workers,
                      multiprocessing_context=ctx if workers else None)


CASES = [(0, None), (2, "fork"), (3, "fork"), (2, "spawn"), (3, "spawn")]


@pytest.mark.parametrize("world", [1, 2])
@pytest.mark.parametrize("workers,ctx", CASES)
def test_epoch_order_and_resume(dspath, workers, ctx, world):
    ref = pagedb.open(dspath)
    seen = []
    for rank in range(world):
        ds = IterableDataset(dspath, kind="random", seed=11, rank=rank, world=world)
        ds.set_epoch(3)
        got = keys_of(loader(ds, workers, ctx))
        want = ref.order("random", seed=11, epoch=3, rank=rank, world=world).tolist()
        assert got == want                                  # exactly pagedb's order
        assert ds.position == len(want)
        seen.extend(got)
    per = -(-N // world)
    assert len(seen) == per * world
    assert set(seen) == set(range(N))                       # every sample, once (+ padding)
    assert len(seen) - len(set(seen)) == per * world - N
    # Resume: stop after 3 batches, save, continue in a new dataset and loader.
    if ctx == "spawn" and world == 2:
        return                                              # bounded: spawn resumes at world 1
    ds = IterableDataset(dspath, kind="random", seed=11, rank=world - 1, world=world)
    ds.set_epoch(5)
    first = []
    for k, batch in enumerate(loader(ds, workers, ctx)):
        first.extend(batch["key"].tolist())
        if k == 2:
            break
    state = ds.state_dict()
    assert state["position"] == 3 * BATCH and state["epoch"] == 5
    again = IterableDataset(dspath, kind="random", seed=11, rank=world - 1, world=world)
    again.load_state_dict(state)
    rest = keys_of(loader(again, workers, ctx))
    want = ref.order("random", seed=11, epoch=5, rank=world - 1, world=world).tolist()
    assert first + rest == want
    ref.close()


def test_same_seed_same_order_new_epoch_new_order(dspath):
    a = IterableDataset(dspath, kind="quasi_random", seed=2)
    b = IterableDataset(dspath, kind="quasi_random", seed=2)
    a.set_epoch(1)
    b.set_epoch(1)
    ka, kb = keys_of(loader(a, 2, "fork")), keys_of(loader(b, 0, None))
    assert ka == kb and sorted(ka) == list(range(N))
    b.set_epoch(2)
    assert keys_of(loader(b, 2, "fork")) != ka


def test_subset_transform_and_map_dataset(dspath):
    ref = pagedb.open(dspath)
    sub = ref.sql_ids("SELECT id FROM sample WHERE key % 3 = 0")
    ds = IterableDataset(dspath, ids=sub, fields=["key"], transform=lambda s: s["key"] * 10)
    got = [int(x) for b in DataLoader(ds, batch_size=5, num_workers=2, multiprocessing_context="fork") for x in b]
    assert got == [10 * i for i in ref.order("random", ids=sub).tolist()]
    m = MapDataset(dspath, transform=lambda s: (s["key"], bytes(s["data"])))
    assert len(m) == N and m[5] == (5, bytes([5]) * 8)
    keys = []
    for k, d in DataLoader(m, batch_size=8, shuffle=True, num_workers=2, multiprocessing_context="fork",
                           collate_fn=lambda b: ([x[0] for x in b], [x[1] for x in b])):
        assert all(dd == bytes([kk]) * 8 for kk, dd in zip(k, d))
        keys.extend(k)
    assert sorted(keys) == list(range(N))
    ref.close()


def test_distributed_rank_world(dspath, tmp_path):
    """Rank and world come from torch.distributed when it is initialised."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="file://" + str(tmp_path / "pg"), rank=0, world_size=1)
    try:
        ds = IterableDataset(dspath, seed=4)
        assert ds.state_dict()["world"] == 1 and len(ds) == N
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_persistent_workers_epochs_and_resume(dspath, ctx):
    """With persistent_workers the workers outlive an epoch: set_epoch,
    a break mid-epoch and load_state_dict still reach them."""
    ref = pagedb.open(dspath)
    ds = IterableDataset(dspath, kind="random", seed=7)
    dl = DataLoader(ds, batch_size=BATCH, num_workers=2, multiprocessing_context=ctx, persistent_workers=True)
    for epoch in (1, 2):
        ds.set_epoch(epoch)
        assert keys_of(dl) == ref.order("random", seed=7, epoch=epoch).tolist()
    ds.set_epoch(3)
    first = []
    for k, batch in enumerate(dl):
        first.extend(batch["key"].tolist())
        if k == 1:
            break
    state = ds.state_dict()
    assert state["position"] == 2 * BATCH
    want = ref.order("random", seed=7, epoch=3).tolist()
    assert first + keys_of(dl) == want                       # the same workers resume at the position
    ds.load_state_dict(dict(state, epoch=5, position=3))
    assert keys_of(dl) == ref.order("random", seed=7, epoch=5).tolist()[3:]
    ref.close()


def test_batch_transform_and_packed_collate(tmp_path):
    p = str(tmp_path / "v.pagedb")
    ds = pagedb.open(p, "c")
    ds.add_field("data", "bytes")
    ds.add_field("name", "text")
    ds.add_field("x", "real")
    with ds.writer() as w:
        for i in range(10):
            w.append({"data": bytes([i]) * (1 + i % 3), "name": "n%d" % i, "x": i / 2}, id=i)
    ds.close()
    it = IterableDataset(p, kind="sequential")
    batches = list(DataLoader(it, batch_size=4, num_workers=2, multiprocessing_context="fork"))
    assert [len(b["name"]) for b in batches] == [4, 4, 2]
    b = batches[0]
    assert b["name"] == ["n0", "n1", "n2", "n3"] and b["x"].dtype == torch.float64
    assert isinstance(b["data"], list) and [t.tolist() for t in b["data"]] == [[0], [1, 1], [2, 2, 2], [3]]
    seen = []
    bt = IterableDataset(p, kind="sequential", fields=["data"],
                         batch_transform=lambda batch: (batch.ids.tolist(), batch.columns["data"][1].tolist()))
    for ids, off in DataLoader(bt, batch_size=3, num_workers=0):
        seen.append((ids, off))
    assert seen[0] == ([0, 1, 2], [0, 1, 3, 6]) and [i for s in seen for i in s[0]] == list(range(10))
    assert bt.position == 10


# --- shared batches: the ring of pagedb.torch.DataLoader ---------------------

@pytest.fixture(scope="module")
def bigpath(tmp_path_factory):
    """Samples of 1..40,000 bytes (a batch of 8 spans up to 320 KB), the
    first 8 bytes of each its key."""
    import random
    p = str(tmp_path_factory.mktemp("ring") / "r.pagedb")
    ds = pagedb.open(p, "c")
    ds.add_field("key", "int")
    ds.add_field("data", "bytes")
    rnd = random.Random(5)
    with ds.writer() as w:
        for i in range(300):
            n = rnd.randint(8, 40000)
            w.append({"key": i, "data": i.to_bytes(8, "little") + bytes(rnd.getrandbits(8) for _ in range(n - 8))},
                     id=i)
    ds.commit()
    ds.close()
    return p


@pytest.fixture
def takes(monkeypatch):
    """How many batches the main process took out of a ring."""
    import pagedb.torch as pt
    n = [0]
    take = pt._Ring.take

    def counting(self, d):
        n[0] += 1
        return take(self, d)
    monkeypatch.setattr(pt._Ring, "take", counting)
    return n


def as_bytes(batch):
    """KEY -> bytes of a batch of the default collate (a list of tensors:
    the lengths differ)."""
    return {int(k): bytes(t.numpy()) for k, t in zip(batch["key"], batch["data"])}


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_shared_batches_are_yours_to_keep(bigpath, ctx, takes):
    """Every batch kept until the end of the epoch (and beyond the loader)
    holds its own bytes: nothing the ring reuses is pointed at."""
    ref = pagedb.open(bigpath)
    want = {i: bytes(ref.view(i, "data")) for i in range(len(ref))}
    ds = IterableDataset(bigpath, kind="random", seed=3)
    dl = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context=ctx)
    kept = list(dl)
    del dl
    got = {}
    for b in kept:
        got.update(as_bytes(b))
    assert got == want
    assert [int(k) for b in kept for k in b["key"]] == ref.order("random", seed=3).tolist()
    assert takes[0] == len(kept) == -(-len(ref) // 8)          # every batch crossed in the ring
    ref.close()


def test_shared_batches_fall_back(bigpath, takes):
    """A batch larger than a slot crosses as torch moves it; so do all
    batches with shared_batches=False, persistent workers or pin_memory."""
    ref = pagedb.open(bigpath)
    want = {i: bytes(ref.view(i, "data")) for i in range(len(ref))}
    for kw in ({"slot_bytes": 4096}, {"shared_batches": False}, {"persistent_workers": True},
               {"pin_memory": True}):
        ds = IterableDataset(bigpath, kind="random", seed=1)
        got = {}
        for b in DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context="fork", **kw):
            got.update(as_bytes(b))
        assert got == want, kw
    assert takes[0] == 0
    ref.close()


def test_shared_batches_of_a_batch_transform(bigpath, takes):
    """A batch_transform's result: tensors anywhere in dicts, lists and
    tuples cross in the ring; other values (str, NumPy, None) as they are."""
    import numpy as np

    def bt(batch):
        data, off = batch.columns["data"]
        t = torch.from_numpy(data)
        return {"ids": torch.from_numpy(batch.ids), "parts": [t[:16], (t, torch.tensor(3.5))],
                "name": "b%d" % int(batch.ids[0]), "off": off, "none": None, "empty": torch.empty((0, 4))}
    ds = IterableDataset(bigpath, kind="sequential", fields=["data"], batch_transform=bt)
    ref = pagedb.open(bigpath)
    n = 0
    for b in DataLoader(ds, batch_size=16, num_workers=2, multiprocessing_context="fork"):
        ids = b["ids"].tolist()
        whole = b"".join(bytes(ref.view(i, "data")) for i in ids)
        assert bytes(b["parts"][1][0].numpy()) == whole and bytes(b["parts"][0].numpy()) == whole[:16]
        assert b["parts"][1][1].item() == 3.5 and b["name"] == "b%d" % ids[0] and b["none"] is None
        assert isinstance(b["off"], np.ndarray) and b["off"][-1] == len(whole)
        assert b["empty"].shape == (0, 4) and b["ids"].dtype == torch.int64
        n += len(ids)
    assert n == len(ref) and takes[0] == -(-len(ref) // 16)
    ref.close()


def test_shared_batches_after_a_break(bigpath, takes):
    """An epoch left after its first batch, then whole epochs: each
    iteration has a ring of its own, and the bytes stay right."""
    ref = pagedb.open(bigpath)
    want = {i: bytes(ref.view(i, "data")) for i in range(len(ref))}
    ds = IterableDataset(bigpath, kind="random", seed=9)
    dl = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context="fork", prefetch_factor=4)
    for epoch in range(3):
        ds.set_epoch(epoch)
        for b in dl:
            assert as_bytes(b) == {int(k): want[int(k)] for k in b["key"]}
            break
        ds.set_epoch(epoch + 10)
        got = {}
        for b in dl:
            got.update(as_bytes(b))
        assert got == want
    ref.close()


def ids_and_bytes(batch):
    """A batch_transform (module-level: spawn pickles it): the ids, and the
    values back to back (16 samples: up to 640 KB)."""
    return torch.from_numpy(batch.ids), torch.from_numpy(batch.columns["data"][0])


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_shared_batches_pool_reuses_only_what_nobody_holds(bigpath, ctx, takes):
    """Big tensors are made in buffers the main process reuses once no
    tensor uses them: a view kept of a batch (a slice, a NumPy array of it)
    keeps its buffer from being reused, and every batch dropped lets it go."""
    ref = pagedb.open(bigpath)
    ds = IterableDataset(bigpath, kind="random", seed=2, fields=["data"], batch_transform=ids_and_bytes)
    kept = []
    for k, (ids, data) in enumerate(DataLoader(ds, batch_size=16, num_workers=2, multiprocessing_context=ctx)):
        whole = b"".join(bytes(ref.view(i, "data")) for i in ids.tolist())
        assert bytes(data.numpy()) == whole                  # right when taken
        if k % 3 == 0:
            kept.append((whole[8:40], data[8:40]))          # a view keeps the buffer
        elif k % 3 == 1:
            kept.append((whole[:64], data.numpy()[:64]))     # so does a NumPy array of it
    for want, view in kept:                                  # nothing kept was written over
        assert bytes(view.numpy() if isinstance(view, torch.Tensor) else view) == want
    assert takes[0] == -(-len(ref) // 16)
    ref.close()
