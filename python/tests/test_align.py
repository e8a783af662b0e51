"""add_field(align=): every zero-copy view of the field starts at a multiple
of the alignment, so NumPy can view it as float32/int64 in place."""
import random

import numpy as np
import pytest

import pagedb


@pytest.mark.parametrize("align", [8, 16, 64])
def test_views_are_aligned(path, align):
    rng = random.Random(align)
    vecs = {}
    with pagedb.open(path, "c") as ds:
        ds.add_field("tag", "text")                     # 1 by default: aligned to `align` all the same
        ds.add_field("vec", "bytes", align=align)
        with ds.writer() as w:
            for i in range(300):
                vecs[i] = np.arange(rng.randrange(0, 100), dtype=np.float32) * i
                w.append({"tag": "x" * rng.randrange(0, 9), "vec": vecs[i].tobytes()}, id=i)
        ds.commit()
    with pagedb.open(path) as ds:
        for i in range(300):
            a = np.frombuffer(ds.view(i, "vec"), np.float32)
            assert a.ctypes.data % align == 0
            assert np.array_equal(a, vecs[i])
        for i, v in enumerate(ds.read_batch(list(range(300)), "vec")):
            assert np.frombuffer(v, np.uint8).ctypes.data % align == 0


def test_bad_align_is_refused(path):
    with pagedb.open(path, "c") as ds:
        with pytest.raises(pagedb.RangeError, match="alignment 3 is not a power of two"):
            ds.add_field("vec", "bytes", align=3)
        with pytest.raises(pagedb.RangeError, match="an INT or REAL field"):
            ds.add_field("n", "int", align=8)
