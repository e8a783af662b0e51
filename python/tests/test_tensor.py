"""Tensor fields from Python: pagedb.Tensor declarations, NumPy arrays and
torch tensors written, read back as read-only NumPy arrays over the map (no
copy, aligned), batches collated into one array (fixed shapes) or a list /
padded array with shapes (variable ones), bfloat16 as torch tensors; and ids
delivered with samples (iterate, MapDataset, IterableDataset, DataLoader)."""
import gc
import subprocess
import sys

import numpy as np
import pytest

import pagedb

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64"]
SHAPES = {"fix": (3, 4), "var1": (None, 3), "var2": (2, None, None)}


def value(dtype, shape, i):
    """Sample I's value for a field of DTYPE and declared SHAPE."""
    dims = tuple((i * 3 + k) % 5 if d is None else d for k, d in enumerate(shape))
    rng = np.random.default_rng(i)
    if dtype == "bool":
        return rng.integers(0, 2, dims).astype(bool)
    return (rng.random(dims) * 100).astype(dtype)


@pytest.mark.parametrize("codec", [None, "lz4", "lz4hc"])
def test_round_trip_every_dtype_and_shape(path, codec):
    with pagedb.open(path, "c") as ds:
        for dt in DTYPES:
            for sn, shape in SHAPES.items():
                ds.add_field("%s_%s" % (dt, sn), pagedb.Tensor(dt, shape), codec)
        with ds.writer() as w:
            for i in range(6):
                w.append({"%s_%s" % (dt, sn): value(dt, shape, i) for dt in DTYPES for sn, shape in SHAPES.items()},
                         id=i)
        ds.commit()
    for read_mode in ("mmap", "copy"):
        with pagedb.open(path, read_mode=read_mode) as ds:
            f = ds.fields[0]
            assert (f.type, f.dtype, f.shape) == ("tensor", "bool", (3, 4))
            for i in range(6):
                s = ds[i]
                for dt in DTYPES:
                    for sn, shape in SHAPES.items():
                        a, want = s["%s_%s" % (dt, sn)], value(dt, shape, i)
                        assert isinstance(a, np.ndarray)
                        assert a.dtype == want.dtype and a.shape == want.shape
                        assert np.array_equal(a, want)
                        assert a.flags.aligned and not a.flags.writeable and a.flags.c_contiguous


def test_view_is_zero_copy_and_outlives_close(path):
    ds = pagedb.open(path, "c")
    ds.add_field("emb", pagedb.Tensor("float32", (768,)))
    with ds.writer() as w:
        for i in range(10):
            w.append({"emb": np.full(768, i, np.float32)}, id=i)
    ds.commit()
    a, b = ds[3]["emb"], ds[4]["emb"]
    # No copy: the array's memory is the map's, the same bytes pagedb's view gives.
    raw = np.frombuffer(ds.view(3, "emb"), np.uint8)
    assert a.__array_interface__["data"][0] == raw.__array_interface__["data"][0]
    assert a.__array_interface__["data"][0] % 4 == 0
    with pytest.raises(ValueError):
        a[0] = 1.0                              # read-only
    ds.close()
    gc.collect()
    assert (a == 3).all() and (b == 4).all()    # the map lives while the arrays do


def test_write_inputs(path):
    import torch
    with pagedb.open(path, "c") as ds:
        ds.add_field("m", pagedb.Tensor("int32", (2, 3)))
        ds.add_field("t", "tensor:float64:*")
        with ds.writer() as w:
            base = np.arange(12, dtype=np.int32).reshape(3, 4)
            w.append({"m": base[:2, :3]}, id=1)                                # not contiguous: made so
            w.append({"m": np.arange(6, dtype=">i4").reshape(2, 3)}, id=2)      # big-endian: made native
            w.append({"m": torch.arange(6, dtype=torch.int32).reshape(2, 3), "t": torch.ones(5, dtype=torch.float64)},
                     id=3)
            w.append({"m": torch.arange(12, dtype=torch.int32).reshape(3, 4)[:, 1:].T[:2].contiguous().T.T}, id=4)
        ds.commit()
        assert np.array_equal(ds[1]["m"], base[:2, :3])
        assert np.array_equal(ds[2]["m"], np.arange(6).reshape(2, 3))
        assert np.array_equal(ds[3]["m"], np.arange(6).reshape(2, 3)) and np.array_equal(ds[3]["t"], np.ones(5))
        assert ds[1]["t"] is None


