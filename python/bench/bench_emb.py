#!/usr/bin/env python3
"""W-emb (shared/WORKLOADS.md; doc/benchmarks.md, "Tensors"): embeddings as
tensor fields against a flat numpy.memmap.

W-emb is COUNT samples of 768 float32 (3,072 bytes each; 1,000,000 by
default, 3 GB).  Value k of sample i is the float32 of
(unit(s) + unit(s) + unit(s) - 1.5) for successive draws from
s = state(i, 3) with wid 4 -- the workload's exact definition, computed here
with NumPy for all samples at once (uint64 arithmetic wraps as the C one
does), or -- much faster -- by tool/pagedb-wemb (workload.c's wl_emb), used
when found (--wemb PATH, $PAGEDB_WEMB, or the build tree's tool/).  The same
values are written twice:

  pagedb   a dataset with one tensor field emb, Tensor("float32", (768,))
           (stored as given: zero-copy reads), ids 0..COUNT-1;
  raw      a flat file of COUNT x 768 float32, read with numpy.memmap.

Two measurements, each alternating the two sources, REPS times (medians):

  batches  random batches of 256 ids (one epoch of pagedb_order's random
           order for seed 42, cut into batches; the same ids for both) into
           one (256, 768) torch float32 tensor:
             pagedb  pagedb.torch.IterableDataset(kind="random", seed=42,
                     fields=["emb"]) through pagedb.torch.DataLoader
                     (batch_size=256, num_workers=WORKERS): each batch is
                     one Iterator.next_into call filling the batch's
                     (256, 768) tensor (python/gather.c: one copy a value,
                     the GIL released); the epoch's order is computed
                     inside the timing, as the loader does;
             memmap  torch.from_numpy(mm[idx]), fancy indexing (one copy),
                     in the main process (WORKERS 0) or a torch DataLoader
                     over a dataset yielding whole batches (WORKERS > 0).
           samples/s; the target is pagedb >= 90% of memmap.
  gather   the same batches without a loader: ds.read_into(idx, ["emb"],
           [out]) into one preallocated-per-batch (256, 768) array against
           mm[idx]: the bare batch paths, samples/s.
  sample   ds[i]["emb"] (a read-only ndarray over the map) against mm[i],
           for the first SAMPLE ids of the order: microseconds a call.

The load average is printed before and after (the machine may be shared).

Usage: bench_emb.py DIR [--count N] [--reps R] [--workers W] [--sample N] [--wemb PATH]
(the files are made once in DIR and reused while COUNT matches).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

import pagedb
from pagedb.torch import DataLoader, IterableDataset

DIM = 768
SEED = 42
WID = 4
M64 = (1 << 64) - 1


def mix64(z):
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def mix64_int(z):
    z &= M64
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & M64
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def emb_values(lo, hi):
    """W-emb's values of samples lo..hi-1: a (hi-lo, 768) float32 array."""
    base = mix64_int(SEED ^ (WID << 56) ^ (3 << 48))
    i = np.arange(lo, hi, dtype=np.uint64)
    with np.errstate(over="ignore"):
        s = np.uint64(base) + i * np.uint64(0x9E3779B97F4A7C15)
        out = np.empty((hi - lo, DIM), dtype=np.float32)
        step = np.uint64(0x9E3779B97F4A7C15)
        for k in range(DIM):
            acc = np.zeros(hi - lo, dtype=np.float64)
            for _ in range(3):
                s = s + step
                acc += ((mix64(s) >> np.uint64(11)).astype(np.float64) + 1.0) / 9007199254740992.0
            out[:, k] = (acc - 1.5).astype(np.float32)
    return out


