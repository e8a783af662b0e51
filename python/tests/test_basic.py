"""Round trips of every type and codec, the three ways to read a value, and
the exception of every kind of bad call."""
import threading

import numpy as np
import pytest

import pagedb
from conftest import make, sample, image


@pytest.mark.parametrize("codec", [None, "lz4", "lz4hc", "lz4hc:12", "lz4:4"])
@pytest.mark.parametrize("read_mode", ["mmap", "copy"])
def test_round_trip(path, codec, read_mode):
    make(path, 30, codec).close()
    with pagedb.open(path, read_mode=read_mode, verify=True) as ds:
        assert len(ds) == 30
        f = ds.fields
        assert [x.name for x in f] == ["image", "label", "score", "caption"]
        assert [x.type for x in f] == ["bytes", "int", "real", "text"]
        assert f[0].codec == (codec or "none").split(":")[0]
        for i in range(30):
            want = sample(i)
            got = ds[i]
            assert isinstance(got["image"], memoryview) and got["image"].readonly
            assert bytes(got["image"]) == want["image"]
            assert got["label"] == want["label"] and isinstance(got["label"], int)
            assert got["score"] == want["score"] and isinstance(got["score"], float)
            assert got["caption"] == want["caption"]
            assert ds.read(i, "image") == want["image"]
            assert bytes(ds.view(i, 0)) == want["image"]
            out = np.zeros(len(want["image"]) + 10, np.uint8)
            assert ds.read(i, "image", out=out) == len(want["image"])
            assert out[:len(want["image"])].tobytes() == want["image"]
        batch = ds.read_batch(np.arange(30), "image")
        assert [bytes(b) for b in batch] == [image(i) for i in range(30)]
        assert ds.read_batch([3, 1], "caption") == [sample(3)["caption"], sample(1)["caption"]]
        assert [bytes(b) for b in ds.read_batch([3], "caption", raw=True)] == [sample(3)["caption"].encode()]


def test_zero_copy_is_the_map(path):
    """In mmap mode a field stored as given is not copied: two views of one
    value share their address, and numpy sees the same bytes."""
    make(path, 5).close()
    with pagedb.open(path) as ds:
        a = np.frombuffer(ds.view(2, "image"), np.uint8)
        b = np.frombuffer(ds[2]["image"], np.uint8)
        assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        assert not a.flags.writeable
        with pytest.raises(TypeError):
            ds.view(2, "image")[0:1] = b"x"
        with pytest.raises(ValueError):
            a[0] = 1
        assert ds.zero_copy


def test_auto_ids_missing_fields_and_none(path):
    ds = pagedb.open(path, "c")
    ds.add_field("a", "bytes")
    ds.add_field("n", "int")
    with ds.writer() as w:
        ids = [w.append({"a": b"x" * i}) for i in range(3)]
        ids.append(w.append({"n": 5, "a": None}))
    ds.commit()
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert ds[ids[0]]["n"] is None
    assert ds[ids[3]] == {"a": None, "n": 5}
    assert bytes(ds[ids[2]]["a"]) == b"xx"
    assert bytes(ds.get(ids[2], ["a"])["a"]) == b"xx"
    ds.close()


def test_errors(path):
    ds = make(path, 5)
    with pytest.raises(pagedb.NotFoundError) as e:
        ds[99]
    assert e.value.code == pagedb.NOTFOUND and e.value.codename == "PAGEDB_NOTFOUND"
    assert "99" in str(e.value)
    with pytest.raises(KeyError):          # a NotFoundError is a KeyError too
        ds[-1]
    with pytest.raises(pagedb.RangeError):
        ds.read(0, "nosuch")
    with pytest.raises(pagedb.RangeError):
        ds.read(0, 17)
    with pytest.raises(TypeError):
        ds["zero"]
    with pytest.raises(pagedb.MismatchError):
        ds.read(0, "label", out=bytearray(8))
    with pytest.raises(pagedb.TooBigError):
        ds.read(0, "image", out=bytearray(3))
    with pytest.raises(BufferError):
        ds.read(0, "image", out=b"read-only buffer")
    with ds.writer() as w:
        with pytest.raises(pagedb.ConstraintError) as e:
            w.append({"label": 1}, id=3)
        assert e.value.code == pagedb.CONSTRAINT
        with pytest.raises(TypeError):
            w.append({"label": "three"})
        with pytest.raises(TypeError):
            w.append({"image": 3})
        with pytest.raises(TypeError):
            w.append({"image": "a str for BYTES"})
        with pytest.raises(pagedb.RangeError):
            w.append({"nosuch": 1})
        with pytest.raises(pagedb.MisuseError):
            w.append({"label": 1}, id=-5)
        assert w.append({"label": 1}, id=100) == 100   # the writer goes on after errors
    ds.commit()
    with pytest.raises(pagedb.MisuseError):
        ds.add_field("bad name!", "int")
    with pytest.raises(pagedb.ConstraintError):
        ds.add_field("LABEL", "int")
    with pytest.raises(ValueError):
        ds.add_field("x", "float")
    with pytest.raises(ValueError):
        ds.add_field("x", "bytes", "brotli")
    with pytest.raises(ValueError):
        ds.order("shuffled")
    with pytest.raises(pagedb.MisuseError):
        ds.order("random", rank=2, world=2)
    with pytest.raises(pagedb.Error) as e:
        ds.sql("SELECT nosuchcolumn FROM sample")
    assert e.value.code == pagedb.ERROR
    with pytest.raises(pagedb.ReadOnlyError):
        ds.sql("DELETE FROM sample")
    ds.close()
    assert ds.closed
    ds.close()                                         # twice: a no-op
    for call in (lambda: ds[0], lambda: len(ds), lambda: ds.writer(), lambda: ds.commit(),
                 lambda: ds.order(), lambda: ds.read(0, 0), lambda: ds.sql("SELECT 1")):
        with pytest.raises(pagedb.MisuseError, match="closed"):
            call()
    with pytest.raises(pagedb.CantOpenError) as e:
        pagedb.open(path + ".nosuch")
    assert e.value.code == pagedb.CANTOPEN_NOENT
    with pytest.raises(ValueError):
        pagedb.open(path, "x")
    ro = pagedb.open(path)
    with pytest.raises(pagedb.ReadOnlyError):
        ro.writer()
    with pytest.raises(pagedb.ReadOnlyError):
        ro.add_field("more", "int")
    with pytest.raises(pagedb.ReadOnlyError):
        ro.delete(0)
    ro.close()
    w = pagedb.open(path, "w")
    with pytest.raises(pagedb.BusyError) as e:
        pagedb.open(path, "w")
    assert e.value.code == pagedb.BUSY_LOCKED
    w.close()