def test_wrong_inputs(path):
    import torch
    with pagedb.open(path, "c") as ds:
        ds.add_field("emb", pagedb.Tensor("float32", (4,)))
        ds.add_field("seq", pagedb.Tensor("uint16", (None, 2)))
        with ds.writer() as w:
            cases = [
                ({"emb": np.zeros(4, np.float64)}, pagedb.MismatchError, "declared float32 (4,); given float64 (4,)"),
                ({"emb": np.zeros((2, 2), np.float32)}, pagedb.MismatchError, "the rank differs"),
                ({"emb": np.zeros(5, np.float32)}, pagedb.MismatchError, "the shape differs"),
                ({"seq": np.zeros((3, 3), np.uint16)}, pagedb.MismatchError, "declared uint16 (None, 2)"),
                ({"emb": np.array(1, np.float32)}, pagedb.MismatchError, "given 0 dimensions"),
                ({"emb": np.float32(1)}, TypeError, "give a numpy.ndarray"),
                ({"emb": torch.zeros(4, dtype=torch.bfloat16)}, pagedb.MismatchError, "given bfloat16"),
                ({"emb": b"0123456789abcdef"}, TypeError, "give a numpy.ndarray or a torch.Tensor"),
                ({"emb": [1.0, 2.0, 3.0, 4.0]}, TypeError, "give a numpy.ndarray"),
                ({"emb": np.zeros(4, np.complex64)}, TypeError, "has no pagedb dtype"),
            ]
            for sample, exc, text in cases:
                with pytest.raises(exc, match=text.replace("(", r"\(").replace(")", r"\)")):
                    w.append(sample)
            w.append({"emb": np.arange(4, dtype=np.float32)}, id=7)
        ds.commit()
        assert list(ds[7]["emb"]) == [0, 1, 2, 3]
        for bad in ("tensor:float32", "tensor:complex64:3", "tensor:float32:3,x"):
            with pytest.raises(ValueError):
                ds.add_field("bad", bad)
        with pytest.raises(ValueError):
            pagedb.Tensor("complex64", (3,))
        with pytest.raises(pagedb.RangeError):
            ds.add_field("bad", pagedb.Tensor("float32", (0,)))


def test_bfloat16(path):
    import torch
    with pagedb.open(path, "c") as ds:
        ds.add_field("h", pagedb.Tensor("bfloat16", (None, 2)))
        with ds.writer() as w:
            for i in range(4):
                w.append({"h": torch.arange(2 * i, dtype=torch.float32).reshape(i, 2).to(torch.bfloat16)}, id=i)
        ds.commit()
        t = ds[3]["h"]
        assert isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16 and t.shape == (3, 2)
        assert t.float().flatten().tolist() == list(range(6))
        padded, shapes = ds.read_packed([1, 3], ragged="pad").columns["h"]
        assert padded.dtype == torch.bfloat16 and tuple(padded.shape) == (2, 3, 2)
        assert shapes.tolist() == [[1, 2], [3, 2]]


def test_bfloat16_without_torch(path):
    """Without torch a bfloat16 value cannot be read: ImportError saying so."""
    with pagedb.open(path, "c") as ds:
        ds.add_field("h", pagedb.Tensor("bfloat16", (2,)))
        ds.add_field("f", pagedb.Tensor("float32", (2,)))
        with ds.writer() as w:
            w.append({"f": np.ones(2, np.float32)}, id=0)
        ds.commit()
    # Write one with torch in a child, read it without torch in another.
    code_write = ("import torch, pagedb; ds = pagedb.open(%r, 'w'); w = ds.writer(); "
                  "w.append({'h': torch.tensor([1.0, 2.0], dtype=torch.bfloat16)}, id=1); w.close(); ds.close()" % path)
    subprocess.run([sys.executable, "-c", code_write], check=True)
    code_read = ("import sys; sys.modules['torch'] = None; import pagedb; ds = pagedb.open(%r); "
                 "print(ds[1]['f']); ds[1]['h']" % path)
    r = subprocess.run([sys.executable, "-c", code_read], capture_output=True, text=True)
    assert r.returncode != 0 and "install torch" in r.stderr and "bfloat16" in r.stderr, r.stderr


