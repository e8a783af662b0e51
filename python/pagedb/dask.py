"""pagedb.dask: many processes (a Dask cluster, or a multiprocessing pool)
write one dataset, each partition into a part, committed at the end as one.

    import dask.bag as db
    from dask.distributed import Client
    import pagedb.dask

    client = Client("scheduler:8786")
    bag = db.from_sequence(range(70000), npartitions=16).map(make_sample)
    job = pagedb.dask.write(bag, "fmnist.pagedb",
                            fields=[("image", "bytes"), ("label", "int")], id_field="id")
    job.samples, job.parts, job.orphans

How it goes (doc/python.md, "Writing with many processes"; doc/format.md,
"Parts"):

1. The client opens the dataset read-write (creating it with FIELDS if it
   does not exist) and keeps it open to the end: it holds the dataset's
   write lock, so no other writer and no orphan cleanup runs meanwhile.
2. Partition k is written by the task that computes it, in the process
   that holds it, into a new part ``NAME.parts/JOB-k-ATTEMPT`` (a dataset
   with the dataset's schema and page size), committed and sealed there;
   the task returns (k, path, seal, samples).  ATTEMPT is new for every run
   of the task, so that a retry after a worker died, or a speculative
   duplicate, never writes into another attempt's files.
3. The client takes exactly one result per partition (the one the
   scheduler reports for its key; if several arrive for one partition, the
   first), removes those of empty partitions, and commits the others with
   ``Dataset.commit_parts``, each named
   ``JOB-k`` (a part's name is unique in a dataset, so the same partition
   cannot be committed twice), all or none.
4. Parts of attempts not taken (a killed worker's, a duplicate's) and all
   parts of a job that failed are orphans: ``cleanup_parts`` (pagedb's
   ``pagedb_parts_orphans``) lists and removes them once older than the
   age given, which must exceed the age of any job still running.

Onto object storage (PATH ``s3://BUCKET/NAME``): the dataset is created
there if missing (written locally with FIELDS, then pushed); each task
writes its part into a temporary directory of its worker and pushes it to
``s3://BUCKET/NAME.parts/JOB-k-ATTEMPT`` (``Dataset.push``); the client
commits the parts by URL into the remote dataset (``commit_parts`` on a
read-only handle of it: doc/format.md, "Committing parts into a dataset on
object storage"), whose single conditional write of the catalog is the
commit point: a job that lost the race to another committer raises
``BusyError`` with nothing committed (call ``write`` again, or commit its
parts: they stay, as orphans until then).  There is no write lock on
object storage: ``cleanup_parts`` must be given an age above any running
job's.  The workers need the credentials and endpoint of the client
(``AWS_*`` in their environment).

A job that fails (a task raises, or exhausts its retries) commits nothing:
``write`` raises ``JobFailed`` and the dataset is as it was.

Samples are mappings of field name to value (a Dask bag's elements, a Dask
dataframe's rows); ``id_field`` names the key that holds each sample's id
(then policy "keep": ids must not collide), or None (policy "after": the
ids are consecutive after the dataset's largest, partition by partition).
Without Dask, ``write`` takes any sequence of partitions, each an iterable
of samples (or a callable returning one, run in the worker), and writes them
with a multiprocessing pool of ``processes`` (0: in this process).
"""
import os
import shutil
import tempfile
import uuid as _uuid
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import pagedb as _pagedb

__all__ = ["write", "write_part", "cleanup_parts", "JobFailed", "Job", "PartWritten"]


class JobFailed(Exception):
    """A write job failed: nothing of it was committed.  ``job`` is its
    name, ``parts_dir`` where its parts are (orphans now: ``cleanup_parts``)."""

    def __init__(self, msg: str, job: str, parts_dir: str):
        super().__init__(msg)
        self.job = job
        self.parts_dir = parts_dir


class PartWritten(NamedTuple):
    """What a task returns: partition K written into PATH, sealed SEAL."""
    partition: int
    path: str
    seal: int
    samples: int


class Job(NamedTuple):
    """A committed job: its name, the samples and parts committed (the
    parts' paths, by partition), and the orphans it left (attempts not
    taken), listed, not removed."""
    name: str
    samples: int
    parts: List[str]
    orphans: List[Dict[str, Any]]


def _plain(v: Any) -> Any:
    """V as the writer takes it: numpy scalars as Python numbers, arrays as bytes."""
    if hasattr(v, "item") and getattr(v, "shape", None) == ():
        return v.item()
    if hasattr(v, "tobytes") and not isinstance(v, (bytes, bytearray, memoryview)):
        return v.tobytes()
    return v


def _samples_of(partition: Any) -> Iterable[Any]:
    """The samples of a partition: a pandas DataFrame's rows, a callable's
    result, or the iterable itself."""
    if callable(partition):
        partition = partition()
    if hasattr(partition, "to_dict") and hasattr(partition, "columns"):
        return partition.to_dict("records")
    return partition


def _is_url(path: str) -> bool:
    return path.startswith(("s3://", "http://", "https://"))


