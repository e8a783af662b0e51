"""Parts (issue 26): datasets written apart -- by processes of a
multiprocessing pool here -- committed into one by reference, all or none:
commit_parts(), seal(), parts(), orphan_parts()."""
import multiprocessing
import os

import pytest

import pagedb
from conftest import sample


def fields(ds):
    ds.add_field("image", "bytes")
    ds.add_field("label", "int")
    ds.add_field("score", "real")
    ds.add_field("caption", "text", "lz4")


def write_part(args):
    """A worker: write samples LO..HI-1 into a part at PATH, return (path, seal)."""
    path, lo, hi = args
    ds = pagedb.open(path, "c")
    fields(ds)
    with ds.writer() as w:
        for i in range(lo, hi):
            w.append(sample(i), id=i)
    ds.commit()
    seal = ds.seal()
    ds.close()
    return path, seal


def test_parts_from_a_process_pool(tmp_path):
    path = str(tmp_path / "ds.pagedb")
    os.mkdir(path + ".parts")
    jobs = [(os.path.join(path + ".parts", "p%d" % k), 25 * k, 25 * k + 25) for k in range(8)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        done = pool.map(write_part, jobs)
    ds = pagedb.open(path, "c")
    fields(ds)
    assert ds.commit_parts([(p, "task-%d" % k, 0, seal) for k, (p, seal) in enumerate(done)]) == 200
    assert len(ds) == 200
    for i in range(200):                                 # every sample once, as written
        s = ds[i]
        want = sample(i)
        assert bytes(s["image"]) == want["image"] and s["label"] == want["label"]
        assert s["caption"] == want["caption"] and s["score"] == want["score"]
    assert sorted(int(x) for x in ds.order("random", seed=1)) == list(range(200))
    parts = ds.parts()
    assert [p["name"] for p in parts] == ["task-%d" % k for k in range(8)]
    assert [p["uri"] for p in parts] == ["ds.pagedb.parts/p%d" % k for k in range(8)]
    assert [(p["id_min"], p["id_max"], p["samples"]) for p in parts] == [(25 * k, 25 * k + 24, 25) for k in range(8)]
    assert ds.sql("SELECT label, count(*) FROM sample GROUP BY label ORDER BY label") == [(l, 20) for l in range(10)]
    assert ds.check() == []
    # A retried task's duplicate (same name) is refused, the dataset unchanged.
    again = write_part((os.path.join(path + ".parts", "dup"), 1000, 1010))
    with pytest.raises(pagedb.ConstraintError):
        ds.commit_parts([(again[0], "task-3", 0, again[1])])
    assert len(ds) == 200 and len(ds.parts()) == 8
    ds.close()
    ro = pagedb.open(path, "r")                          # reopened: the same, read through the parts
    assert len(ro) == 200 and bytes(ro[199]["image"]) == sample(199)["image"]
    ro.close()


def test_refusals_leave_the_dataset(tmp_path):
    path = str(tmp_path / "d.pagedb")
    p1, seal1 = write_part((str(tmp_path / "p1"), 0, 10))
    ds = pagedb.open(path, "c")
    fields(ds)
    with ds.writer() as w:
        w.append(sample(500), id=500)
    ds.commit()
    with pytest.raises(pagedb.ConstraintError):          # the same part twice in one set
        ds.commit_parts([p1, p1])
    bad = pagedb.open(p1, "w")                           # changed after its seal
    with bad.writer() as w:
        w.append(sample(77), id=77)
    bad.close()
    with pytest.raises(pagedb.CorruptError):
        ds.commit_parts([(p1, None, 0, seal1)])
    with pytest.raises(ValueError):
        ds.commit_parts([p1], policy="sideways")
    assert len(ds) == 1 and ds.parts() == []
    assert ds.commit_parts([p1], policy="after") == 11   # as it is now, unsealed, ids after 500
    assert sorted(int(x) for x in ds.order("sequential")) == [500] + list(range(501, 512))
    ds.close()


def test_orphan_parts(tmp_path):
    """orphan_parts(): the parts under NAME.parts/ no commit took, listed
    (never a committed one), removed by a read-write handle only."""
    path = str(tmp_path / "o.pagedb")
    os.mkdir(path + ".parts")
    done = [write_part((os.path.join(path + ".parts", "p%d" % k), 10 * k, 10 * k + 10)) for k in range(3)]
    ds = pagedb.open(path, "c")
    fields(ds)
    assert sorted(os.path.basename(o["path"]) for o in ds.orphan_parts()) == ["p0", "p1", "p2"]
    ds.commit_parts([(done[1][0], "t1", 0, done[1][1])])
    orphans = ds.orphan_parts()
    assert sorted(os.path.basename(o["path"]) for o in orphans) == ["p0", "p2"]
    assert all(len(o["uuid"]) == 32 and o["bytes"] > 0 and o["age"] >= 0 for o in orphans)
    assert ds.orphan_parts(older_than=3600) == []
    with pytest.raises(ValueError):
        ds.orphan_parts(older_than=-1)
    ds.close()
    ro = pagedb.open(path, "r")
    with pytest.raises(pagedb.ReadOnlyError):
        ro.orphan_parts(remove=True)
    ro.close()
    ds = pagedb.open(path, "w")
    assert sorted(os.path.basename(o["path"]) for o in ds.orphan_parts(remove=True)) == ["p0", "p2"]
    assert ds.orphan_parts() == [] and not os.path.exists(done[0][0]) and os.path.exists(done[1][0])
    assert len(ds) == 10 and bytes(ds[15]["image"]) == sample(15)["image"]
    ds.close()


def test_busy_timeout(tmp_path):
    """Committers take turns: open(..., busy_timeout=ms) waits for the write
    lock another handle holds (PAGEDB_CONFIG_BUSY_TIMEOUT), then BusyError."""
    import threading
    path = str(tmp_path / "ds.pagedb")
    first = pagedb.open(path, "c")
    fields(first)
    try:
        with pytest.raises(pagedb.BusyError):
            pagedb.open(path, "w", busy_timeout=0)
        with pytest.raises(ValueError):
            pagedb.open(path, "w", busy_timeout=-5)
        # The holder lets go while the second open waits.
        threading.Timer(0.2, first.close).start()
        second = pagedb.open(path, "w", busy_timeout=60000)
        assert [f.name for f in second.fields] == ["image", "label", "score", "caption"]
        second.close()
    finally:
        pagedb.set_busy_timeout(-1)
        first.close()


def test_first_commit_beside_an_open_iterator(tmp_path):
    """The first commit of parts rewrites the index; an Iterator open across it
    reads on, the parts' samples from the new index (it was refused before)."""
    path = str(tmp_path / "it.pagedb")
    os.mkdir(path + ".parts")
    part, seal = write_part((os.path.join(path + ".parts", "a"), 100, 110))
    ds = pagedb.open(path, "c")
    fields(ds)
    with ds.writer() as w:
        for i in range(5):
            w.append(sample(i), id=i)
    ds.commit()
    it = ds.iterate([0, 1, 100, 109, 4], fields=["image", "label"])
    first = next(it)
    assert bytes(first["image"]) == sample(0)["image"]
    assert ds.commit_parts([(part, "a", 0, seal)]) == 10
    rest = list(it)
    assert [bytes(s["image"]) for s in rest] == [sample(i)["image"] for i in (1, 100, 109, 4)]
    assert [s["label"] for s in rest] == [sample(i)["label"] for i in (1, 100, 109, 4)]
    with ds.writer() as w:                   # own samples after it, as before
        w.append(sample(5), id=5)
    ds.commit()
    assert len(ds) == 16
    ds.close()
