"""Shared fixtures of the pagedb Python suite (make check-python).

In a sanitizer build (PAGEDB_SANITIZERS=1: the module is instrumented and
the ASan runtime preloaded into the interpreter and its DataLoader workers)
everything runs but the reduced Fashion-MNIST training (test_example.py),
skipped visibly: minutes of torch's own, uninstrumented arithmetic."""
import os

import pytest

import pagedb

SANITIZERS = os.environ.get("PAGEDB_SANITIZERS") == "1"


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


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "t.pagedb")
