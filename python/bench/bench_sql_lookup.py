"""SQL's lookups by id over a dataset of parts against the same samples in
one file (issue 26).

    tool/.libs/pagedb-partsbench -dir /dev/shm/pk -parts 10000 -reads 1000 -rounds 1 -keep
    PYTHONPATH=python:build/python/.libs python3 python/bench/bench_sql_lookup.py \\
        /dev/shm/pk/pagedb-partsbench-10000-*/d.pagedb /dev/shm/pk/pagedb-partsbench-10000-*/one.pagedb

Each lookup is one ``db.sql("SELECT count(*) FROM sample WHERE id = X")``:
N of random ids (each id of a dataset of P parts of 10 samples meets another
part, whose catalog the lookup must open), then N cycling over 5 ids (a
part's catalog read a moment ago, which the connection keeps).  Prints each
one's time a lookup for the dataset of parts and for the one file, and their
ratio.  Both datasets must hold the same ids (partsbench's -keep makes them).
"""
import argparse
import random
import time

import pagedb


def lookups(path: str, ids: list) -> float:
    db = pagedb.open(path)
    try:
        t = time.perf_counter()
        for i in ids:
            db.sql("SELECT count(*) FROM sample WHERE id = %d" % i)
        return (time.perf_counter() - t) / len(ids) * 1e6
    finally:
        db.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("parts", help="the dataset of parts")
    ap.add_argument("one", help="the same samples in one file")
    ap.add_argument("-n", type=int, default=500, help="lookups of each kind (500)")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    db = pagedb.open(a.parts)
    top = db.sql("SELECT max(id) FROM sample")[0][0] + 1
    db.close()
    rnd = random.Random(a.seed)
    ids = [rnd.randrange(0, top) for _ in range(a.n)]
    for name, seq in (("random ids", ids), ("5 ids in turn", [ids[k % 5] for k in range(a.n)])):
        p, o = lookups(a.parts, seq), lookups(a.one, seq)
        print("%-14s parts %7.1f us a lookup, one file %6.1f us: %.1fx" % (name, p, o, p / o))


if __name__ == "__main__":
    main()