def find_wemb(given):
    """tool/pagedb-wemb: GIVEN, $PAGEDB_WEMB, the build tree's, or PATH's."""
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (given, os.environ.get("PAGEDB_WEMB"), os.path.join(here, "..", "..", "build", "tool", "pagedb-wemb"),
              shutil.which("pagedb-wemb")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def make(d, count, wemb=None):
    dsp, rawp = os.path.join(d, "w-emb.pagedb"), os.path.join(d, "w-emb.f32")
    stamp = os.path.join(d, "w-emb.count")
    if os.path.exists(stamp) and open(stamp).read() == str(count):
        return dsp, rawp
    for p in (dsp, dsp + "-catalog", dsp + "-index", rawp, stamp):
        if os.path.exists(p):
            os.unlink(p)
    t0 = time.time()
    if wemb:
        subprocess.run([wemb, d, "W-emb:%d" % count], check=True, stdout=subprocess.DEVNULL)
        # Spot checks against NumPy's computation of the definition.
        mm = np.memmap(rawp, dtype=np.float32, mode="r", shape=(count, DIM))
        with pagedb.open(dsp) as ds:
            for i in (0, count // 2, count - 1):
                want = emb_values(i, i + 1)[0]
                assert np.array_equal(mm[i], want) and np.array_equal(ds[i]["emb"], want), i
        del mm
        open(stamp, "w").write(str(count))
        print("made W-emb:%d with %s in %.0f s" % (count, wemb, time.time() - t0), file=sys.stderr)
        return dsp, rawp
    ds = pagedb.open(dsp, "c")
    ds.add_field("emb", pagedb.Tensor("float32", (DIM,)))
    with open(rawp, "wb") as raw, ds.writer() as w:
        chunk = 20000
        for lo in range(0, count, chunk):
            v = emb_values(lo, min(count, lo + chunk))
            raw.write(v.tobytes())
            for k in range(len(v)):
                w.append({"emb": v[k]}, id=lo + k)
    ds.commit()
    ds.close()
    open(stamp, "w").write(str(count))
    print("made W-emb:%d in %.0f s" % (count, time.time() - t0), file=sys.stderr)
    return dsp, rawp


class MemmapBatches(torch.utils.data.IterableDataset):
    """Whole batches of a memmap, mm[idx], split among workers as pagedb.torch splits."""

    def __init__(self, rawp, count, batches):
        self.rawp, self.count, self.batches = rawp, count, batches

    def __iter__(self):
        mm = np.memmap(self.rawp, dtype=np.float32, mode="r", shape=(self.count, DIM))
        info = torch.utils.data.get_worker_info()
        w, nw = (info.id, info.num_workers) if info else (0, 1)
        for k in range(w, len(self.batches), nw):
            yield torch.from_numpy(mm[self.batches[k]])


class PagedbLoader:
    """The loader of a training job: made (and the dataset opened) once;
    each run is a new epoch (set_epoch), its order computed inside the
    timing, as at the start of every epoch of a job."""

    def __init__(self, dsp, workers):
        self.it = IterableDataset(dsp, kind="random", seed=SEED, fields=["emb"])
        self.dl = DataLoader(self.it, batch_size=256, num_workers=workers)
        self.epoch = 0
        len(self.it)   # opens the dataset (untimed)

    def run(self):
        """(samples/s, samples per CPU-second of this process) of one epoch."""
        self.it.set_epoch(self.epoch)
        self.epoch += 1
        n, t0, c0 = 0, time.perf_counter(), time.process_time()
        first = None
        for b in self.dl:
            e = b["emb"]
            if first is None:
                first = e
            n += e.shape[0]
        rate = (n / (time.perf_counter() - t0), n / (time.process_time() - c0))
        # Untimed: the first batch is the epoch order's first ids, with W-emb's values.
        i = int(self.it.order(self.epoch - 1)[0])
        assert first.shape == (256, DIM) and first.dtype == torch.float32
        assert torch.equal(first[0], torch.from_numpy(emb_values(i, i + 1)[0]))
        return rate


def run_memmap(rawp, count, workers, batches):
    """(samples/s, samples per CPU-second of this process) of mm[idx] over
    BATCHES (the ids given: no order computed)."""
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    if workers == 0:
        mm = np.memmap(rawp, dtype=np.float32, mode="r", shape=(count, DIM))
        for idx in batches:
            e = torch.from_numpy(mm[idx])
            n += e.shape[0]
    else:
        src = MemmapBatches(rawp, count, batches)
        for e in torch.utils.data.DataLoader(src, batch_size=None, num_workers=workers):
            n += e.shape[0]
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def run_gather(dsp, rawp, count, batches):
    """(pagedb, memmap) samples/s of the bare batch paths: ds.read_into
    into a new (256, 768) array per batch against mm[idx]."""
    ds = pagedb.open(dsp)
    mm = np.memmap(rawp, dtype=np.float32, mode="r", shape=(count, DIM))
    n, t0 = 0, time.perf_counter()
    for idx in batches:
        out = np.empty((len(idx), DIM), np.float32)
        n += ds.read_into(idx, ["emb"], [out])
    tp = n / (time.perf_counter() - t0)
    n, t0 = 0, time.perf_counter()
    for idx in batches:
        n += len(mm[idx])
    tm = n / (time.perf_counter() - t0)
    assert np.array_equal(out, mm[batches[-1]])
    ds.close()
    return tp, tm


def per_sample(dsp, rawp, count, ids):
    ds = pagedb.open(dsp)
    mm = np.memmap(rawp, dtype=np.float32, mode="r", shape=(count, DIM))
    ids = [int(i) for i in ids]
    t0 = time.perf_counter()
    for i in ids:
        a = ds[i]["emb"]
    tp = (time.perf_counter() - t0) / len(ids) * 1e6
    t0 = time.perf_counter()
    for i in ids:
        a = mm[i]
    tm = (time.perf_counter() - t0) / len(ids) * 1e6
    assert np.array_equal(a, ds[ids[-1]]["emb"])
    ds.close()
    return tp, tm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--count", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--sample", type=int, default=100000)
    ap.add_argument("--wemb", default=None)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    load0 = os.getloadavg()
    dsp, rawp = make(a.dir, a.count, find_wemb(a.wemb))
    with pagedb.open(dsp) as ds:
        t0 = time.perf_counter()
        order = ds.order("random", seed=SEED)
        torder = time.perf_counter() - t0
    batches = [order[k:k + 256] for k in range(0, len(order), 256)]
    loader = PagedbLoader(dsp, a.workers)
    pg, mm, pgc, mmc = [], [], [], []
    for r in range(a.reps):
        (w, c) = loader.run()
        pg.append(w)
        pgc.append(c)
        (w, c) = run_memmap(rawp, a.count, a.workers, batches)
        mm.append(w)
        mmc.append(c)
        print("rep %d: pagedb %.0f samples/s (%.0f per CPU-s), memmap %.0f samples/s (%.0f per CPU-s)"
              % (r + 1, pg[-1], pgc[-1], mm[-1], mmc[-1]), file=sys.stderr)
    gp, gm = [], []
    for r in range(a.reps):
        tp, tm = run_gather(dsp, rawp, a.count, batches)
        gp.append(tp)
        gm.append(tm)
    sp, sm = [], []
    for r in range(a.reps):
        tp, tm = per_sample(dsp, rawp, a.count, order[: a.sample])
        sp.append(tp)
        sm.append(tm)
    p, m = statistics.median(pg), statistics.median(mm)
    print("load average before %.2f %.2f %.2f, after %.2f %.2f %.2f (2 cores); the epoch's order %.3f s"
          % (load0 + os.getloadavg() + (torder,)))
    print("W-emb:%d batches of 256, %d workers: pagedb %.0f samples/s, memmap %.0f samples/s: %.1f%% "
          "(runs: pagedb %s; memmap %s)" % (a.count, a.workers, p, m, 100 * p / m,
                                            ", ".join("%.0f" % x for x in pg), ", ".join("%.0f" % x for x in mm)))
    if a.workers == 0:
        pc, mc = statistics.median(pgc), statistics.median(mmc)
        print("W-emb:%d batches of 256, per CPU-second of the process: pagedb %.0f, memmap %.0f: %.1f%% "
              "(runs: pagedb %s; memmap %s)" % (a.count, pc, mc, 100 * pc / mc, ", ".join("%.0f" % x for x in pgc),
                                                ", ".join("%.0f" % x for x in mmc)))
    print("W-emb:%d bare batches (ds.read_into against mm[idx]): pagedb %.0f samples/s, memmap %.0f samples/s: "
          "%.1f%% (runs: pagedb %s; memmap %s)" % (a.count, statistics.median(gp), statistics.median(gm),
                                                  100 * statistics.median(gp) / statistics.median(gm),
                                                  ", ".join("%.0f" % x for x in gp), ", ".join("%.0f" % x for x in gm)))
    print("W-emb:%d per sample (%d ids of the order): ds[i][\"emb\"] %.2f us, mm[i] %.2f us (runs: %s; %s)"
          % (a.count, a.sample, statistics.median(sp), statistics.median(sm),
             ", ".join("%.2f" % x for x in sp), ", ".join("%.2f" % x for x in sm)))


if __name__ == "__main__":
    main()
