#!/usr/bin/env python3
"""W-tokens (shared/WORKLOADS.md; doc/benchmarks.md, issue 27): language-model
blocks through pagedb.torch.TokenDataset against nanoGPT's loader.

The workload is made by tool/pagedb-tokgen (tool/workload.c's W-tokens:
DOCS documents of lognormal length, median 1,000 uint16 tokens) twice, in
DIR: a dataset with the token field `tokens` (tensor:uint16:*) and nanoGPT's
flat file of the same tokens end to end (np.memmap of uint16).  Then, with
the page cache warmed for both (each file read once), REPS rounds, each
timing BATCHES batches of BATCH blocks of BLOCK (2,048) tokens from either
source in turn (the order of the two alternates round by round, for a
machine shared with other work):

  pagedb   pagedb.torch.TokenDataset(path, "tokens", BLOCK, kind="random",
           seed=42) through pagedb.torch.DataLoader(batch_size=BATCH,
           num_workers=0): each batch one (BATCH, BLOCK + 1) int64 tensor
           read by one call (Tokens.read), x = b[:, :-1], y = b[:, 1:];
           the epoch's stream (its token map) is made before the timing,
           and its cost is printed on its own.
  nanogpt  nanoGPT's train.py get_batch, as written there (the memmap made
           anew each batch, random offsets by torch.randint, x and y each
           stacked from int64 copies of the windows), without the GPU copy.
  gather   the same random windows of the memmap taken by one NumPy fancy
           index (data[ix[:, None] + arange(BLOCK + 1)]) and one astype: a
           tighter loader than nanoGPT's, printed beside the target's
           reference.

It prints blocks/s of each (medians of the rounds), the ratio pagedb /
nanogpt (the target: >= 0.90), the stream's open time, and the bytes each
needs on disk (apparent and allocated).  Before the rounds it times the
open of a stream in a fresh process (OPENS processes, each: pagedb.open,
then Dataset.tokens, whose token map is read from the index file when
stored; beside it nanoGPT's np.memmap of the .bin in the same process),
medians printed; --open-only stops there.

Usage: tokbench.py DIR [--gen PATH-TO-pagedb-tokgen] [--docs N] [--reps R]
       [--batches K] [--batch B] [--block T] [--codec none|lz4] [--opens N]
       [--open-only]
(the files are made in DIR unless they exist for N documents already.)
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

import pagedb
from pagedb.torch import DataLoader, TokenDataset


def nanogpt_batches(binpath, block, batch, k):
    """K batches of nanoGPT's get_batch (train.py), CPU side."""
    for _ in range(k):
        data = np.memmap(binpath, dtype=np.uint16, mode='r')
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([torch.from_numpy((data[i:i + block]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block]).astype(np.int64)) for i in ix])
        yield x, y


def gather_batches(binpath, block, batch, k):
    """K batches of random windows gathered by one NumPy fancy index of the
    memmap (a tighter loader than get_batch; shown beside it, not the
    target's reference)."""
    data = np.memmap(binpath, dtype=np.uint16, mode='r')
    span = np.arange(block + 1)
    for _ in range(k):
        ix = torch.randint(len(data) - block, (batch,)).numpy()
        b = torch.from_numpy(data[ix[:, None] + span].astype(np.int64))
        yield b[:, :-1], b[:, 1:]


def pagedb_batches(loader, k):
    it = iter(loader)
    for _ in range(k):
        b = next(it)
        yield b[:, :-1], b[:, 1:]


FRESH = '''
import sys, time
import numpy as np
import pagedb
path, binpath, block = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
ds = pagedb.open(path)
t1 = time.perf_counter()
t = ds.tokens("tokens", block, "random", 42, 0)
t5 = time.perf_counter()
o = t.order()
t2 = time.perf_counter()
b = t.block(o[0])
t3 = time.perf_counter()
m = np.memmap(binpath, dtype=np.uint16, mode="r")
w = np.array(m[len(m) // 2:len(m) // 2 + block + 1])
t4 = time.perf_counter()
print(t1 - t0, t5 - t1, t3 - t2, t4 - t3, int(t.stored), t.documents, t2 - t5)
'''


def fresh_opens(path, binpath, block, n):
    """Medians over N fresh processes: (dataset open, stream open, first
    block, nanoGPT's memmap and first window, the rank's order), stored,
    documents."""
    runs = []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", FRESH, path, binpath, str(block)], check=True,
                             capture_output=True, text=True).stdout.split()
        runs.append(out)
    med = [statistics.median(float(r[i]) for r in runs) for i in (0, 1, 2, 3, 6)]
    return med, runs[0][4] == "1", int(runs[0][5])


