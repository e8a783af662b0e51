"""A Dataset opened before fork(): the child reads through it -- ds[i],
zero-copy views, iterate(), read_packed, an Iterator made before the fork --
and every write there raises MisuseError with pagedb's code (pagedb.h: an
inherited handle reads, never writes); SQL is refused in the child; the
parent's handle is untouched by anything the child does, close() included.
Both os.fork() and multiprocessing's fork start method."""
import multiprocessing as mp
import os
import threading

import pytest

import pagedb
from conftest import make, sample

N = 25


def child_reads_and_refused_writes(path, ds, it):
    """Run in the child: returns a list of failures (empty: all went as
    pagedb.h says)."""
    bad = []
    try:
        for i in range(N):
            s = ds[i]
            if bytes(s["image"]) != sample(i)["image"] or s["caption"] != sample(i)["caption"]:
                bad.append("ds[%d] read wrong bytes" % i)
        v = ds.view(4, "image")
        if bytes(v) != sample(4)["image"]:
            bad.append("view")
        got = [s["label"] for s in ds.iterate([3, 1, 2])]
        if got != [sample(i)["label"] for i in (3, 1, 2)]:
            bad.append("iterate: %r" % got)
        b = ds.read_packed([5, 6], ["image", "label"])
        if bytes(b[1]["image"]) != sample(6)["image"] or b.values("label") != [5, 6]:
            bad.append("read_packed")
        rest = [s["label"] for s in it]                    # an Iterator made before the fork
        if rest != [sample(i)["label"] for i in range(1, 6)]:
            bad.append("inherited iterator: %r" % rest)
        if len(ds) != N:
            bad.append("len")
        for name, call in (("writer", lambda: ds.writer()), ("commit", lambda: ds.commit()),
                           ("delete", lambda: ds.delete(1)), ("add_field", lambda: ds.add_field("z", "int")),
                           ("sql", lambda: ds.sql("SELECT 1")),
                           ("sql_update", lambda: ds.sql_update("UPDATE sample SET label = 0"))):
            try:
                call()
                bad.append("%s worked in the child" % name)
            except pagedb.MisuseError as e:
                if e.code != pagedb.MISUSE:
                    bad.append("%s: code %d" % (name, e.code))
        # Threads of the child share the adopted dataset.
        out = []
        ts = [threading.Thread(target=lambda k=k: out.append(bytes(ds[k]["image"]) == sample(k)["image"]))
              for k in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        if out != [True] * 4:
            bad.append("threads")
        del v
        ds.close()                                          # the child's copy only, nothing committed
    except Exception as e:                                  # noqa: BLE001 (reported to the parent)
        bad.append("raised %r" % e)
    return bad


@pytest.fixture
def opened(path):
    ds = make(path, N)
    ds.commit()
    it = ds.iterate(list(range(6)))
    next(it)                                                # the child continues from 1
    return ds, it


def test_os_fork(path, opened):
    ds, it = opened
    w = ds.writer()                                         # a Writer made before the fork
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            bad = child_reads_and_refused_writes(path, ds, it)
            try:
                w.append({"label": 1})
                bad.append("an inherited Writer appended")
            except pagedb.MisuseError:
                pass
            try:
                w.close()
                bad.append("an inherited Writer closed")
            except pagedb.MisuseError:
                pass
            os.write(wfd, ("\n".join(bad)).encode() or b"ok")
        finally:
            os._exit(code)
    os.close(wfd)
    msg = b""
    while chunk := os.read(r, 65536):
        msg += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert msg == b"ok", msg.decode()
    # The parent goes on as before: reads, its iterator, writes, commit.
    assert [s["label"] for s in it] == [sample(i)["label"] for i in range(1, 6)]
    w.append(sample(100), id=100)
    w.close()
    ds.commit()
    assert len(ds) == N + 1 and ds.sql("SELECT count(*) FROM sample") == [(N + 1,)]
    ds.close()


def _mp_child(path, ds, it, q):
    q.put(child_reads_and_refused_writes(path, ds, it))


def test_multiprocessing_fork(path, opened):
    ds, it = opened
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_mp_child, args=(path, ds, it, q)) for _ in range(2)]
    [p.start() for p in procs]
    results = [q.get(timeout=120) for _ in procs]
    [p.join() for p in procs]
    assert results == [[], []]
    assert all(p.exitcode == 0 for p in procs)
    assert bytes(ds[7]["image"]) == sample(7)["image"]
    ds.close()