def test_not_a_dataset(tmp_path):
    p = tmp_path / "junk.pagedb"
    p.write_bytes(b"this is not a pagedb data file" * 100)
    with pytest.raises(pagedb.Error) as e:
        pagedb.open(str(p))
    assert e.value.code & 0xff in (pagedb.NOTADB, pagedb.CANTOPEN, pagedb.CORRUPT)


def test_writer_closed_with_dataset(path):
    ds = make(path, 3)
    w = ds.writer()
    w.append({"label": 7}, id=50)
    ds.close()                       # flushes and commits what w wrote
    assert w.closed
    with pytest.raises(pagedb.MisuseError):
        w.append({"label": 8})
    w.close()
    with pagedb.open(path) as ds:
        assert ds[50]["label"] == 7 and len(ds) == 4


def test_order_sql_delete(path):
    ds = make(path, 40)
    o = ds.order("random", seed=3, epoch=1)
    assert sorted(o.tolist()) == list(range(40)) and o.dtype == np.int64
    assert (ds.order("random", seed=3, epoch=1) == o).all()
    assert not (ds.order("random", seed=3, epoch=2) == o).all()
    q = ds.order("quasi_random", seed=3)
    assert sorted(q.tolist()) == list(range(40))
    parts = [ds.order("random", seed=3, epoch=1, rank=r, world=3) for r in range(3)]
    assert sum(len(p) for p in parts) == 42                     # padded to 3 x 14
    assert set(np.concatenate(parts).tolist()) == set(range(40))
    rows = ds.sql("SELECT id, label FROM sample WHERE label < 2 ORDER BY id")
    assert rows == [(i, i % 10) for i in range(40) if i % 10 < 2]
    assert ds.sql("SELECT 1.5, NULL, 'x', -7") == [(1.5, None, "x", -7)]
    sub = ds.sql_ids("SELECT id FROM sample WHERE label < 5")
    assert sorted(sub.tolist()) == [i for i in range(40) if i % 10 < 5]
    full = ds.order("quasi_random", seed=9, epoch=4)
    so = ds.order("quasi_random", seed=9, epoch=4, ids=sub)
    assert so.tolist() == [i for i in full.tolist() if i % 10 < 5]   # pagedb's order, restricted
    halves = [ds.order("random", seed=9, rank=r, world=2, ids=sub) for r in range(2)]
    assert sorted(np.concatenate(halves).tolist()) == sorted(sub.tolist())
    ds.delete(5)
    assert bytes(ds[5]["image"]) == image(5)     # until the commit
    ds.commit()
    with pytest.raises(pagedb.NotFoundError):
        ds[5]
    assert len(ds) == 39 and 5 not in ds.ids().tolist()
    ds.close()


def test_iterator_and_position(path):
    make(path, 25).close()
    with pagedb.open(path) as ds:
        order = ds.order("random", seed=1)
        it = ds.iterate(order, fields=["label", "image"], window=1 << 16)
        assert len(it) == 25
        got = [next(it) for _ in range(10)]
        assert it.position == 10
        it2 = ds.iterate(order, fields=["label", "image"])
        it2.position = 10
        rest = list(it2)
        assert [bytes(s["image"]) for s in got + rest] == [image(i) for i in order]
        assert [s["label"] for s in got + rest] == [i % 10 for i in order]
        assert [s["label"] for s in ds] == [i % 10 for i in ds.order("sequential")]
        it.close()
        with pytest.raises(pagedb.MisuseError):
            next(it)


def test_add_field_later(path):
    ds = make(path, 4)
    v = ds[1]["image"]                 # a live view and pooled readers
    ds.add_field("extra", "real")
    assert ds.fields[-1].name == "extra" and ds[1]["extra"] is None
    with ds.writer() as w:
        w.append({"extra": 2.5, "label": 1}, id=9)
    ds.commit()
    assert ds[9]["extra"] == 2.5 and bytes(v) == image(1)
    ds.close()


def test_parallel_writers(path):
    """Two threads, each with its own writer, append at once."""
    ds = pagedb.open(path, "c")
    ds.add_field("data", "bytes", "lz4")
    ds.add_field("n", "int")

    def write(base):
        with ds.writer() as w:
            for i in range(300):
                w.append({"data": (b"%d " % (base + i)) * 50, "n": base + i}, id=base + i)
    ts = [threading.Thread(target=write, args=(k * 1000,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ds.commit()
    assert len(ds) == 600
    for i in list(range(300)) + list(range(1000, 1300)):
        s = ds[i]
        assert s["n"] == i and bytes(s["data"]) == (b"%d " % i) * 50
    ds.close()