def timed(gen):
    t0 = time.perf_counter()
    n = 0
    for x, y in gen:
        n += x.shape[0]
    return n / (time.perf_counter() - t0)


def space(paths):
    apparent = sum(os.stat(p).st_size for p in paths if os.path.exists(p))
    allocated = sum(os.stat(p).st_blocks * 512 for p in paths if os.path.exists(p))
    return apparent, allocated


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--gen", default="tool/pagedb-tokgen")
    ap.add_argument("--docs", type=int, default=360000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--block", type=int, default=2048)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--opens", type=int, default=7)
    ap.add_argument("--open-only", action="store_true")
    a = ap.parse_args()
    path, binpath = os.path.join(a.dir, "wtok.pagedb"), os.path.join(a.dir, "wtok.bin")
    stamp = os.path.join(a.dir, "wtok.docs")
    want = "%d %s" % (a.docs, a.codec)
    if not (os.path.exists(stamp) and open(stamp).read() == want):
        t0 = time.perf_counter()
        subprocess.run([a.gen, a.dir, str(a.docs), a.codec], check=True)
        print("made in %.1f s" % (time.perf_counter() - t0))
        with open(stamp, "w") as f:
            f.write(want)
    files = [path, path + "-catalog", path + "-index"]
    warm([path + "-catalog", path + "-index"] if a.open_only else files + [binpath])
    (dopen, topen, first, mm, order), stored, ndoc = fresh_opens(path, binpath, a.block, a.opens)
    print("fresh process, medians of %d: pagedb.open %.2f ms, Dataset.tokens %.3f ms (token map %s, %d documents), "
          "Tokens.order() of every block %.2f ms, first block %.3f ms; nanoGPT np.memmap + first window %.3f ms"
          % (a.opens, dopen * 1e3, topen * 1e3, "stored" if stored else "built", ndoc, order * 1e3, first * 1e3,
             mm * 1e3))
    if a.open_only:
        return

    ds = TokenDataset(path, "tokens", a.block, kind="random", seed=42)
    t0 = time.perf_counter()
    stream = ds.stream()
    build = time.perf_counter() - t0
    total, nblocks, ndoc = stream.tokens, stream.blocks, stream.documents
    need = a.batches * a.batch
    if need > nblocks:
        sys.exit("tokbench: %d blocks a round, the epoch has %d: fewer --batches or more --docs" % (need, nblocks))
    print("W-tokens: %d documents, %d tokens (%.1f M), %d blocks of %d + 1; torch %s, %d threads"
          % (ndoc, total, total / 1e6, nblocks, a.block, torch.__version__, torch.get_num_threads()))
    print("token map (pagedb_tokens_open, one epoch): %.3f s" % build)
    loader = DataLoader(ds, batch_size=a.batch, num_workers=0)
    rates = {"pagedb": [], "nanogpt": [], "gather": []}
    for r in range(a.reps):
        order = ["pagedb", "nanogpt", "gather"] if r % 2 == 0 else ["gather", "nanogpt", "pagedb"]
        for who in order:
            if who == "pagedb":
                # Each round reads the next NEED blocks of the epoch; a
                # new epoch when it runs out (a new stream: not timed).
                if ds.position + need > len(ds):
                    ds.set_epoch(ds.epoch + 1)
                    ds.stream()
                rates[who].append(timed(pagedb_batches(loader, a.batches)))
            elif who == "nanogpt":
                rates[who].append(timed(nanogpt_batches(binpath, a.block, a.batch, a.batches)))
            else:
                rates[who].append(timed(gather_batches(binpath, a.block, a.batch, a.batches)))
        print("round %d: pagedb %.0f, nanogpt %.0f, gather %.0f blocks/s"
              % (r, rates["pagedb"][-1], rates["nanogpt"][-1], rates["gather"][-1]))
    p, n, g = (statistics.median(rates[k]) for k in ("pagedb", "nanogpt", "gather"))
    print("median over %d rounds of %d batches of %d: pagedb %.0f blocks/s, nanogpt %.0f blocks/s, ratio %.3f "
          "(target >= 0.90); gather %.0f blocks/s, pagedb / gather %.3f"
          % (a.reps, a.batches, a.batch, p, n, p / n, g, p / g))
    pa, pb = space(files)
    na, nb = space([binpath])
    print("disk: pagedb %d bytes apparent, %d allocated (data %d, catalog %d, index %d); nanoGPT .bin %d apparent, "
          "%d allocated; pagedb / bin %.3f (allocated)"
          % (pa, pb, os.path.getsize(path), os.path.getsize(path + "-catalog"), os.path.getsize(path + "-index"),
             na, nb, pb / nb))


if __name__ == "__main__":
    main()
