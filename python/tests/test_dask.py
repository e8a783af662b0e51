"""pagedb.dask (issue 26): a real dask.distributed LocalCluster -- 4 worker
processes of one thread, started and stopped here -- writes Fashion-MNIST
into a dataset as parts, one per partition, committed by the client.

The default suite takes Fashion-MNIST's 10,000 test images (a minute on a
busy machine); ``make check-dask`` (PAGEDB_DASK_FULL=1) all 70,000.

- the images in 16 parts: every sample exactly once with its bytes
  and label, SQL counts per class, orders exactly-once over 2 ranks x 2
  DataLoader workers;
- a worker process killed (SIGKILL) in the middle of writing a part: Dask
  reruns the task in a new attempt, the commit takes one part per
  partition, every sample once; the killed attempt's part is an orphan,
  listed and removed;
- a job whose task fails: nothing committed, the dataset unchanged, its
  parts orphans, listed and removed (and never a committed part);
- onto the Ceph S3 gateway (test/micro-ceph.sh, started by a fixture;
  skipped without Ceph): the images in 16 parts pushed by the workers and
  committed into s3://pdb/fm.pagedb, read back over s3://, a second job,
  the index objects left by earlier commits cleaned up;
- a Dask dataframe, on the cluster and on Dask's local scheduler;
- a schema with an aligned field, tensor fields and a codec, taken by
  every part exactly;
- without Dask: the same from a multiprocessing pool, with auto ids (an
  empty partition's part removed, not committed)."""
import collections.abc
import os
import signal
import sys
import time

import pytest

pytest.importorskip("dask.distributed")
pytest.importorskip("torch")
SRC = "/usr/share/datasets/fashion-mnist"
if not os.path.exists(os.path.join(SRC, "train-images-idx3-ubyte.gz")):
    pytest.skip("no %s (Debian: dataset-fashion-mnist)" % SRC, allow_module_level=True)

import cloudpickle  # noqa: E402
import dask.bag as dbag  # noqa: E402
import numpy as np  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

import pagedb  # noqa: E402
import pagedb.dask  # noqa: E402
from pagedb.torch import DataLoader, IterableDataset  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import fashion_mnist  # noqa: E402

# The workers cannot import this file: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

FIELDS = [("image", "bytes"), ("label", "int"), ("idx", "int")]
FULL = os.environ.get("PAGEDB_DASK_FULL") == "1"


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=50)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def fmnist(tmp_path_factory):
    """Fashion-MNIST's images and labels as .npy files the workers map: all
    70,000 (train, then test) with FULL, else the 10,000 test images."""
    d = tmp_path_factory.mktemp("fmnist")
    if FULL:
        tr_x, tr_y, te_x, te_y = fashion_mnist.load_arrays(SRC)
        x = np.concatenate([tr_x, te_x]).reshape(-1, 784)
        y = np.concatenate([tr_y, te_y])
    else:
        x = fashion_mnist.read_idx(os.path.join(SRC, "t10k-images-idx3-ubyte.gz")).reshape(-1, 784)
        y = fashion_mnist.read_idx(os.path.join(SRC, "t10k-labels-idx1-ubyte.gz"))
    np.save(d / "x.npy", x)
    np.save(d / "y.npy", y)
    return str(d), x, y


class KillOnce(collections.abc.Mapping):
    """A sample whose reading kills its process (SIGKILL) the first time
    anywhere (a marker file says it happened): the worker dies in the middle
    of writing its part."""

    def __init__(self, s, marker):
        self.s, self.marker = s, marker

    def __getitem__(self, k):
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return self.s[k]
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)

    def __iter__(self):
        return iter(self.s)

    def __len__(self):
        return len(self.s)


def fm_samples(ks, d, lo, size, kill_at=None, fail_part=None, fail_after=None):
    """The samples of partitions KS: images LO + k * SIZE ... (k+1) * SIZE.
    KILL_AT (partition, index, marker): that sample kills its worker once;
    FAIL_PART: that partition raises, once FAIL_AFTER (dir, prefix, n): N
    parts named PREFIX... were begun in DIR (or 30 s passed)."""
    x = np.load(os.path.join(d, "x.npy"), mmap_mode="r")
    y = np.load(os.path.join(d, "y.npy"), mmap_mode="r")
    out = []
    for k in ks:
        if k == fail_part:
            for _ in range(300):
                if fail_after is None or len([n for n in os.listdir(fail_after[0]) if n.startswith(fail_after[1])
                                              and "-catalog" not in n]) >= fail_after[2]:
                    break
                time.sleep(0.1)
            raise RuntimeError("partition %d fails on purpose" % k)
        for i in range(lo + k * size, lo + (k + 1) * size):
            s = {"id": i, "image": x[i].tobytes(), "label": int(y[i]), "idx": i}
            if kill_at and kill_at[0] == k and i - lo - k * size == kill_at[1]:
                s = KillOnce(s, kill_at[2])
            out.append(s)
    return out