def test_read_packed_collates(path):
    with pagedb.open(path, "c") as ds:
        ds.add_field("emb", pagedb.Tensor("float32", (2, 3)))
        ds.add_field("seq", pagedb.Tensor("int64", (None,)))
        ds.add_field("img", pagedb.Tensor("uint8", (None, 2, None)), "lz4")
        with ds.writer() as w:
            for i in range(8):
                w.append({"emb": np.full((2, 3), i, np.float32), "seq": np.arange(i, dtype=np.int64),
                          "img": np.full((i % 3, 2, i % 4), i, np.uint8)}, id=i)
        ds.commit()
        ids = [5, 1, 7, 0]
        b = ds.read_packed(ids)
        emb = b.columns["emb"]
        assert isinstance(emb, np.ndarray) and emb.shape == (4, 2, 3) and emb.dtype == np.float32
        assert [float(x[0, 0]) for x in emb] == [5.0, 1.0, 7.0, 0.0]
        assert [len(x) for x in b.columns["seq"]] == ids
        assert [x.shape for x in b.columns["img"]] == [(i % 3, 2, i % 4) for i in ids]
        assert np.array_equal(b[2]["img"], np.full((1, 2, 3), 7, np.uint8))
        padded, shapes = ds.read_packed(ids, ragged="pad").columns["seq"]
        assert padded.shape == (4, 7) and shapes.tolist() == [[5], [1], [7], [0]]
        assert padded[0].tolist() == [0, 1, 2, 3, 4, 0, 0]
        pb = ds.read_packed(ids, ragged="pad")
        assert np.array_equal(pb[1]["img"], np.full((1, 2, 1), 1, np.uint8))   # cut back to its shape
        with pytest.raises(ValueError):
            ds.read_packed(ids, ragged="nope")


def test_ids_iterate(path):
    with pagedb.open(path, "c") as ds:
        ds.add_field("x", "int")
        with ds.writer() as w:
            for i in range(20):
                w.append({"x": i * 10}, id=100 + i)
        ds.commit()
        order = ds.order("random", seed=3)
        got = [(s["id"], s["x"]) for s in ds.iterate(order, with_ids=True)]
        assert got == [(int(i), (int(i) - 100) * 10) for i in order]
        assert "id" not in next(iter(ds.iterate(order)))              # the default is unchanged
        it = ds.iterate(order, with_ids=True)
        assert [s["id"] for s in it.next_batch(5)] == order[:5].tolist()
        assert ds.read_packed(order[:4]).ids.tolist() == order[:4].tolist()   # Batch.ids


@pytest.mark.parametrize("workers", [0, 2])
def test_ids_and_tensors_through_the_loader(path, workers):
    import torch
    from pagedb.torch import DataLoader, IterableDataset, MapDataset
    with pagedb.open(path, "c") as ds:
        ds.add_field("emb", pagedb.Tensor("float32", (4,)))
        ds.add_field("seq", pagedb.Tensor("int16", (None,)))
        with ds.writer() as w:
            for i in range(40):
                w.append({"emb": np.full(4, i, np.float32), "seq": np.arange(i % 5, dtype=np.int16)}, id=1000 + i)
        ds.commit()
        order = ds.order("random", seed=5)
    ids_seen = []
    it = IterableDataset(path, kind="random", seed=5, with_ids=True, ragged="pad")
    for batch in DataLoader(it, batch_size=8, num_workers=workers):
        assert batch["emb"].shape == (len(batch["id"]), 4) and batch["emb"].dtype == torch.float32
        assert (batch["emb"][:, 0] == (batch["id"] - 1000).float()).all()
        seq, shapes = batch["seq"]
        assert seq.dtype == torch.int16 and shapes[:, 0].tolist() == ((batch["id"] - 1000) % 5).tolist()
        ids_seen += batch["id"].tolist()
    assert ids_seen == order.tolist()
    # The sample-by-sample path (a transform of one's own) carries the ids too.
    it = IterableDataset(path, kind="random", seed=5, with_ids=True, fields=["emb"],
                         transform=lambda s: {"id": s["id"], "emb": torch.from_numpy(s["emb"].copy())})
    seen = []
    for batch in DataLoader(it, batch_size=8, num_workers=workers):
        seen += batch["id"].tolist()
    assert seen == order.tolist()
    # Without with_ids: no "id".
    b = next(iter(DataLoader(IterableDataset(path, fields=["emb"]), batch_size=4, num_workers=workers)))
    assert "id" not in b
    # MapDataset.
    m = MapDataset(path, with_ids=True)
    s = m[3]
    assert s["id"] == int(m.ids[3]) and torch.equal(s["emb"], torch.full((4,), s["id"] - 1000.0))
    assert "id" not in MapDataset(path)[3]