def write_part(partition: Any, parts_dir: str, job: str, k: int, fields: Sequence[Tuple[Any, ...]],
               page_size: int, id_field: Optional[str]) -> PartWritten:
    """Write the samples of PARTITION into a new part of job JOB for
    partition K under PARTS_DIR, commit and seal it.  This is the task each
    worker runs; it touches nothing but its own new files.  A PARTS_DIR that
    is a URL gets the part pushed there from a temporary directory (an
    empty part is not pushed)."""
    name = "%s-%d-%s" % (job, k, _uuid.uuid4().hex[:12])
    if not _is_url(parts_dir):
        return _write_into(partition, os.path.join(parts_dir, name), k, fields, page_size, id_field)
    tmp = tempfile.mkdtemp(prefix="pagedb-part-")
    try:
        r = _write_into(partition, os.path.join(tmp, name), k, fields, page_size, id_field)
        url = parts_dir + "/" + name
        if r.samples > 0:
            part = _pagedb.open(r.path, "r")
            try:
                part.push(url)
            finally:
                part.close()
        return PartWritten(k, url, r.seal, r.samples)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_into(partition: Any, path: str, k: int, fields: Sequence[Tuple[Any, ...]], page_size: int,
                id_field: Optional[str]) -> PartWritten:
    """Write PARTITION's samples into the new dataset PATH, commit and seal it."""
    part = _pagedb.open(path, "c", page_size=page_size)
    try:
        for f in fields:
            part.add_field(f[0], f[1], *f[2:])
        # A tensor field takes the array itself (its dtype and shape).
        tensors = {f[0] for f in fields if isinstance(f[1], str) and f[1].startswith("tensor:")}
        n = 0
        with part.writer() as w:
            for s in _samples_of(partition):
                s = dict(s)
                sid = s.pop(id_field) if id_field is not None else None
                w.append({key: v if key in tensors else _plain(v) for key, v in s.items()},
                         id=None if sid is None else int(_plain(sid)))
                n += 1
        seal = part.seal()
    finally:
        part.close()
    return PartWritten(k, path, seal, n)


_COMPANIONS = ("-catalog-wal", "-catalog-shm", "-catalog-journal", "-catalog", "-index.new", "-index", "")


def _remove_part(path: str) -> None:
    """Remove a part this job wrote and will not commit, with its files
    (companions first, the data file last, as pagedb_parts_orphans does)."""
    for suffix in _COMPANIONS:
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def _fields_of(ds: Any) -> List[Tuple[Any, ...]]:
    """The dataset's schema as add_field arguments: a part must have it
    exactly (names, types, tensor declarations, codecs and levels, and the
    alignment G, which giving every field G reproduces), or its commit is
    refused."""
    out: List[Tuple[Any, ...]] = []
    for f in ds.fields:
        t = f.type
        if t == "tensor":
            t = "tensor:%s:%s" % (f.dtype, ",".join("*" if d is None else str(d) for d in f.shape))
        codec = f.codec if f.codec and f.codec != "none" else None
        align = f.align if t not in ("int", "real") else 0
        out.append((f.name, t, codec, f.level, align))
    return out


def _open_target(path: str, fields: Optional[Sequence[Tuple[Any, ...]]], page_size: int) -> Any:
    """The dataset at PATH, read-write, created with FIELDS if missing; its
    schema must then equal FIELDS if both are given."""
    if os.path.exists(path):
        ds = _pagedb.open(path, "w")
    else:
        if not fields:
            raise ValueError("pagedb.dask.write: %s does not exist, and no fields were given to create it" % path)
        ds = _pagedb.open(path, "c", page_size=page_size)
        for f in fields:
            ds.add_field(*f)
        ds.commit()
    return ds


def _open_remote_target(url: str, fields: Optional[Sequence[Tuple[Any, ...]]], page_size: int) -> Any:
    """The dataset at URL, read-only (a remote commit's handle); if it does
    not exist, made with FIELDS in a temporary directory and pushed first."""
    try:
        return _pagedb.open(url, "r")
    except _pagedb.Error as e:
        if getattr(e, "codename", "") != "PAGEDB_CANTOPEN_NOENT":
            raise
    if not fields:
        raise ValueError("pagedb.dask.write: %s does not exist, and no fields were given to create it" % url)
    tmp = tempfile.mkdtemp(prefix="pagedb-new-")
    try:
        ds = _open_target(os.path.join(tmp, url.rsplit("/", 1)[1]), fields, page_size)
        try:
            ds.push(url)
        finally:
            ds.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _pagedb.open(url, "r")


def _is_dask(coll: Any) -> bool:
    return hasattr(coll, "__dask_graph__") and hasattr(coll, "to_delayed")


def _executing(dask_worker: Any) -> List[str]:
    """The keys of the tasks DASK_WORKER is running, cancelled ones included
    (a cancelled task runs on to its end: a thread cannot be stopped)."""
    st = getattr(dask_worker, "state", dask_worker)
    return [str(k) for k, ts in list(getattr(st, "tasks", {}).items())
            if ts.state in ("executing", "long-running", "cancelled", "resumed")]


