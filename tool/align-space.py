#!/usr/bin/python3
"""align-space.py -- the space field alignment costs (pagedb_field_add_aligned).

Writes the W-small workload's samples (shared/WORKLOADS.md: 1,000,000 values
of 200..2048 bytes, uniform, seed 42, and an INT label) into one dataset per
alignment, with one writer and one commit, and prints each data file's size
against alignment 1 (values packed at any byte, as before alignments).
Space depends only on the sizes, so the values' bytes are the id, the length
and zeros (not W-small's text: no codec is used, nothing is compressed).

    PYTHONPATH=python:build/python/.libs LD_LIBRARY_PATH=build/.libs \\
        /usr/bin/python3 tool/align-space.py [DIR [COUNT]]
"""
import os
import struct
import sys
import tempfile

import pagedb

M64 = (1 << 64) - 1
GOLDEN = 0x9e3779b97f4a7c15


def mix64(z):
    z ^= z >> 30; z = (z * 0xbf58476d1ce4e5b9) & M64
    z ^= z >> 27; z = (z * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def wsmall_sizes(n, seed=42):
    base = mix64(seed ^ (2 << 56) ^ (1 << 48))      # W-small: wid 2; sizes: salt 1
    return [200 + mix64((base + i * GOLDEN + GOLDEN) & M64) % (2048 - 200 + 1) for i in range(n)]


def write(path, sizes, align):
    zero = bytes(2048)
    with pagedb.open(path, "c") as ds:
        ds.add_field("text", "bytes", align=align)
        ds.add_field("label", "int")
        with ds.writer() as w:
            for i, n in enumerate(sizes):
                v = struct.pack("<QQ", i, n) + zero[: n - 16]
                w.append({"text": v, "label": i % 1000}, id=i)
        ds.commit()
    return os.stat(path)


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="align-space.")
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    sizes = wsmall_sizes(count)
    print("W-small:%d, %d value bytes (mean %.1f), one writer, page size 8 MiB" %
          (count, sum(sizes), sum(sizes) / count))
    print("%-10s %15s %15s %12s %9s" % ("align", "data file", "allocated", "vs align 1", "per value"))
    ref = None
    for align in (1, 0, 16, 64):        # 0: the default, 8 for BYTES
        path = os.path.join(top, "a%d.pagedb" % align)
        for suffix in ("", "-catalog", "-index"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
        st = write(path, sizes, align)
        if ref is None:
            ref = st.st_size
        extra = st.st_size - ref
        print("%-10s %15d %15d %+11.3f%% %+8.2f B" % ("default 8" if align == 0 else align, st.st_size,
              st.st_blocks * 512, 100.0 * extra / ref, extra / count))
        for suffix in ("", "-catalog", "-index"):
            os.unlink(path + suffix)


if __name__ == "__main__":
    main()
