#!/usr/bin/env python3
"""The Python loader benchmark of issue 17 (doc/benchmarks.md).

Every sample of W-img and of W-small (shared/WORKLOADS.md; the files are
made by tool/pagedb-bench --keep, so that the three sources hold the same
bytes) is read from Python in one random epoch order (pagedb_order's for
seed 42, epoch 0), by the same loop for every source:

    for ids, lengths, sums in DataLoader(source, batch_size=64, num_workers=2): ...

The order is cut into batches of B consecutive ids; worker w of the
DataLoader reads the batches k with k % workers == w (pagedb.torch's split),
so the batches come out in the order's order, which is checked.  Every
worker makes whole batches itself (torch's per-sample fetching is not used
by any source: pagedb.torch.DataLoader hands the batch size to pagedb's
dataset; the other two are torch DataLoaders with batch_size=None over
datasets that yield whole batches).  Three loops, each run for every source:

  per-sample  the worker reads the batch's samples one by one, checks each
              one (check(): its 16-byte header -- id and length, as the
              workload writes them -- and the sum of its bytes taken as
              little-endian 64-bit words, so every byte is read), and
              collates the (id, length, sum) triples into two int64 arrays
              and a sum (collate()).  This is the loop of a user transform
              per sample.
  per-batch   the worker reads the batch into one buffer (values back to
              back, with their offsets) and checks it with NumPy in a few
              calls: every header at once, one word sum of the buffer.

  deliver     what a training job's loader does, with no checksum: the
              worker reads the batch into one buffer as per-batch does and
              hands the bytes themselves to the main process, as a torch
              uint8 tensor and an int64 tensor of offsets (deliver()): torch
              copies each into a shared-memory segment as it sends it, and
              the main process maps it -- the usual transfer of a batch.
              The main process reads every sample's 16-byte header from the
              delivered tensor at once (delivered_ids(): its id, whose order
              is checked, and its length, against the offsets) and counts.
              The bytes are checked in an untimed pass of the same loop run
              first (round 1), whose main process also word-sums every
              delivered tensor: the sums must agree between the sources.

In per-sample and per-batch a batch crosses to the main process as (ids,
lengths, sum): two small NumPy arrays and an int, pickled by value -- not
torch tensors,
each of which would cross through a shared-memory segment of its own: on
this machine three small tensors per batch cost 4.6 ms of CPU per batch
against 0.5 ms for the arrays (the loop alone, empty batches), the same for
every source, which would hide their differences.

The sources:

  pagedb   pagedb.torch.IterableDataset: pagedb_order's random order, 16 MiB
           of read-ahead along it (pagedb_reader_prefetch).  Per-sample: one
           C call per batch (Iterator.next_batch) gives the batch's samples
           as dicts of zero-copy memoryviews of the map.  Per-batch: one C
           call per batch (Iterator.next_packed) copies the batch's values
           into one buffer (a pagedb.Batch), passed to batch_transform
           (deliver: the buffer and its offsets become the two tensors).
           Its DataLoader (pagedb.torch.DataLoader) hands tensors over in
           shared memory it reuses (shared_batches: the deliver loop's two
           tensors per batch are copied into the worker's next slot and out
           into new tensors in the main process).
  pagedb-tq  the same in the deliver loop only, with shared_batches=False:
           the batch's tensors cross as torch moves them, as the other
           sources' do (in the other loops the batches are NumPy arrays,
           which cross the same way either way).
  memmap   numpy.memmap of the raw file (the samples back to back, at offsets
           known in advance), viewed as a plain ndarray so that a slice is
           a cheap view (a numpy.memmap slice builds a memmap subclass).
           Per-sample: a slice per sample.  Per-batch: np.concatenate of the
           batch's slices.
  sqlite3  Python's sqlite3, table t(id INTEGER PRIMARY KEY, label, data).
           Per-sample: SELECT data FROM t WHERE id=? per sample.  Per-batch:
           one SELECT id, data FROM t WHERE id IN (?, ...) per batch (several
           times faster than a query per row), the rows put in the batch's
           order and joined into one bytes object.

All three read the same ids in the same order, and their sums must agree
(per loop).
Before that, the same order is read by each source in this process alone,
without DataLoader or transform (one byte of every page touched): what the
source itself costs.  Then ds[i] (a dict of every field), ds.view(i, field)
and ds.read(i, field) are timed in one thread, in microseconds per sample.
Files are read once before timing (a warm page cache), as a training job's
second epoch finds them.  --check npsum replaces the word sum by the sum of
the bytes with a.sum(dtype=np.uint64) (what the first figures used: NumPy's
uint8-to-uint64 reduction costs about 2.8 us per KiB, more than the reads);
--check crc32 by zlib.crc32.

    /usr/bin/python3 python/bench/bench_loader.py --bench build/tool/pagedb-bench \
        [--img 20000] [--small 1000000] [--dir DIR] [--workers 2] [--batch 64] [--window BYTES] \
        [--loops per-sample,per-batch,deliver] [--rounds 2] [--sources pagedb,memmap,sqlite3] [--check words|npsum]
"""
import argparse
import os
import resource
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import warnings
import zlib