def no_id(s):
    return {k: v for k, v in s.items() if k != "id"}


def bag_of(d, lo, n, nparts, with_id=True, **kw):
    b = dbag.from_sequence(range(nparts), npartitions=nparts).map_partitions(fm_samples, d, lo, n // nparts, **kw)
    return b if with_id else b.map(no_id)


def check_all(path, x, y, lo, n):
    """Every image LO..LO+N-1 exactly once, bytes and labels as written."""
    with pagedb.open(path) as ds:
        assert len(ds) == n
        assert ds.sql("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM sample") == [(n, n, lo, lo + n - 1)]
        for i in range(lo, lo + n):
            s = ds[i]
            assert bytes(s["image"]) == x[i].tobytes() and s["label"] == y[i] and s["idx"] == i, i
        want = collections.Counter(int(v) for v in y[lo:lo + n])
        assert ds.sql("SELECT label, count(*) FROM sample GROUP BY label ORDER BY label") == sorted(want.items())
        assert ds.check() == []


def check_parts(parts, job, per):
    """Table part after JOB wrote fm.pagedb in 16 parts of PER: one part per
    partition, named, with its id range, recorded relative to the dataset."""
    assert [p["name"] for p in parts] == ["%s-%d" % (job.name, k) for k in range(16)]
    assert [(p["id_min"], p["id_max"], p["samples"]) for p in parts] == [(k * per, k * per + per - 1, per)
                                                                          for k in range(16)]
    assert all(p["uri"].startswith("fm.pagedb.parts/%s-" % job.name) for p in parts)


def test_fashion_mnist_in_16_parts(client, fmnist, tmp_path):
    d, x, y = fmnist
    n, per = len(x), len(x) // 16
    path = str(tmp_path / "fm.pagedb")
    job = pagedb.dask.write(bag_of(d, 0, n, 16), path, FIELDS, id_field="id", client=client)
    assert job.samples == n and len(job.parts) == 16 and job.orphans == []
    check_all(path, x, y, 0, n)
    with pagedb.open(path) as ds:
        check_parts(ds.parts(), job, per)
    # Orders across the parts: 2 ranks x 2 DataLoader workers, each id once.
    seen = []
    for rank in range(2):
        it = IterableDataset(path, kind="random", seed=7, rank=rank, world=2, fields=["idx"],
                             transform=lambda s: s["idx"])
        ids = [int(i) for b in DataLoader(it, batch_size=500, num_workers=2, multiprocessing_context="fork")
               for i in b]
        with pagedb.open(path) as ds:
            assert ids == ds.order("random", seed=7, rank=rank, world=2).tolist()
        seen += ids
    assert sorted(seen) == list(range(n))


def test_worker_killed_mid_part(client, fmnist, tmp_path):
    d, x, y = fmnist
    path = str(tmp_path / "k.pagedb")
    marker = str(tmp_path / "killed")
    lo = len(x) - 4000
    bag = bag_of(d, lo, 4000, 8, kill_at=(3, 300, marker))
    job = pagedb.dask.write(bag, path, FIELDS, id_field="id", client=client, page_size=1 << 16)
    assert os.path.exists(marker)                        # the worker was killed
    assert job.samples == 4000 and len(job.parts) == 8
    check_all(path, x, y, lo, 4000)
    # The killed attempt's part: an orphan of partition 3, listed, removed.
    assert len(job.orphans) == 1 and os.path.basename(job.orphans[0]["path"]).startswith(job.name + "-3-")
    assert job.orphans[0]["path"] not in job.parts
    assert [o["path"] for o in pagedb.dask.cleanup_parts(path, older_than=0)] == [job.orphans[0]["path"]]
    assert not os.path.exists(job.orphans[0]["path"]) and all(os.path.exists(p) for p in job.parts)
    assert pagedb.dask.cleanup_parts(path, older_than=0) == []
    check_all(path, x, y, lo, 4000)


def test_failed_job_changes_nothing(client, fmnist, tmp_path):
    d, x, y = fmnist
    path = str(tmp_path / "f.pagedb")
    pagedb.dask.write(bag_of(d, 0, 1000, 2, with_id=False), path, FIELDS, client=client)   # ids after: 0...
    before = pagedb.open(path)
    snapshot = (before.sql("SELECT id, label FROM sample ORDER BY id"), before.parts())
    before.close()
    with pytest.raises(pagedb.dask.JobFailed, match="partition 5 fails on purpose") as e:
        pagedb.dask.write(bag_of(d, 1000, 4000, 8, fail_part=5, fail_after=(path + ".parts", "jfail-", 3)), path,
                          id_field="id", client=client, job="jfail")
    with pagedb.open(path) as ds:
        assert (ds.sql("SELECT id, label FROM sample ORDER BY id"), ds.parts()) == snapshot
        committed = [os.path.join(os.path.dirname(path), p["uri"]) for p in ds.parts()]
    orphans = pagedb.dask.cleanup_parts(path, older_than=0, remove=False)
    names = [os.path.basename(o["path"]) for o in orphans]
    assert names and all(n.startswith(e.value.job + "-") for n in names)
    assert not any(n.startswith(e.value.job + "-5-") for n in names)
    assert pagedb.dask.cleanup_parts(path, older_than=3600, remove=True) == []   # too young
    assert sorted(o["path"] for o in pagedb.dask.cleanup_parts(path, older_than=0)) == sorted(o["path"] for o in orphans)
    left = sorted(os.listdir(path + ".parts"))
    assert all(not n.startswith(e.value.job) for n in left)
    assert all(os.path.exists(p) for p in committed)
    check_all(path, x, y, 0, 1000)
    # Cleanup refuses while another process holds the write lock.
    w = pagedb.open(path, "w")
    with pytest.raises(pagedb.BusyError):
        pagedb.dask.cleanup_parts(path, older_than=0)
    w.close()


CEPH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "micro-ceph.sh")


