"""Four Python threads reading while two write, the GIL released in pagedb's
calls: no deadlock, no lost sample, no wrong bytes."""
import threading

import pagedb


def payload(i):
    return (b"sample %d;" % i) * (20 + i % 50)


def test_readers_and_writers(path):
    ds = pagedb.open(path, "c")
    ds.add_field("data", "bytes")
    ds.add_field("n", "int")
    with ds.writer() as w:
        for i in range(200):
            w.append({"data": payload(i), "n": i}, id=i)
    ds.commit()
    stop = threading.Event()
    errors, reads = [], [0] * 4

    def writer(base):
        try:
            with ds.writer() as w:
                for i in range(base, base + 400):
                    w.append({"data": payload(i), "n": i}, id=i)
                    if i % 100 == 0:
                        w.flush()
                        ds.commit()
        except Exception as e:                # noqa: BLE001
            errors.append(e)

    def reader(k):
        try:
            n = 0
            while not stop.is_set() or n < 200:
                i = (n * 13 + k) % 200
                s = ds[i]
                if s["n"] != i or bytes(s["data"]) != payload(i):
                    errors.append(("wrong", i))
                n += 1
                if n % 50 == 0:
                    o = ds.order("random", seed=k, epoch=n)
                    for j in o[:5]:
                        if bytes(ds.view(int(j), "data")) != payload(int(j)):
                            errors.append(("wrong", int(j)))
            reads[k] = n
        except Exception as e:                # noqa: BLE001
            errors.append(e)
    rs = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    ws = [threading.Thread(target=writer, args=(1000 * (k + 1),)) for k in range(2)]
    for t in rs + ws:
        t.start()
    for t in ws:
        t.join(timeout=300)
        assert not t.is_alive(), "a writer hung"
    stop.set()
    for t in rs:
        t.join(timeout=300)
        assert not t.is_alive(), "a reader hung"
    assert errors == []
    ds.commit()
    assert len(ds) == 1000
    for i in list(range(1000, 1400)) + list(range(2000, 2400)):
        s = ds[i]
        assert s["n"] == i and bytes(s["data"]) == payload(i)
    assert all(n >= 200 for n in reads)
    ds.close()