import numpy as np
import torch
import torch.utils.data as tud

import pagedb
from pagedb.torch import DataLoader, IterableDataset

SEED = 42


MASK = (1 << 62) - 1   # sums kept below 2^62: they travel in int64 tensors


def word_sum(a):
    """The sum (mod 2^62) of uint8 array A's bytes read as little-endian
    64-bit words, the last one zero-padded: every byte read, at memory speed."""
    n8 = len(a) // 8 * 8
    s = int(a[:n8].view("<u8").sum(dtype=np.uint64)) if n8 else 0
    if n8 < len(a):
        s += int.from_bytes(a[n8:].tobytes(), "little")
    return s & MASK


def np_sum(a):
    return int(a.sum(dtype=np.uint64)) & MASK


SUM = word_sum


def check(i, view):
    """(id, length, sum) of sample I's bytes VIEW, whose header must name I
    and its length."""
    a = np.frombuffer(view, dtype=np.uint8)
    if len(a) >= 16:
        sid, n = struct.unpack_from("<QQ", a, 0)
        if sid != i or n != len(a):
            raise ValueError("sample %d: header says id %d, %d bytes; %d read" % (i, sid, n, len(a)))
    return i, len(a), SUM(a)


def collate(triples):
    """A batch of check() results as it crosses to the main process: (ids,
    lengths, sum of the sums), two small int64 arrays and an int, pickled
    by value (torch tensors would each cross through a shared-memory segment
    of their own, which costs more than the samples)."""
    ids, lens, sums = zip(*triples)
    return np.array(ids, dtype=np.int64), np.array(lens, dtype=np.int64), sum(sums) & MASK


def check_batch(ids, data, off):
    """(ids, lengths, sum) of a batch: DATA (uint8) holds the samples IDS
    back to back, sample k at OFF[k]:OFF[k+1]; every header is checked at once
    and the buffer summed as check() sums one sample."""
    ids = np.asarray(ids, dtype=np.int64)
    lens = np.diff(off)
    if (lens < 16).any():
        raise ValueError("a sample shorter than its header")
    hdr = data[off[:-1, None] + np.arange(16)].view("<u8")
    if not ((hdr[:, 0] == ids).all() and (hdr[:, 1] == lens).all()):
        k = int(np.flatnonzero((hdr[:, 0] != ids) | (hdr[:, 1] != lens))[0])
        raise ValueError("sample %d: header says id %d, %d bytes; %d read" % (ids[k], hdr[k, 0], hdr[k, 1], lens[k]))
    return ids, lens, SUM(data)