@pytest.fixture(scope="module")
def ceph(tmp_path_factory):
    """The one-node Ceph cluster and S3 gateway of the Tcl suite
    (test/micro-ceph.sh), with a bucket "pdb": the environment points
    pagedb at it (this process's, and the workers' through client.run).
    Skipped when Ceph is not installed (CI installs it)."""
    import shutil
    import subprocess
    if not (os.path.exists(CEPH) and shutil.which("radosgw") and shutil.which("ceph-mon") and shutil.which("curl")):
        pytest.skip("no Ceph (ceph-mon, ceph-osd, radosgw) or no test/micro-ceph.sh: the S3 test needs them")
    d = str(tmp_path_factory.mktemp("ceph"))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    out = subprocess.run(["bash", CEPH, "start", d, str(os.getpid())], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.fail("the Ceph cluster did not start: %s %s" % (out.stdout, out.stderr))
    port, key, secret = out.stdout.split()
    s3env = {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_ENDPOINT_URL": "http://127.0.0.1:" + port,
             "AWS_REGION": "us-east-1", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/pagedb-test/aws-credentials",
             "AWS_CONFIG_FILE": "/nonexistent/pagedb-test/aws-config", "AWS_EC2_METADATA_DISABLED": "true",
             "PAGEDB_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    subprocess.run(["curl", "-sf", "-X", "PUT", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", key + ":" + secret,
                    "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "http://127.0.0.1:%s/pdb" % port],
                   env=env, check=True)
    saved = {k: os.environ.get(k) for k in s3env}
    os.environ.update(s3env)
    yield s3env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    subprocess.run(["bash", CEPH, "stop", d], env=env, capture_output=True)


def _setenv(env):
    os.environ.update(env)


def test_fashion_mnist_onto_ceph(client, ceph, fmnist, tmp_path):
    """The images in 16 parts onto the Ceph S3 gateway: each worker writes
    its part locally and pushes it to s3://pdb/fm.pagedb.parts/, the client
    commits them into the remote dataset (created there first) with one
    conditional write; read back over s3:// every sample exactly once, bytes
    and labels right, SQL counts per class right; the parts' uris relative
    to the dataset, each with its ETag; nothing left over."""
    d, x, y = fmnist
    n, per = len(x), len(x) // 16
    client.run(_setenv, ceph)
    url = "s3://pdb/fm.pagedb"
    job = pagedb.dask.write(bag_of(d, 0, n, 16), url, FIELDS, id_field="id", client=client)
    assert job.samples == n and len(job.parts) == 16 and job.orphans == []
    assert all(p.startswith(url + ".parts/%s-" % job.name) for p in job.parts)
    check_all(url, x, y, 0, n)
    with pagedb.open(url) as ds:
        check_parts(ds.parts(), job, per)
        assert all(len(p["validator"]) > 2 for p in ds.parts())
        # A second job after the first: AFTER ids, 4 parts more, old and new read.
        assert pagedb.dask.write(bag_of(d, 0, 400, 4, with_id=False), url, client=client).samples == 400
        assert len(ds) == n                              # this handle keeps its snapshot
    with pagedb.open(url) as ds:
        assert len(ds) == n + 400 and len(ds.parts()) == 20
        assert ds.sql("SELECT min(id), max(id) FROM sample WHERE id >= %d" % n) == [(n, n + 399)]
        assert bytes(ds[n + 399]["image"]) == x[399].tobytes()
    # No orphan part (every part taken); the index objects of the creation
    # and the first job are not in force: listed and removed.
    removed = pagedb.dask.cleanup_parts(url, older_than=0)
    assert len(removed) == 2 and all(o["uuid"] == "" and "/fm.pagedb-index" in o["path"] for o in removed)
    assert pagedb.dask.cleanup_parts(url, older_than=0, remove=False) == []
    with pagedb.open(url) as ds:
        assert len(ds) == n + 400 and bytes(ds[5]["image"]) == x[5].tobytes() and ds[5]["label"] == y[5]


def test_without_dask_a_process_pool(fmnist, tmp_path):
    d, x, y = fmnist
    path = str(tmp_path / "m.pagedb")
    parts = [[no_id(s) for s in fm_samples([k], d, 100, 50)] for k in range(6)] + [[]]
    job = pagedb.dask.write(parts, path, FIELDS, id_field=None, processes=2)
    assert job.samples == 300 and len(job.parts) == 6 and job.orphans == []   # the empty partition's removed
    assert sorted(os.listdir(path + ".parts")) == sorted(p for q in job.parts for p in os.listdir(path + ".parts")
                                                          if p.startswith(os.path.basename(q)))
    with pagedb.open(path) as ds:
        assert [ds[i]["idx"] for i in range(300)] == list(range(100, 400))   # after: consecutive, by partition
        assert bytes(ds[299]["image"]) == x[399].tobytes()


def test_aligned_tensor_and_codec_fields(client, tmp_path):
    """Parts take the dataset's schema exactly -- a field aligned to 64, fixed
    and variable tensor fields, a zstd field -- or their commit is refused:
    written on the cluster into an existing dataset, read back whole, the
    aligned values at multiples of 64 in the map."""
    path = str(tmp_path / "t.pagedb")
    ds = pagedb.open(path, "c")
    ds.add_field("blob", "bytes", None, 0, 64)
    ds.add_field("emb", "tensor:float32:2,3")
    ds.add_field("seq", "tensor:int16:*")
    ds.add_field("txt", "text", "zstd", 5)
    ds.add_field("label", "int")
    ds.commit()
    ds.close()
    rng = np.random.default_rng(7)
    want = [{"id": 1000 + i, "blob": rng.bytes(int(rng.integers(1, 300))),
             "emb": rng.standard_normal((2, 3)).astype(np.float32),
             "seq": rng.integers(-999, 999, int(rng.integers(0, 9))).astype(np.int16),
             "txt": "sample %d " % i * 20, "label": i % 7} for i in range(90)]
    job = pagedb.dask.write(dbag.from_sequence(want, npartitions=3), path, id_field="id", client=client)
    assert job.samples == 90 and len(job.parts) == 3
    with pagedb.open(path) as ds:
        assert [(f.name, f.type, f.codec, f.level, f.align) for f in ds.fields] == [
            ("blob", "bytes", "none", 0, 64), ("emb", "tensor", "none", 0, 64), ("seq", "tensor", "none", 0, 64),
            ("txt", "text", "zstd", 5, 64), ("label", "int", "none", 0, 1)]
        assert (ds.fields[1].dtype, ds.fields[1].shape, ds.fields[2].shape) == ("float32", (2, 3), (None,))
        for w in want:
            got = ds[w["id"]]
            assert bytes(got["blob"]) == w["blob"] and got["txt"] == w["txt"] and got["label"] == w["label"]
            assert np.array_equal(got["emb"], w["emb"]) and np.array_equal(got["seq"], w["seq"])
            assert np.frombuffer(ds.view(w["id"], "blob"), np.uint8).ctypes.data % 64 == 0


def test_dataframe(client, fmnist, tmp_path):
    """A Dask dataframe's rows are samples (numpy scalars and ids taken as
    Python's), on the cluster and, without a client, Dask's local scheduler.
    Last in the file: it closes the module's client."""
    pd = pytest.importorskip("pandas")
    import dask.dataframe as ddf
    d, x, y = fmnist
    df = pd.DataFrame({"id": np.arange(500, 560), "image": [x[i].tobytes() for i in range(60)],
                       "label": y[:60].astype(np.int64), "idx": np.arange(60)})
    for k, c in enumerate((client, None)):
        path = str(tmp_path / ("df%d.pagedb" % k))
        if c is None:
            client.close()                               # no current client: the local scheduler
        job = pagedb.dask.write(ddf.from_pandas(df, npartitions=5), path, FIELDS, id_field="id", client=c)
        assert job.samples == 60 and len(job.parts) == 5
        with pagedb.open(path) as ds:
            assert ds.sql("SELECT min(id), max(id), count(*) FROM sample") == [(500, 559, 60)]
            assert all(bytes(ds[500 + i]["image"]) == x[i].tobytes() and ds[500 + i]["label"] == y[i] for i in range(60))
