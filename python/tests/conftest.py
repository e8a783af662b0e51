"""Shared fixtures of the pagedb Python suite (make check-python).

In a sanitizer build (PAGEDB_SANITIZERS=1: the module is instrumented and
the ASan runtime preloaded into the interpreter and its DataLoader workers)
everything runs but the reduced Fashion-MNIST training (test_example.py),
skipped visibly: minutes of torch's own, uninstrumented arithmetic; and a
test skips, where it makes one, a DataLoader whose workers are forked (the
"fork" context, Linux's default), below."""
import os

import pytest

import pagedb

SANITIZERS = os.environ.get("PAGEDB_SANITIZERS") == "1"
# Which pagedb this run tests: the build tree's (make check-python:
# PYTHONPATH names python/ and the module's .libs), or, with
# PAGEDB_TEST_INSTALLED=1 (.ci/run's wheel phase, doc/python.md), the one
# pip installed into the running interpreter's environment -- never a
# copy from the source tree, which the check below refuses.
INSTALLED = os.environ.get("PAGEDB_TEST_INSTALLED") == "1"
SRCDIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if INSTALLED:
    _where = os.path.realpath(pagedb.__file__)
    if _where.startswith(os.path.realpath(SRCDIR) + os.sep):
        raise RuntimeError("PAGEDB_TEST_INSTALLED=1 but pagedb was imported from the source tree: %s" % _where)
    if os.path.dirname(os.path.realpath(pagedb._pagedb.__file__)) != os.path.dirname(_where):
        raise RuntimeError("the installed pagedb's extension is not inside it: %s" % pagedb._pagedb.__file__)


def make(path, n=20, codec=None, page_size=0):
    """A dataset of N samples: image (BYTES, CODEC), label, score, caption."""
    ds = pagedb.open(path, "c", page_size=page_size)
    ds.add_field("image", "bytes", codec)
    ds.add_field("label", "int")
    ds.add_field("score", "real")
    ds.add_field("caption", "text", "lz4")
    with ds.writer() as w:
        for i in range(n):
            w.append(sample(i), id=i)
    ds.commit()
    return ds


def sample(i):
    return {"image": image(i), "label": i % 10, "score": i / 7.0, "caption": "caption %d " % i * (1 + i % 5)}


def image(i):
    # Varied sizes, some compressible (repeated) and some not.
    import random
    rnd = random.Random(int(i))
    n = 100 + (i * 997) % 5000
    if i % 2:
        return bytes(rnd.getrandbits(8) for _ in range(n))
    return bytes([i % 256]) * n


# GCC 12's ASan allocator has no fork handler: a process forked while
# another of its threads holds one of the allocator's locks inherits it
# held, and the child's first allocation of that size waits for ever.  A
# DataLoader forks its workers from a process with threads (torch's, the
# queues' feeders, the Dask client's), and CI run 21 (doc/reliability.md)
# hung so: a worker of test_shared_batches_pool_reuses_only_what_nobody_holds
# [fork], in ASan's SizeClassAllocator64 lock under torch's set_num_threads.
# Under the sanitizers such a DataLoader skips its test, visibly, at its
# construction; the normal build and the wheel phase run every one, and
# spawn-context workers run here too.
@pytest.fixture(autouse=True, scope="session")
def _no_forked_workers_under_asan():
    if not SANITIZERS:
        yield
        return
    try:
        import inspect
        import torch.utils.data as tud
    except ImportError:
        yield
        return
    init = tud.DataLoader.__init__
    sig = inspect.signature(init)

    def guarded(self, *args, **kw):
        bound = sig.bind(self, *args, **kw)
        workers = bound.arguments.get("num_workers", 0)
        ctx = bound.arguments.get("multiprocessing_context")
        method = ctx if isinstance(ctx, str) or ctx is None else ctx.get_start_method()
        if workers and (method or __import__("multiprocessing").get_start_method()) == "fork":
            pytest.skip("DataLoader workers forked from a process with threads can hang in GCC 12's ASan "
                        "allocator (no fork handler); run in the normal build")
        init(self, *args, **kw)

    tud.DataLoader.__init__ = guarded
    yield
    tud.DataLoader.__init__ = init


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "t.pagedb")
