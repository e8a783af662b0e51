"""Zero-copy views outliving what made them: the next read, the reader, the
dataset's close(), `del ds`, commits that grow the file, another thread.
No crash, no wrong bytes.  make check runs this file under ASan too."""
import gc
import threading

import numpy as np
import pytest

import pagedb
from conftest import make, image


def test_view_outlives_next_reads(path):
    make(path, 50).close()
    ds = pagedb.open(path)
    views = [ds[i]["image"] for i in range(50)]          # each read moves the pool's reader on
    arrays = [np.frombuffer(ds.view(i, "image"), np.uint8) for i in range(50)]
    for i in range(50):
        assert bytes(views[i]) == image(i)
        assert arrays[i].tobytes() == image(i)
    ds.close()


def test_view_outlives_close(path):
    make(path, 10).close()
    ds = pagedb.open(path)
    v = ds[3]["image"]
    a = np.frombuffer(ds.read_batch([4, 5], "image")[1], np.uint8)
    it = ds.iterate([6, 7])
    s6 = next(it)
    ds.close()
    assert ds.closed
    with pytest.raises(pagedb.MisuseError):
        ds[3]
    with pytest.raises(pagedb.MisuseError):
        next(it)
    assert bytes(v) == image(3)                 # the map is still there
    assert a.tobytes() == image(5)
    assert bytes(s6["image"]) == image(6)
    del v, a, s6, it
    gc.collect()                                # the last view closes the handle


def test_close_with_views_releases_the_write_lock_when_they_go(path):
    ds = make(path, 5)
    v = ds[1]["image"]
    ds.close()                                  # committed; the handle waits for v
    with pytest.raises(pagedb.BusyError):
        pagedb.open(path, "w")
    assert bytes(v) == image(1)
    del v
    with pagedb.open(path, "w") as again:      # the lock went with the last view
        assert len(again) == 5


def test_view_outlives_del_ds(path):
    make(path, 10).close()
    ds = pagedb.open(path)
    v = ds[2]["image"]
    sub = v[10:20]
    arr = np.frombuffer(v, np.uint8)[::3]
    del ds, v
    gc.collect()
    assert bytes(sub) == image(2)[10:20]
    assert arr.tobytes() == image(2)[::3]


def test_view_survives_commits_that_grow_the_file(path):
    """Writers and commits remap the file; views of the old map stay valid."""
    ds = make(path, 5, page_size=64 << 10)
    first = [ds[i]["image"] for i in range(5)]
    with ds.writer() as w:
        for i in range(5, 400):
            w.append({"image": image(i), "label": i}, id=i)
            if i % 50 == 0:
                w.flush()
                ds.commit()
                first.append(ds[i]["image"])
    ds.commit()
    for i in range(5):
        assert bytes(first[i]) == image(i)
    for k, i in enumerate(range(50, 400, 50)):
        assert bytes(first[5 + k]) == image(i)
    for i in range(5, 400, 37):
        assert bytes(ds[i]["image"]) == image(i)
    ds.close()
    assert bytes(first[0]) == image(0)


def test_compressed_values_are_copies(path):
    """A compressed value lands in the reader's buffer: the view is a copy of
    its own, unchanged by later reads."""
    make(path, 20, codec="lz4").close()
    ds = pagedb.open(path)
    views = [ds[i]["image"] for i in range(20)]
    captions = [ds.view(i, "caption") for i in range(20)]
    for i in range(20):
        assert bytes(views[i]) == image(i)
    ds.close()
    assert bytes(captions[7]).decode().startswith("caption 7")


def test_views_across_threads(path):
    """Views made in one thread, read in others while the first reads on and
    then closes the dataset."""
    make(path, 60).close()
    ds = pagedb.open(path)
    views = [ds[i]["image"] for i in range(60)]
    errors = []

    def check(k):
        try:
            for _ in range(20):
                for i in range(k, 60, 4):
                    if bytes(views[i]) != image(i):
                        errors.append(i)
        except Exception as e:           # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=check, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for i in range(60):
        ds[i]
    ds.close()
    for t in ts:
        t.join()
    assert errors == []


def test_close_races_readers(path):
    """close() while other threads read: each read returns whole bytes or
    raises MisuseError, never crashes."""
    make(path, 40).close()
    for _ in range(3):
        ds = pagedb.open(path)
        results = []

        def read(k):
            got = []
            try:
                for n in range(2000):
                    i = (k * 7 + n) % 40
                    got.append((i, ds[i]["image"]))
            except pagedb.MisuseError:
                pass
            results.append(got)
        ts = [threading.Thread(target=read, args=(k,)) for k in range(3)]
        for t in ts:
            t.start()
        ds.close()
        for t in ts:
            t.join()
        for got in results:
            for i, v in got[-20:]:
                assert bytes(v) == image(i)


def test_copy_mode_views(path):
    make(path, 10).close()
    ds = pagedb.open(path, read_mode="copy")
    assert not ds.zero_copy
    vs = [ds[i]["image"] for i in range(10)]
    ds.close()
    del ds
    assert [bytes(v) for v in vs] == [image(i) for i in range(10)]