def deliver(data, off):
    """A batch as the deliver loop hands it to the main process: its bytes
    DATA (uint8) and OFF (int64, the samples' bounds) as two torch tensors,
    which torch moves into shared memory as it sends them (the bytes are
    copied once, in the worker, and mapped by the main process), as any
    training job's batches cross.  torch.from_numpy shares the array's
    memory (sqlite3's joined bytes are read-only: torch warns, and the
    tensor is only read)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(data), torch.from_numpy(off)


def delivered_ids(data, off):
    """The main process's cheap check of a delivered batch: its samples'
    16-byte headers, read at once (ids and lengths), the lengths checked
    against OFF.  The ids, whose order the caller checks."""
    d, o = data.numpy(), off.numpy()
    lens = np.diff(o)
    if len(o) < 1 or o[0] != 0 or o[-1] != len(d) or (lens < 16).any():
        raise ValueError("a delivered batch's offsets do not cut its %d bytes into samples" % len(d))
    hdr = d[o[:-1, None] + np.arange(16)].view("<u8")
    if not (hdr[:, 1] == lens).all():
        k = int(np.flatnonzero(hdr[:, 1] != lens)[0])
        raise ValueError("sample %d: header says %d bytes; %d delivered" % (hdr[k, 0], hdr[k, 1], lens[k]))
    return hdr[:, 0].astype(np.int64)


class _Chunked(tud.IterableDataset):
    """An order split among DataLoader workers as pagedb.torch does it:
    worker w takes the batches k of the order with k % workers == w, and
    yields each as a whole batch (per_batch: read() and check_batch();
    else read_one() per sample, check() and collate())."""

    def __init__(self, order, batch, per_batch):
        # per_batch: True, False or "deliver" (read() and deliver())
        self.order, self.batch, self.per_batch = order, batch, per_batch

    def chunks(self):
        info = tud.get_worker_info()
        w, nw = (0, 1) if info is None else (info.id, info.num_workers)
        for k in range(w, -(-len(self.order) // self.batch), nw):
            yield self.order[k * self.batch:(k + 1) * self.batch]

    def __iter__(self):
        self.open()
        for ids in self.chunks():
            if self.per_batch == "deliver":
                yield deliver(*self.read(ids))
            elif self.per_batch:
                yield check_batch(ids, *self.read(ids))
            else:
                yield collate([check(i, self.read_one(i)) for i in ids.tolist()])


class MemmapSource(_Chunked):
    def __init__(self, raw, offsets, lengths, order, batch, per_batch):
        super().__init__(order, batch, per_batch)
        self.raw, self.offsets, self.lengths = raw, offsets, lengths

    def open(self):
        self.mm = np.memmap(self.raw, dtype=np.uint8, mode="r").view(np.ndarray)
        self.off, self.len = self.offsets.tolist(), self.lengths.tolist()

    def read_one(self, i):
        o = self.off[i]
        return self.mm[o:o + self.len[i]]

    def read(self, ids):
        mm, off, ln = self.mm, self.off, self.len
        parts = [mm[off[i]:off[i] + ln[i]] for i in ids.tolist()]
        offs = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offs[1:])
        return np.concatenate(parts), offs


class SqliteSource(_Chunked):
    def __init__(self, db, order, batch, per_batch):
        super().__init__(order, batch, per_batch)
        self.db = db

    def open(self):
        self.cur = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True).cursor()

    def read_one(self, i):
        return self.cur.execute("SELECT data FROM t WHERE id=?", (i,)).fetchone()[0]

    def read(self, ids):
        ids = ids.tolist()
        rows = dict(self.cur.execute("SELECT id, data FROM t WHERE id IN (%s)" % ",".join("?" * len(ids)), ids))
        parts = [rows[i] for i in ids]
        offs = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offs[1:])
        return np.frombuffer(b"".join(parts), dtype=np.uint8), offs


class FloorSource(_Chunked):
    """No source at all: each worker yields (its batch's ids, zeros, 0)
    without reading or checking anything -- what the DataLoader loop itself
    costs, the floor under every source."""

    def __iter__(self):
        for ids in self.chunks():
            yield ids, np.zeros(len(ids), dtype=np.int64), 0


class FloorDeliver(_Chunked):
    """The deliver loop with no source: each worker hands over every batch
    as deliver() does, its bytes copied from the worker's memory into a new
    array (as every source's batch is a new array: the queue's feeder thread
    pickles a batch after the worker has moved on), from one buffer of the
    largest batch made before the loop, each batch's headers written in:
    the sizes are the workload's, nothing is read.  What making and moving
    the batches costs by itself: no source can go faster through this loop."""

    def __init__(self, order, batch, lengths):
        super().__init__(order, batch, "deliver")
        self.lengths = lengths

    def __iter__(self):
        chunks = list(self.chunks())
        most = max((int(self.lengths[ids].sum()) for ids in chunks), default=0)
        buf = np.ones(most, dtype=np.uint8)
        col = np.arange(16)
        for ids in chunks:
            lens = self.lengths[ids]
            offs = np.zeros(len(ids) + 1, dtype=np.int64)
            np.cumsum(lens, out=offs[1:])
            data = buf[:offs[-1]].copy()
            hdr = np.stack([ids, lens], 1).astype("<u8").view(np.uint8)
            data[offs[:-1, None] + col] = hdr
            yield deliver(data, offs)


class PagedbCheck:
    """pagedb's per-sample transform: check() of the sample's field.  The
    id is the sample's position in the order, which a sample dict does not
    carry, so it is taken from the bytes' header and checked against the
    length only."""

    def __init__(self, field):
        self.field = field

    def __call__(self, sample):
        v = sample[self.field]
        sid = struct.unpack_from("<Q", v, 0)[0] if len(v) >= 8 else -1
        return check(int(sid), v)


class PagedbDeliver:
    """pagedb's batch_transform in the deliver loop: deliver() of a
    pagedb.Batch's column (read by one C call, Iterator.next_packed)."""

    def __init__(self, field):
        self.field = field

    def __call__(self, batch):
        return deliver(*batch.columns[self.field])


class PagedbCheckBatch:
    """pagedb's batch_transform: check_batch() of a pagedb.Batch."""

    def __init__(self, field):
        self.field = field

    def __call__(self, batch):
        return check_batch(batch.ids, *batch.columns[self.field])


def run_loader(source, batch, workers, deliver_loop=False, verify=False, shared=True):
    """The loop over a DataLoader of SOURCE: (samples, seconds, ids, sum,
    CPU seconds).  DELIVER_LOOP: batches are deliver()'s tensors, checked by
    delivered_ids() only; VERIFY (untimed use) also sums their bytes.
    SHARED: pagedb.torch.DataLoader's shared_batches."""
    ctx = "fork" if workers else None
    if isinstance(source, IterableDataset):
        loader = DataLoader(source, batch_size=batch, num_workers=workers, multiprocessing_context=ctx,
                            collate_fn=collate, shared_batches=shared)
    else:
        loader = tud.DataLoader(source, batch_size=None, num_workers=workers, multiprocessing_context=ctx,
                                collate_fn=lambda b: b)
    r0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    n = 0
    ids = []
    total = 0
    if deliver_loop:
        for data, off in loader:
            i = delivered_ids(data, off)
            n += len(i)
            ids.append(i)
            if verify:
                total = (total + SUM(data.numpy())) & MASK
    else:
        for i, ln, s in loader:
            n += len(i)
            ids.append(i)
            total = (total + s) & MASK
    dt = time.perf_counter() - t0
    del loader   # the workers exit (an exhausted iterator has shut them down): their CPU time is counted
    r1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime for a, b in zip(r0, r1))
    return n, dt, np.concatenate(ids) if ids else np.empty(0, np.int64), total, cpu


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
    # The loops and sources alternate: each loop runs every source in turn,
    # --rounds times, and the best round of each counts (the least disturbed
    # by the other programs on the machine).
    for rnd in range(0 if args.bare_only else args.rounds):
        for loop in args.loops:
            per_batch = {"per-sample": False, "per-batch": True, "deliver": "deliver"}[loop]
            dl = loop == "deliver"

            def make(src):
                if src in ("pagedb", "pagedb-tq"):
                    bt = PagedbDeliver(field) if dl else PagedbCheckBatch(field) if per_batch else None
                    return IterableDataset(pdb_path, kind="random", seed=SEED, fields=[field], raw=True,
                                           window=args.window, read_mode=args.read_mode,
                                           transform=None if per_batch else PagedbCheck(field), batch_transform=bt)
                if src == "memmap":
                    return MemmapSource(raw, offsets, lengths, order, b, per_batch)
                return SqliteSource(sq, order, b, per_batch)
            for src in args.sources:
                if src == "pagedb-tq" and not dl:
                    continue
                if dl and rnd == 0:
                    # The bytes' sum, in an untimed pass of the same loop.
                    n, dt, ids, total, cpu = run_loader(make(src), b, w, True, True, src != "pagedb-tq")
                    if n != count or not (ids == order).all():
                        raise SystemExit("%s deliver %s (untimed): read %d samples, not the %d of the order"
                                         % (name, src, n, count))
                    res[("deliver-sum", src)] = (0, 0, total, 0)
                n, dt, ids, total, cpu = run_loader(make(src), b, w, dl, False, src != "pagedb-tq")
                if dl:
                    total = res[("deliver-sum", src)][2]
                if n != count or not (ids == order).all():
                    raise SystemExit("%s %s %s: read %d samples, not the %d of the order in order"
                                     % (name, loop, src, n, count))
                key = (loop, src)
                if key not in res or n / dt > res[key][0]:
                    res[key] = (n / dt, dt, total, cpu / n * 1e6)
                print("  %-8s %-10s %-8s round %d: %9d samples in %7.2f s = %9.0f samples/s; CPU %7.1f us/sample"
                      % (name, loop, src, rnd + 1, n, dt, n / dt, cpu / n * 1e6), flush=True)
    if not args.bare_only:
        n, dt, ids, total, cpu = run_loader(FloorSource(order, b, True), b, w)
        if n != count or not (ids == order).all():
            raise SystemExit("%s floor: %d samples, not the order" % (name, n))
        res[("floor", "none")] = (n / dt, dt, 0, cpu / n * 1e6)
        print("  %-8s the loop alone, empty batches: %9d samples in %7.2f s = %9.0f samples/s; CPU %7.1f us/sample"
              % (name, n, dt, n / dt, cpu / n * 1e6), flush=True)
    if not args.bare_only and "deliver" in args.loops:
        for rnd in range(args.rounds):
            n, dt, ids, total, cpu = run_loader(FloorDeliver(order, b, lengths), b, w, True)
            if n != count or not (ids == order).all():
                raise SystemExit("%s deliver floor: %d samples, not the order" % (name, n))
            if ("deliver-floor", "none") not in res or n / dt > res[("deliver-floor", "none")][0]:
                res[("deliver-floor", "none")] = (n / dt, dt, 0, cpu / n * 1e6)
            print("  %-8s the deliver loop alone, bytes in memory, round %d: %9d samples in %7.2f s = %9.0f "
                  "samples/s; CPU %7.1f us/sample" % (name, rnd + 1, n, dt, n / dt, cpu / n * 1e6), flush=True)
    for loop in args.loops + ["deliver-sum"]:
        sums = {v[2] for k, v in res.items() if k[0] == loop and k[1] != "none"}
        if len(sums) > 1:
            raise SystemExit("%s %s: the sources' byte sums differ: %r" % (name, loop, res))
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
    ap.add_argument("--sources", default="pagedb,pagedb-tq,memmap,sqlite3")
    ap.add_argument("--bare-only", action="store_true", help="skip the DataLoader runs")
    ap.add_argument("--window", type=int, default=16 << 20, help="pagedb's read-ahead bytes (%(default)s)")
    ap.add_argument("--loops", default="per-sample,per-batch,deliver", help="the loops to run (%(default)s)")
    ap.add_argument("--workloads", default="W-img,W-small", help="the workloads to run (%(default)s)")
    ap.add_argument("--read-mode", default="mmap", choices=("mmap", "copy"),
                    help="pagedb's read mode in the DataLoader loops (%(default)s)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of every loop and source, alternating; the best "
                    "counts (%(default)s)")
    ap.add_argument("--check", choices=("words", "npsum", "crc32"), default="words",
                    help="how the bytes are summed: 64-bit words, or NumPy's uint8 sum (%(default)s)")
    args = ap.parse_args()
    args.sources = args.sources.split(",")
    args.loops = args.loops.split(",")
    for loop in args.loops:
        if loop not in ("per-sample", "per-batch", "deliver"):
            raise SystemExit("--loops: per-sample, per-batch and/or deliver, not %r" % loop)
    global SUM
    SUM = {"words": word_sum, "npsum": np_sum, "crc32": lambda a: zlib.crc32(a)}[args.check]
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
    print("torch %s, numpy %s, sqlite %s, pagedb %s; %d workers, batch %d, fork, check %s, %d rounds"
          % (torch.__version__, np.__version__, sqlite3.sqlite_version, pagedb.__version__, args.workers,
             args.batch, args.check, args.rounds))
    rows = []
    for name in args.workloads.split(","):
        if name not in ("W-img", "W-small"):
            raise SystemExit("--workloads: W-img and/or W-small, not %r" % name)
        bench_workload(name, args.img if name == "W-img" else args.small, d, args, rows)
    print()
    print("%-8s %-10s %9s %12s %12s %12s %10s %10s" % ("workload", "loop", "samples", "pagedb/s", "memmap/s",
                                                       "sqlite3/s", "vs memmap", "vs sqlite3"))
    for name, count, res, *_ in ([] if args.bare_only else rows):
        for loop in args.loops:
            p, m, s = (res.get((loop, k), (float("nan"),))[0] for k in ("pagedb", "memmap", "sqlite3"))
            print("%-8s %-10s %9d %12.0f %12.0f %12.0f %9.1f%% %9.2fx" % (name, loop, count, p, m, s, 100 * p / m,
                                                                          p / s))
            if (loop, "pagedb-tq") in res:
                q = res[(loop, "pagedb-tq")][0]
                print("%-8s %-10s %9s %12.0f %12s %12s %9.1f%% %9.2fx   (pagedb-tq: torch's transfer)"
                      % ("", "", "", q, "", "", 100 * q / m, q / s))
    print()
    for name, count, res, *_ in ([] if args.bare_only else rows):
        f = res[("floor", "none")]
        print("%-8s the DataLoader loop alone (empty batches, nothing read): %9.0f samples/s, CPU %.1f us/sample"
              % (name, f[0], f[3]))
        if ("deliver-floor", "none") in res:
            f = res[("deliver-floor", "none")]
            s = res.get(("deliver", "sqlite3"), (float("nan"),))[0]
            print("%-8s the deliver loop alone (batches' bytes in memory, nothing read): %9.0f samples/s, CPU %.1f "
                  "us/sample: %.2fx sqlite3's deliver loop, the most any source could be" % (name, f[0], f[3], f[0] / s))
    print()
    print("CPU time (the main process and its workers, user + system) per sample, in the best round (us):")
    print("%-8s %-10s %10s %10s %10s %12s %12s" % ("workload", "loop", "pagedb", "memmap", "sqlite3",
                                                 "memmap/pagedb", "sqlite3/pagedb"))
    for name, count, res, *_ in ([] if args.bare_only else rows):
        for loop in args.loops:
            p, m, s = (res.get((loop, k), (0, 0, 0, float("nan")))[3] for k in ("pagedb", "memmap", "sqlite3"))
            print("%-8s %-10s %10.1f %10.1f %10.1f %11.2fx %11.2fx" % (name, loop, p, m, s, m / p, s / p))
            if (loop, "pagedb-tq") in res:
                q = res[(loop, "pagedb-tq")][3]
                print("%-8s %-10s %10.1f %10s %10s %11.2fx %11.2fx   (pagedb-tq)" % ("", "", q, "", "", m / q, s / q))
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
        for loop in args.loops:
            p, m, s = (res.get((loop, k), (float("nan"),))[0] for k in ("pagedb", "memmap", "sqlite3"))
            print("target %-8s %-10s >= 80%% of memmap: %6.1f%% %s;  >= 3x sqlite3: %5.2fx %s"
                  % (name, loop, 100 * p / m, "pass" if p >= 0.8 * m else "SHORT", p / s,
                     "pass" if p >= 3 * s else "SHORT"))
    if tmp:
        import shutil
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
