#!/usr/bin/env python3
"""The Python loader benchmark of issue 17 (doc/benchmarks.md).

Every sample of W-img and of W-small (shared/WORKLOADS.md; the files are
made by tool/pagedb-bench --keep, so that the three sources hold the same
bytes) is read from Python in one random epoch order, by the same loop:

    for batch in DataLoader(source, batch_size=B, num_workers=2): ...

where each worker reads its samples, checks each one's 16-byte header (its
id and length, as the workload writes them) and sums its bytes (so every
byte is touched), and hands back (id, length, sum).  The sources:

  pagedb   pagedb.torch.IterableDataset: pagedb_order's random order,
           zero-copy views of the map, read-ahead along the order;
  memmap   numpy.memmap of the raw file (the samples back to back, at
           offsets known in advance): the fastest a Python loop can go;
  sqlite3  Python's sqlite3, SELECT data FROM t WHERE id=? per sample.

All three read the same ids in the same order (pagedb's), split among the
workers the same way, and their sums must agree.  Before that, the same
order is read by each source in this process alone, without DataLoader or
transform (one byte of every page touched): what the source itself costs,
which the DataLoader loop's per-sample Python work otherwise hides.  It then times ds[i] (a
dict of every field), ds.view(i, field) and ds.read(i, field) in one
thread, in microseconds per sample.  Files are read once before timing
(a warm page cache), as a training job's second epoch finds them.

    /usr/bin/python3 python/bench/bench_loader.py --bench build/tool/pagedb-bench \
        [--img 20000] [--small 1000000] [--dir DIR] [--workers 2] [--batch 64] [--window BYTES]
"""
import argparse
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.utils.data as tud

import pagedb
from pagedb.torch import DataLoader, IterableDataset

SEED = 42


def check(i, view):
    """(id, length, sum of the bytes) of sample I's bytes VIEW, whose header
    must name I and its length."""
    a = np.frombuffer(view, dtype=np.uint8)
    if len(a) >= 16:
        sid, n = struct.unpack_from("<QQ", a, 0)
        if sid != i or n != len(a):
            raise ValueError("sample %d: header says id %d, %d bytes; %d read" % (i, sid, n, len(a)))
    return i, len(a), int(a.sum(dtype=np.uint64))