def _wait_quiet(client: Any, keys: Sequence[str], timeout: float) -> None:
    """Wait until no worker runs a task of KEYS: a failed job's tasks still
    writing parts end before write() raises, so that the orphans it leaves
    are all there, and none still being written."""
    import time

    want = set(keys)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        running = client.run(_executing)
        if not any(want.intersection(v) for v in running.values()):
            return
        time.sleep(0.1)


def _run_dask(coll: Any, args: Tuple[Any, ...], client: Any) -> List[PartWritten]:
    import dask
    from dask.distributed import default_client

    parts = coll.to_delayed()
    if hasattr(parts, "flatten"):
        parts = list(parts.flatten())
    tasks = [dask.delayed(write_part, pure=False)(p, *args[:2], k, *args[2:]) for k, p in enumerate(parts)]
    if client is None:
        try:
            client = default_client()
        except ValueError:                           # no cluster: Dask's local scheduler
            return list(dask.compute(*tasks))
    futures = client.compute(tasks)
    try:
        return list(client.gather(futures))
    except BaseException:
        client.cancel(futures)
        _wait_quiet(client, [str(f.key) for f in futures], 300.0)
        raise


def _run_pool(parts: Sequence[Any], args: Tuple[Any, ...], processes: int) -> List[PartWritten]:
    jobs = [(p, args[0], args[1], k, *args[2:]) for k, p in enumerate(parts)]
    if processes <= 0:
        return [write_part(*j) for j in jobs]
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.starmap(write_part, jobs)


def write(collection: Any, path: str, fields: Optional[Sequence[Tuple[Any, ...]]] = None, *,
          id_field: Optional[str] = None, policy: Optional[str] = None, job: Optional[str] = None,
          client: Any = None, processes: int = 0, page_size: int = 0) -> Job:
    """Write COLLECTION (a Dask bag or dataframe, or a sequence of
    partitions) into the dataset at PATH as one part per partition, and
    commit them all or none (see the module's help).  FIELDS: the schema,
    as add_field arguments, to create the dataset with (default: the
    existing dataset's).  POLICY: "keep" (default with ID_FIELD), "offset"
    or "after" (default without).  JOB: the job's name (default: a new
    random one), the prefix of its parts' file names and names.  CLIENT:
    the dask.distributed client (default: the current one, else Dask's
    local scheduler).  PROCESSES:
    without Dask, the pool's size.  Returns a Job; raises JobFailed if a
    partition could not be written (nothing committed), or what
    commit_parts raises (nothing committed either)."""
    if policy is None:
        policy = "keep" if id_field is not None else "after"
    job = job or "j" + _uuid.uuid4().hex[:12]
    if "/" in job or not job:
        raise ValueError("pagedb.dask.write: job name %r must be a file name" % job)
    remote = _is_url(path)
    ds = _open_remote_target(path, fields, page_size) if remote else _open_target(path, fields, page_size)
    parts_dir = path + ".parts" if remote else os.path.abspath(path) + ".parts"
    try:
        if not remote:
            os.makedirs(parts_dir, exist_ok=True)
        args = (parts_dir, job, _fields_of(ds), ds.page_size, id_field)
        try:
            if _is_dask(collection):
                got = _run_dask(collection, args, client)
            else:
                got = _run_pool(list(collection), args, processes)
        except Exception as e:
            raise JobFailed("pagedb.dask.write: job %s failed, nothing committed into %s: %s: %s"
                            % (job, path, type(e).__name__, e), job, parts_dir) from e
        taken: Dict[int, PartWritten] = {}
        for r in got:                                # exactly one part per partition
            taken.setdefault(r.partition, r)
        chosen = [taken[k] for k in sorted(taken) if taken[k].samples > 0]
        for k in sorted(taken):                      # an empty partition's part is not committed
            if taken[k].samples == 0 and not remote:
                _remove_part(taken[k].path)
        n = ds.commit_parts([(r.path, "%s-%d" % (job, r.partition), 0, r.seal) for r in chosen], policy) \
            if chosen else 0
        prefix = parts_dir + "/" + job + "-"
        orphans = [o for o in ds.orphan_parts() if o["path"].startswith(prefix)]
        return Job(job, n, [r.path for r in chosen], orphans)
    finally:
        ds.close()


def cleanup_parts(path: str, older_than: float, remove: bool = True) -> List[Dict[str, Any]]:
    """List, and with REMOVE remove, the orphan parts of the dataset at PATH
    (``Dataset.orphan_parts``): the parts under ``PATH.parts/`` that no
    commit took and whose newest file is at least OLDER_THAN seconds old.
    OLDER_THAN must exceed the age of any job that may still commit into
    PATH (0 only when none runs).  Removal opens PATH read-write, so it
    fails with BusyError while another process writes it."""
    ds = _pagedb.open(path, "w" if remove and not _is_url(path) else "r")
    try:
        return ds.orphan_parts(older_than=older_than, remove=remove)
    finally:
        ds.close()
