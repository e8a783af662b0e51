"""The commit of parts on object storage against the local commit (issue 26).

    bash test/micro-ceph.sh start /tmp/ceph $$      # prints PORT KEY SECRET
    AWS_ACCESS_KEY_ID=KEY AWS_SECRET_ACCESS_KEY=SECRET AWS_ENDPOINT_URL=http://127.0.0.1:PORT \\
      AWS_REGION=us-east-1 python3 python/bench/bench_parts_remote.py --bucket pdb --parts 16 --per 1000

Writes PARTS parts of PER samples (784-byte images and a label, as
Fashion-MNIST's), pushes each to s3://BUCKET/.../NAME.parts/k, then times,
REPS times in alternation:
  local   commit_parts of the 16 local parts into a new local dataset
  url     commit_parts of the 16 pushed parts (by URL) into a new local dataset
  s3      commit_parts of the 16 pushed parts into a new dataset on s3:// (the
          remote commit: catalog, header and index fetched, the local commit,
          the index and the catalog put)
and prints each one's median time, per sample, and its ratio to local's
(measured in the same run).  The bucket must exist.
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time
import uuid

import numpy as np

import pagedb

FIELDS = [("image", "bytes"), ("label", "int")]


def make(path, lo, n, rng):
    ds = pagedb.open(path, "c")
    for f in FIELDS:
        ds.add_field(*f)
    with ds.writer() as w:
        for i in range(lo, lo + n):
            w.append({"image": rng.integers(0, 256, 784, dtype=np.uint8).tobytes(), "label": i % 10}, id=i)
    seal = ds.seal()
    ds.close()
    return seal


def empty(path):
    ds = pagedb.open(path, "c")
    for f in FIELDS:
        ds.add_field(*f)
    ds.commit()
    ds.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bucket", default="pdb")
    ap.add_argument("--parts", type=int, default=16)
    ap.add_argument("--per", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    run = uuid.uuid4().hex[:8]
    tmp = tempfile.mkdtemp(prefix="pagedb-prbench-")
    rng = np.random.default_rng(1)
    base = "s3://%s/prbench-%s" % (a.bucket, run)
    local_parts, url_parts = [], []
    for k in range(a.parts):
        p = os.path.join(tmp, "p%d" % k)
        seal = make(p, k * a.per, a.per, rng)
        url = "%s/ds.pagedb.parts/p%d" % (base, k)
        ds = pagedb.open(p)
        ds.push(url)
        ds.close()
        local_parts.append((p, "p%d" % k, 0, seal))
        url_parts.append((url, "p%d" % k, 0, seal))
    times = {"local": [], "url": [], "s3": []}
    n = a.parts * a.per
    for r in range(a.reps):
        for kind in ("local", "url", "s3"):
            d = os.path.join(tmp, "%s%d.pagedb" % (kind, r))
            empty(d)
            if kind == "s3":
                # The dataset beside the parts, so that their uris are relative.
                target = "%s/ds.pagedb" % base
                src = pagedb.open(d)
                src.push(target)
                src.close()
                ds = pagedb.open(target)
            else:
                ds = pagedb.open(d, "w")
            t0 = time.perf_counter()
            got = ds.commit_parts(local_parts if kind == "local" else url_parts)
            times[kind].append(time.perf_counter() - t0)
            ds.close()
            assert got == n, (kind, got)
            if kind == "s3":
                with pagedb.open(target) as ds:
                    assert len(ds) == n and len(ds.parts()) == a.parts
    ref = statistics.median(times["local"])
    print("parts %d x %d samples (%d), %d reps, median" % (a.parts, a.per, n, a.reps))
    print("%-6s %10s %14s %8s" % ("commit", "ms", "us/sample", "x local"))
    for kind in ("local", "url", "s3"):
        m = statistics.median(times[kind])
        print("%-6s %10.1f %14.2f %8.2f" % (kind, m * 1e3, m * 1e6 / n, m / ref))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
