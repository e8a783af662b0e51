"""Tensor fields through every loader path (issue 27): the batch path that
fills a batch's tensors in one call (Dataset.read_into, Iterator.next_into:
python/gather.c) and its refusals of bad input; the ids delivered equal
the order's ids over every path of pagedb.torch (fixed-shape fast path,
packed path, sample by sample, a transform of one's own, MapDataset,
workers and the shared ring, persistent workers, ds.iterate); and
variable-shape tensors through the default collation (pagedb.torch.collate:
a list, or a padded tensor with shapes)."""
import functools

import numpy as np
import pytest

import pagedb

torch = pytest.importorskip("torch")
from pagedb.torch import DataLoader, IterableDataset, MapDataset, collate  # noqa: E402

N = 45


def emb(i):
    return np.arange(6, dtype=np.float32).reshape(2, 3) + i


def seq(i):
    return np.arange(i % 4 + 1, dtype=np.int16) + i


def grid(i):
    return np.full((i % 3 + 1, i % 2 + 1), i, dtype=np.float32)


@pytest.fixture
def tpath(tmp_path):
    """N samples, ids 500.. : emb float32 (2, 3), label INT, score REAL,
    seq int16 (None,), grid float32 (None, None), blob BYTES."""
    p = str(tmp_path / "t.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("emb", pagedb.Tensor("float32", (2, 3)))
        ds.add_field("label", "int")
        ds.add_field("score", "real")
        ds.add_field("seq", pagedb.Tensor("int16", (None,)))
        ds.add_field("grid", pagedb.Tensor("float32", (None, None)))
        ds.add_field("blob", "bytes")
        with ds.writer() as w:
            for i in range(N):
                w.append({"emb": emb(i), "label": i * 7, "score": i / 4, "seq": seq(i), "grid": grid(i),
                          "blob": b"x" * (i % 5)}, id=500 + i)
        ds.commit()
    return p


def test_read_into_values(tpath):
    with pagedb.open(tpath) as ds:
        ids = np.array([510, 500, 544, 510], np.int64)
        e, lab, sc = np.empty((4, 2, 3), np.float32), np.empty(4, np.int64), np.empty(4, np.float64)
        assert ds.read_into(ids, ["emb", "label", "score"], [e, lab, sc]) == 4
        for k, i in enumerate(ids - 500):
            assert np.array_equal(e[k], emb(i)) and lab[k] == i * 7 and sc[k] == i / 4
        # A torch tensor through its NumPy view: the one copy lands in the tensor.
        t = torch.empty((2, 2, 3))
        ds.read_into([501, 502], "emb", [t.numpy()])
        assert torch.equal(t[1], torch.from_numpy(emb(2)))
        assert ds.read_into([], ["emb"], [np.empty((0, 2, 3), np.float32)]) == 0


@pytest.mark.parametrize("read_mode", ["mmap", "copy"])
def test_read_into_compressed_and_copy_mode(tmp_path, read_mode):
    """A compressed field (decompressed into the reader's buffer, then
    copied) and copy mode give the same values."""
    p = str(tmp_path / "z.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("emb", pagedb.Tensor("float32", (2, 3)), "lz4")
        ds.add_field("raw", pagedb.Tensor("int64", (4,)))
        with ds.writer() as w:
            for i in range(300):    # more than one pagedb_read_batch of 256
                w.append({"emb": emb(i), "raw": np.arange(4, dtype=np.int64) * i}, id=i)
        ds.commit()
    with pagedb.open(p, read_mode=read_mode) as ds:
        ids = ds.order("random", seed=1)
        e, r = np.empty((300, 2, 3), np.float32), np.empty((300, 4), np.int64)
        assert ds.read_into(ids, ["emb", "raw"], [e, r]) == 300
        for k, i in enumerate(ids):
            assert np.array_equal(e[k], emb(i)) and np.array_equal(r[k], np.arange(4) * i)


def test_read_into_refuses_bad_input(tpath):
    with pagedb.open(tpath) as ds:
        good = np.empty((2, 2, 3), np.float32)
        cases = [
            # wrong field type: variable shape, BYTES
            (["seq"], [np.empty(2, np.int16)], pagedb.MismatchError, "variable dimension"),
            (["blob"], [np.empty(2, np.uint8)], pagedb.MismatchError, "not a tensor, INT or REAL"),
            # wrong buffer size, dtype, layout, writability, count
            (["emb"], [np.empty((3, 2, 3), np.float32)], pagedb.MismatchError, "needs 48 bytes"),
            (["emb"], [np.empty((2, 2, 2), np.float32)], pagedb.MismatchError, "needs 48 bytes"),
            (["emb"], [np.empty((2, 2, 3), np.float64)], pagedb.MismatchError, "holds float32"),
            (["label"], [np.empty(2, np.int32)], pagedb.MismatchError, "holds int64"),
            (["emb"], [np.empty((2, 2, 6), np.float32)[:, :, ::2]], pagedb.MisuseError, "C-contiguous"),
            (["emb"], [bytes(48)], pagedb.MisuseError, "not writable"),
            (["emb"], [np.frombuffer(bytes(48), np.float32).reshape(2, 2, 3)], pagedb.MisuseError, "not writable"),
            (["emb"], [], pagedb.MisuseError, "0 buffers for 1 fields"),
            (["emb"], [good, good], pagedb.MisuseError, "2 buffers for 1 fields"),
            (["emb"], good, pagedb.MisuseError, "2 buffers for 1 fields"),   # an array is not a list of them
            (["nope"], [good], pagedb.RangeError, "no field named .nope."),
            (None, [good], pagedb.MisuseError, "name the fields"),
        ]
        for fields, outs, exc, msg in cases:
            with pytest.raises(exc, match=msg):
                ds.read_into([500, 501], fields, outs)
        with pytest.raises(TypeError):
            ds.read_into([500, 501], ["emb"], 5)
        # Bad ids: absent, negative, not integers.  The message names the id and the entry.
        for bad, msg in (([500, 9999], "sample 9999 \\(entry 1"), ([-3, 500], "sample -3 \\(entry 0")):
            with pytest.raises(pagedb.NotFoundError, match=msg):
                ds.read_into(bad, ["emb"], [good])
        with pytest.raises((TypeError, ValueError)):
            ds.read_into(["a", "b"], ["emb"], [good])
        # Nothing was written into a buffer refused before reading.
        probe = np.full((3, 2, 3), 7, np.float32)
        with pytest.raises(pagedb.MismatchError):
            ds.read_into([500, 501], ["emb"], [probe])
        assert (probe == 7).all()
    with pytest.raises(pagedb.Error):
        ds.read_into([500], ["emb"], [good[:1]])   # closed


def test_next_into_position_and_errors(tpath):
    with pagedb.open(tpath) as ds:
        order = ds.order("random", seed=2)
        it = ds.iterate(order, ["emb", "label"])
        got = []
        while True:
            k = min(8, len(it) - it.position)
            e, lab = np.empty((max(k, 1), 2, 3), np.float32), np.empty(max(k, 1), np.int64)
            if k == 0:
                assert it.next_into(8, [np.empty((8, 2, 3), np.float32), np.empty(8, np.int64)]) == 0
                break
            pos = it.position
            with pytest.raises(pagedb.MismatchError):             # refused: the position stays
                it.next_into(k, [np.empty((k + 1, 2, 3), np.float32), lab])
            assert it.position == pos
            assert it.next_into(k, [e, lab]) == k and it.position == pos + k
            got += lab.tolist()
            assert all(np.array_equal(e[j], emb(lab[j] // 7)) for j in range(k))
        assert got == [(int(i) - 500) * 7 for i in order]
        for k in (0, -1):
            with pytest.raises(pagedb.MisuseError, match="give 1 to"):
                it.next_into(k, [e, lab])
        # An id that is not there: NotFoundError, the position unmoved.
        it = ds.iterate(np.array([500, 123456, 501], np.int64), ["emb"])
        with pytest.raises(pagedb.NotFoundError, match="sample 123456 \\(entry 1"):
            it.next_into(3, [np.empty((3, 2, 3), np.float32)])
        assert it.position == 0
        it.close()
        with pytest.raises(pagedb.MisuseError, match="closed"):
            it.next_into(3, [np.empty((3, 2, 3), np.float32)])


def test_next_into_bfloat16(tmp_path):
    p = str(tmp_path / "b.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("h", pagedb.Tensor("bfloat16", (3,)))
        with ds.writer() as w:
            for i in range(10):
                w.append({"h": torch.arange(3, dtype=torch.bfloat16) + i}, id=i)
        ds.commit()
        bits = np.empty((10, 3), np.uint16)
        ds.read_into(np.arange(10), ["h"], [bits])
        got = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
        assert torch.equal(got, torch.arange(3, dtype=torch.bfloat16) + torch.arange(10)[:, None].to(torch.bfloat16))
        with pytest.raises(pagedb.MismatchError, match="holds bfloat16"):
            ds.read_into([0], ["h"], [np.empty((1, 3), np.float16)])
    b = next(iter(DataLoader(IterableDataset(p, kind="sequential"), batch_size=4)))
    assert b["h"].dtype == torch.bfloat16 and torch.equal(b["h"][1], torch.arange(3, dtype=torch.bfloat16) + 1)


def _ids_of(loader):
    out = []
    for b in loader:
        out += (b["id"].tolist() if isinstance(b, dict) else [b[0]["id"]]) if not isinstance(b, list) else \
            [s["id"] for s in b]
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_ids_equal_the_order_on_every_loader_path(tpath, workers):
    with pagedb.open(tpath) as ds:
        order = ds.order("random", seed=9).tolist()
    mk = functools.partial(IterableDataset, tpath, kind="random", seed=9, with_ids=True)
    paths = {
        "fixed": mk(fields=["emb", "label", "score"]),              # next_into: one copy
        "packed": mk(fields=["emb", "seq", "blob"]),                # next_packed, collate_packed
        "packed-pad": mk(fields=["seq", "grid"], ragged="pad"),
        "transform": mk(fields=["emb", "seq"], transform=lambda s: {"id": s["id"], "n": len(s["seq"])}),
        "batch_transform": mk(fields=["emb"], batch_transform=lambda b: {"id": torch.from_numpy(b.ids)}),
    }
    for name, it in paths.items():
        seen = []
        for b in DataLoader(it, batch_size=8, num_workers=workers):
            seen += b["id"].tolist()
            if "emb" in b:
                assert torch.equal(b["emb"], torch.stack([torch.from_numpy(emb(i - 500)) for i in b["id"].tolist()]))
            if "label" in b:
                assert b["label"].tolist() == [(i - 500) * 7 for i in b["id"].tolist()]
        assert seen == order, name
    # Sample by sample (batch_size None): each sample's "id".
    assert [s["id"] for s in DataLoader(mk(fields=["emb"]), batch_size=None, num_workers=workers)] == order
    # A plain torch DataLoader over the IterableDataset (told the batch size, as
    # pagedb.torch.DataLoader would tell it), collating with pagedb.torch.collate.
    plain = torch.utils.data.DataLoader(mk(fields=["seq"], batch_size=8), batch_size=8, collate_fn=collate,
                                        num_workers=workers)
    assert sum((b["id"].tolist() for b in plain), []) == order
    # Persistent workers over two epochs, and a resume mid-epoch.
    if workers:
        it = mk(fields=["emb"])
        dl = DataLoader(it, batch_size=8, num_workers=workers, persistent_workers=True)
        for epoch in (0, 1):
            it.set_epoch(epoch)
            with pagedb.open(tpath) as ds:
                want = ds.order("random", seed=9, epoch=epoch).tolist()
            assert sum((b["id"].tolist() for b in dl), []) == want
    it = mk(fields=["emb", "label"])
    dl = DataLoader(it, batch_size=8, num_workers=workers)
    first = next(iter(dl))["id"].tolist()
    state = it.state_dict()
    it2 = mk(fields=["emb", "label"])
    it2.load_state_dict(state)
    assert first + sum((b["id"].tolist() for b in DataLoader(it2, batch_size=8, num_workers=workers)), []) == order
    # MapDataset: the ids of a sampler's indices.
    m = MapDataset(tpath, with_ids=True, fields=["emb", "seq"])
    seen = sum((b["id"].tolist() for b in DataLoader(m, batch_size=8, num_workers=workers)), [])
    assert seen == m.ids.tolist()
    # ds.iterate: one by one and next_batch.
    with pagedb.open(tpath) as ds:
        assert [s["id"] for s in ds.iterate(order, ["emb"], with_ids=True)] == order
        assert ds.read_packed(order[:5]).ids.tolist() == order[:5]


def test_fixed_path_falls_back_on_a_missing_value(tmp_path):
    """A batch with a sample lacking a fixed field is read the packed way."""
    p = str(tmp_path / "m.pagedb")
    with pagedb.open(p, "c") as ds:
        ds.add_field("emb", pagedb.Tensor("float32", (2,)))
        ds.add_field("label", "int")
        with ds.writer() as w:
            for i in range(12):
                w.append({"label": i} if i == 5 else {"emb": np.full(2, i, np.float32), "label": i}, id=i)
        ds.commit()
    seen = []
    for b in DataLoader(IterableDataset(p, kind="sequential", with_ids=True), batch_size=4):
        seen += b["id"].tolist()
        if 5 in b["id"].tolist():
            assert isinstance(b["emb"], list) and b["emb"][b["id"].tolist().index(5)] is None
        else:
            assert torch.equal(b["emb"][:, 0], b["id"].float())
    assert seen == list(range(12))


@pytest.mark.parametrize("workers", [0, 2])
def test_variable_shapes_through_the_default_collate(tpath, workers):
    ids = list(range(500, 500 + N))
    # MapDataset through pagedb.torch.DataLoader, no collate_fn given: torch's
    # default_collate would refuse tensors of different shapes.
    for ragged in ("list", "pad"):
        m = MapDataset(tpath, fields=["seq", "grid", "emb", "label"], ragged=ragged, with_ids=True)
        seen = []
        for b in DataLoader(m, batch_size=6, num_workers=workers):
            bids = b["id"].tolist()
            seen += bids
            assert b["emb"].shape == (len(bids), 2, 3) and b["label"].tolist() == [(i - 500) * 7 for i in bids]
            if ragged == "list":
                assert [t.tolist() for t in b["seq"]] == [seq(i - 500).tolist() for i in bids]
                assert all(torch.equal(t, torch.from_numpy(grid(i - 500))) for t, i in zip(b["grid"], bids))
            else:
                pad, shapes = b["seq"]
                assert pad.dtype == torch.int16 and shapes.dtype == torch.int64
                for k, i in enumerate(bids):
                    n = int(shapes[k, 0])
                    assert pad[k, :n].tolist() == seq(i - 500).tolist() and (pad[k, n:] == 0).all()
                gpad, gshapes = b["grid"]
                for k, i in enumerate(bids):
                    r, c = gshapes[k].tolist()
                    assert torch.equal(gpad[k, :r, :c], torch.from_numpy(grid(i - 500)))
        assert seen == ids
    # IterableDataset with a transform of its own (sample by sample), default collate.
    it = IterableDataset(tpath, kind="sequential", fields=["grid"], ragged="pad",
                         transform=lambda s: {"grid": torch.from_numpy(s["grid"].copy())})
    b = next(iter(DataLoader(it, batch_size=5, num_workers=workers)))
    pad, shapes = b["grid"]
    assert pad.shape == (5, 3, 2) and shapes.tolist() == [list(grid(i).shape) for i in range(5)]
    # The same shapes everywhere: exactly default_collate's result.
    same = [{"a": torch.ones(3), "b": 1}, {"a": torch.zeros(3), "b": 2}]
    r = collate(same, "pad")
    assert torch.equal(r["a"], torch.stack([torch.ones(3), torch.zeros(3)])) and r["b"].tolist() == [1, 2]
    # NumPy arrays of different shapes, and different ranks (a list even for 'pad').
    assert [t.tolist() for t in collate([np.zeros(2), np.ones(1)])] == [[0, 0], [1]]
    assert isinstance(collate([torch.zeros(2), torch.zeros(2, 2)], "pad"), list)
    with pytest.raises(ValueError, match="ragged"):
        collate(same, "nope")
    with pytest.raises(ValueError, match="ragged"):
        MapDataset(tpath, ragged="nope")
