"""Many samples in one call: Dataset.read_packed (a pagedb.Batch: one array
per field), Iterator.next_batch (sample dicts) and Iterator.next_packed --
the bytes against ds[i] for every type, codec and read mode, missing values,
missing samples, positions after a failure, and batches that outlive the
dataset (a packed batch is a copy: it pins nothing)."""
import numpy as np
import pytest

import pagedb
from conftest import make, sample

N = 40


@pytest.mark.parametrize("codec", [None, "lz4"])
@pytest.mark.parametrize("read_mode", ["mmap", "copy"])
def test_read_packed_matches_getitem(path, codec, read_mode):
    make(path, N, codec).close()
    ds = pagedb.open(path, read_mode=read_mode)
    ids = [17, 3, 3, 39, 0, 8]
    b = ds.read_packed(ids)
    assert isinstance(b, pagedb.Batch) and len(b) == len(ids)
    assert b.ids.dtype == np.int64 and b.ids.tolist() == ids
    data, off = b.columns["image"]
    assert data.dtype == np.uint8 and off.dtype == np.int64 and len(off) == len(ids) + 1 and off[0] == 0
    for k, i in enumerate(ids):
        want = sample(i)
        assert bytes(data[off[k]:off[k + 1]]) == want["image"]
        got = b[k]
        assert bytes(got["image"]) == want["image"] and got["label"] == want["label"]
        assert got["score"] == want["score"] and got["caption"] == want["caption"]
    assert b.columns["label"].dtype == np.int64 and b.columns["score"].dtype == np.float64
    assert b.values("caption") == [sample(i)["caption"] for i in ids]
    assert [s["label"] for s in b] == [sample(i)["label"] for i in ids]
    assert b[-1]["label"] == sample(8)["label"]
    with pytest.raises(IndexError):
        b[len(ids)]
    raw = ds.read_packed(ids, ["caption"], raw=True)
    assert list(raw.columns) == ["caption"] and bytes(raw[0]["caption"]) == sample(17)["caption"].encode()
    assert len(ds.read_packed([])) == 0
    ds.close()
    assert bytes(b[0]["image"]) == sample(17)["image"]   # a copy: it outlives the dataset


def test_missing_values_and_samples(path):
    ds = pagedb.open(path, "c")
    ds.add_field("a", "bytes")
    ds.add_field("n", "int")
    with ds.writer() as w:
        w.append({"a": b"x" * 5, "n": 1}, id=0)
        w.append({"n": 2}, id=1)                          # no bytes
        w.append({"a": b"yy"}, id=2)                      # no int
    ds.commit()
    b = ds.read_packed([0, 1, 2])
    assert b[1] == {"a": None, "n": 2} and b[2]["n"] is None and bytes(b[2]["a"]) == b"yy"
    assert b.present["a"].tolist() == [True, False, True] and b.present["n"].tolist() == [True, True, False]
    assert b.columns["a"][1].tolist() == [0, 5, 5, 7]
    with pytest.raises(pagedb.NotFoundError, match="sample 9") as e:
        ds.read_packed([0, 9])
    assert e.value.code == pagedb.NOTFOUND
    with pytest.raises(pagedb.RangeError):
        ds.read_packed([0], ["nosuch"])
    with pytest.raises(TypeError):
        ds.read_packed([0], 1.5)
    ds.close()
    with pytest.raises(pagedb.MisuseError, match="closed"):
        ds.read_packed([0])


def test_iterator_batches(path):
    ds = make(path, N)
    order = ds.order("random", seed=3)
    it = ds.iterate(order, ["image", "label"])
    got = []
    for chunk in iter(lambda: it.next_batch(7), []):
        assert 1 <= len(chunk) <= 7
        got.extend(chunk)
    assert it.position == N and it.next_batch(7) == []
    assert [s["label"] for s in got] == [sample(i)["label"] for i in order]
    assert all(bytes(s["image"]) == sample(i)["image"] for s, i in zip(got, order))
    it = ds.iterate(order, ["image", "label"])
    it.position = 5
    ids = []
    while (p := it.next_packed(16)) is not None:
        b = pagedb.Batch(*p)
        ids.extend(b.ids.tolist())
        assert all(bytes(b[k]["image"]) == sample(i)["image"] for k, i in enumerate(b.ids))
    assert ids == order[5:].tolist()
    with pytest.raises(ValueError):
        it.next_batch(0)
    # A failing id: next_batch stops before it; alone, it raises and is passed.
    ds.delete(int(order[2]))
    ds.commit()
    it = ds.iterate(order[:6])
    first = it.next_batch(6)
    assert len(first) == 2 and it.position == 2
    with pytest.raises(pagedb.NotFoundError):
        it.next_batch(6)
    assert it.position == 3 and len(it.next_batch(6)) == 3
    it = ds.iterate(order[:6])
    with pytest.raises(pagedb.NotFoundError):
        it.next_packed(6)
    assert it.position == 6 and it.next_packed(6) is None   # a failed packed read passes its batch
    it = ds.iterate(order[3:6])
    it.close()
    for call in (lambda: it.next_packed(2), lambda: it.next_batch(2)):
        with pytest.raises(pagedb.MisuseError, match="closed"):
            call()
    ds.close()