class _Chunked(tud.IterableDataset):
    """An order split among DataLoader workers as pagedb.torch does it:
    worker w takes the batches k of the order with k % workers == w."""

    def __init__(self, order, batch):
        self.order, self.batch = order, batch

    def my_ids(self):
        info = tud.get_worker_info()
        ids = self.order
        if info is None:
            return ids
        b, w, nw = self.batch, info.id, info.num_workers
        nchunk = -(-len(ids) // b)
        starts = np.arange(w, nchunk, nw) * b
        idx = (starts[:, None] + np.arange(b)[None, :]).ravel()
        return ids[idx[idx < len(ids)]]


class MemmapSource(_Chunked):
    def __init__(self, raw, offsets, lengths, order, batch):
        super().__init__(order, batch)
        self.raw, self.offsets, self.lengths = raw, offsets, lengths

    def __iter__(self):
        mm = np.memmap(self.raw, dtype=np.uint8, mode="r")
        off, ln = self.offsets, self.lengths
        for i in self.my_ids():
            o = off[i]
            yield check(int(i), mm[o:o + ln[i]])


class SqliteSource(_Chunked):
    def __init__(self, db, order, batch):
        super().__init__(order, batch)
        self.db = db

    def __iter__(self):
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        cur = con.cursor()
        for i in self.my_ids():
            i = int(i)
            (data,) = cur.execute("SELECT data FROM t WHERE id=?", (i,)).fetchone()
            yield check(i, data)
        con.close()


class PagedbCheck:
    """The transform of the pagedb source: the id is the sample's position
    in the order, which the dataset does not hand out, so it is taken from
    the bytes' header and checked against the length only."""

    def __init__(self, field):
        self.field = field

    def __call__(self, sample):
        a = np.frombuffer(sample[self.field], dtype=np.uint8)
        sid = struct.unpack_from("<Q", a, 0)[0] if len(a) >= 8 else -1
        return check(int(sid), sample[self.field])


def run_loader(source, batch, workers):
    loader = (DataLoader if isinstance(source, IterableDataset) else tud.DataLoader)(
        source, batch_size=batch, num_workers=workers, multiprocessing_context="fork" if workers else None)
    t0 = time.perf_counter()
    n = 0
    ids = []
    total = 0
    for i, ln, s in loader:
        n += len(i)
        ids.append(i.numpy())
        total += int(s.sum())
    dt = time.perf_counter() - t0
    return n, dt, np.concatenate(ids) if ids else np.empty(0, np.int64), total


def warm(path):
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def touch(v):
    """One byte of every 4 KiB page of V: the pages are faulted in (or
    copied, for sqlite3) as any consumer would, at a small fixed cost."""
    return bytes(memoryview(v).cast("B")[::4096])


def bare_loops(ds, field, order, raw, offsets, lengths, sq):
    """The same order read in this process, without DataLoader or a
    per-sample transform: what each source costs by itself."""
    out = {}
    t0 = time.perf_counter()
    for s in ds.iterate(order, fields=[field], raw=True):
        touch(s[field])
    out["pagedb"] = time.perf_counter() - t0
    mm = np.memmap(raw, dtype=np.uint8, mode="r")
    t0 = time.perf_counter()
    for i in order:
        o = offsets[i]
        touch(mm[o:o + lengths[i]])
    out["memmap"] = time.perf_counter() - t0
    con = sqlite3.connect("file:%s?mode=ro" % sq, uri=True)
    cur = con.cursor()
    t0 = time.perf_counter()
    for i in order:
        touch(cur.execute("SELECT data FROM t WHERE id=?", (int(i),)).fetchone()[0])
    out["sqlite3"] = time.perf_counter() - t0
    con.close()
    return {k: len(order) / v for k, v in out.items()}


def per_sample_us(fn, ids):
    t0 = time.perf_counter()
    for i in ids:
        fn(int(i))
    return (time.perf_counter() - t0) / len(ids) * 1e6


def bench_workload(name, count, d, args, rows):
    pdb_path = os.path.join(d, "%s-t1-posix.pagedb" % name)
    raw, sq = os.path.join(d, "raw-%s.bin" % name), os.path.join(d, "%s.sqlite" % name)
    con = sqlite3.connect("file:%s?mode=ro" % sq, uri=True)
    lengths = np.array([r[0] for r in con.execute("SELECT length(data) FROM t ORDER BY id")], dtype=np.int64)
    con.close()
    if len(lengths) != count:
        raise SystemExit("%s: %d rows in %s, %d expected" % (name, len(lengths), sq, count))
    offsets = np.zeros(count, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    if offsets[-1] + lengths[-1] != os.path.getsize(raw):
        raise SystemExit("%s: the raw file is not the samples back to back" % raw)
    for p in (pdb_path, raw, sq):
        warm(p)
    ds = pagedb.open(pdb_path)
    field = ds.fields[0].name
    order = ds.order("random", seed=SEED, epoch=0)
    b, w = args.batch, args.workers
    res = {}
    bare = bare_loops(ds, field, order, raw, offsets, lengths, sq)
    for k, v in bare.items():
        print("  %-8s %-8s %9d samples, one process, no DataLoader: %9.0f samples/s" % (name, k, count, v),
              flush=True)
    for src in ([] if args.bare_only else args.sources):
        if src == "pagedb":
            source = IterableDataset(pdb_path, kind="random", seed=SEED, fields=[field], raw=True,
                                     transform=PagedbCheck(field), window=args.window)
        elif src == "memmap":
            source = MemmapSource(raw, offsets, lengths, order, b)
        else:
            source = SqliteSource(sq, order, b)
        n, dt, ids, total = run_loader(source, b, w)
        if n != count or not (ids == order).all():
            raise SystemExit("%s %s: read %d samples, not the %d of the order in order" % (name, src, n, count))
        res[src] = (n / dt, dt, total)
        print("  %-8s %-8s %9d samples in %7.2f s = %9.0f samples/s" % (name, src, n, dt, n / dt), flush=True)
    sums = {v[2] for v in res.values()}
    if len(sums) > 1:
        raise SystemExit("%s: the sources' byte sums differ: %r" % (name, res))
    k = min(count, args.us_samples)
    sample_ids = order[:k]
    us_get = per_sample_us(lambda i: ds[i], sample_ids)
    us_view = per_sample_us(lambda i: ds.view(i, field), sample_ids)
    us_read = per_sample_us(lambda i: ds.read(i, field), sample_ids)
    mm = np.memmap(raw, dtype=np.uint8, mode="r")
    us_mm = per_sample_us(lambda i: mm[offsets[i]:offsets[i] + lengths[i]], sample_ids)
    con = sqlite3.connect("file:%s?mode=ro" % sq, uri=True)
    cur = con.cursor()
    us_sq = per_sample_us(lambda i: cur.execute("SELECT data FROM t WHERE id=?", (i,)).fetchone(), sample_ids)
    con.close()
    ds.close()
    rows.append((name, count, res, us_get, us_view, us_read, us_mm, us_sq, bare))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", help="tool/pagedb-bench, to make the files (unless --dir has them)")
    ap.add_argument("--dir", help="directory of pagedb-bench --keep's files (default: a new temporary one)")
    ap.add_argument("--img", type=int, default=20000, help="W-img samples (%(default)s)")
    ap.add_argument("--small", type=int, default=1000000, help="W-small samples (%(default)s)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--us-samples", type=int, default=20000, help="samples timed for ds[i] (%(default)s)")
    ap.add_argument("--sources", default="pagedb,memmap,sqlite3")
    ap.add_argument("--bare-only", action="store_true", help="skip the DataLoader runs")
    ap.add_argument("--window", type=int, default=16 << 20, help="pagedb's read-ahead bytes (%(default)s)")
    args = ap.parse_args()
    args.sources = args.sources.split(",")
    d = args.dir
    tmp = None
    if d is None or not os.path.exists(os.path.join(d, "raw-W-img.bin")):
        if not args.bench:
            raise SystemExit("give --bench tool/pagedb-bench (to make the files) or --dir with them")
        d = d or (tmp := tempfile.mkdtemp(prefix="pybench-"))
        cmd = [args.bench, "--workload", "W-img:%d" % args.img, "--workload", "W-small:%d" % args.small,
               "--reps", "1", "--threads", "1", "--vfs", "posix", "--compare", "sqlite", "--dir", d, "--keep"]
        print("making the files:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    print("torch %s, numpy %s, sqlite %s, pagedb %s; %d workers, batch %d, fork"
          % (torch.__version__, np.__version__, sqlite3.sqlite_version, pagedb.__version__, args.workers,
             args.batch))
    rows = []
    bench_workload("W-img", args.img, d, args, rows)
    bench_workload("W-small", args.small, d, args, rows)
    print()
    print("%-8s %9s %12s %12s %12s %10s %10s" % ("workload", "samples", "pagedb/s", "memmap/s", "sqlite3/s",
                                                 "vs memmap", "vs sqlite3"))
    for name, count, res, *_ in ([] if args.bare_only else rows):
        p, m, s = (res.get(k, (float("nan"),))[0] for k in ("pagedb", "memmap", "sqlite3"))
        print("%-8s %9d %12.0f %12.0f %12.0f %9.1f%% %9.2fx" % (name, count, p, m, s, 100 * p / m, p / s))
    print()
    print("the same order in one process, no DataLoader, one byte of each page touched (samples/s):")
    print("%-8s %9s %12s %12s %12s %10s %10s" % ("workload", "samples", "pagedb/s", "memmap/s", "sqlite3/s",
                                                 "vs memmap", "vs sqlite3"))
    for name, count, *_, bare in rows:
        p, m, s = bare["pagedb"], bare["memmap"], bare["sqlite3"]
        print("%-8s %9d %12.0f %12.0f %12.0f %9.1f%% %9.2fx" % (name, count, p, m, s, 100 * p / m, p / s))
    print()
    print("per sample, one thread, %d random ids (us):" % args.us_samples)
    print("%-8s %10s %14s %14s %14s %12s" % ("workload", "ds[i]", "ds.view(i,f)", "ds.read(i,f)", "memmap slice",
                                             "sqlite3 row"))
    for name, count, res, g, v, r, mm, sq, _ in rows:
        print("%-8s %10.2f %14.2f %14.2f %14.2f %12.2f" % (name, g, v, r, mm, sq))
    print()
    for name, count, res, *_ in ([] if args.bare_only else rows):
        p, m, s = (res.get(k, (float("nan"),))[0] for k in ("pagedb", "memmap", "sqlite3"))
        print("target %-8s >= 80%% of memmap: %6.1f%% %s;  >= 3x sqlite3: %5.2fx %s"
              % (name, 100 * p / m, "pass" if p >= 0.8 * m else "SHORT", p / s, "pass" if p >= 3 * s else "SHORT"))
    if tmp:
        import shutil
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
