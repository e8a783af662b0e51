#!/usr/bin/env python3
"""Fashion-MNIST end to end through pagedb (doc/python.md walks through it).

1. Convert the Debian package dataset-fashion-mnist's gzip IDX files
   (/usr/share/datasets/fashion-mnist: 60,000 training and 10,000 test
   images of 28x28 bytes) into a pagedb dataset from Python: the image's 784
   bytes (BYTES), its label and its split (INT), written by 2 threads.
2. Train a small CNN on the CPU for one epoch through
   DataLoader(num_workers=2) over pagedb.torch.IterableDataset (a random
   epoch order of the training ids, selected by SQL), and print the test
   accuracy and the loader's samples/s (a pass of the loader alone, before
   training, and the whole epoch with training).

    /usr/bin/python3 python/examples/fashion_mnist.py [--out DIR] [--source pagedb|memory]
        [--steps N] [--epochs 1] [--workers 2]

--source memory gives the baseline: the same arrays in memory, through a
map-style torch Dataset and DataLoader(shuffle=True, num_workers=2).
--steps N stops training after N batches (python/tests/test_example.py runs
--steps 150 --no-loader-pass: the full epoch is too slow for the suite).
"""
import argparse
import gzip
import os
import struct
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt
import torch
import torch.nn as nn
import torch.nn.functional as F

import pagedb
from pagedb.torch import DataLoader, IterableDataset

SRC = "/usr/share/datasets/fashion-mnist"


def read_idx(path: str) -> "npt.NDArray[np.uint8]":
    """An IDX file (gzip): its array, every size in the header checked."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: %d bytes, too short for an IDX header" % (path, len(data)))
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08 or not 1 <= ndim <= 3:
        raise ValueError("%s: not an IDX file of unsigned bytes (header %r)" % (path, data[:4]))
    dims = struct.unpack(">%dI" % ndim, data[4:4 + 4 * ndim])
    n = int(np.prod(dims))
    body = data[4 + 4 * ndim:]
    if len(body) != n:
        raise ValueError("%s: the header says %d bytes of data, the file has %d" % (path, n, len(body)))
    return np.frombuffer(body, dtype=np.uint8).reshape(dims)


Arrays = Tuple["npt.NDArray[np.uint8]", "npt.NDArray[np.uint8]", "npt.NDArray[np.uint8]", "npt.NDArray[np.uint8]"]


def load_arrays(src: str) -> Arrays:
    tr_x = read_idx(os.path.join(src, "train-images-idx3-ubyte.gz"))
    tr_y = read_idx(os.path.join(src, "train-labels-idx1-ubyte.gz"))
    te_x = read_idx(os.path.join(src, "t10k-images-idx3-ubyte.gz"))
    te_y = read_idx(os.path.join(src, "t10k-labels-idx1-ubyte.gz"))
    if len(tr_x) != len(tr_y) or len(te_x) != len(te_y) or tr_x.shape[1:] != (28, 28):
        raise ValueError("%s: images and labels disagree" % src)
    return tr_x, tr_y, te_x, te_y


def convert(src: str, path: str, threads: int = 2) -> int:
    """Write every image into a new dataset at PATH with THREADS writers."""
    tr_x, tr_y, te_x, te_y = load_arrays(src)
    x = np.concatenate([tr_x, te_x]).reshape(-1, 784)
    y = np.concatenate([tr_y, te_y]).astype(np.int64)
    split = np.r_[np.zeros(len(tr_x), np.int64), np.ones(len(te_x), np.int64)]
    for p in (path, path + "-catalog"):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.perf_counter()
    ds = pagedb.open(path, "c")
    ds.add_field("image", "bytes")
    ds.add_field("label", "int")
    ds.add_field("split", "int")
    errors: List[Exception] = []

    def write(k: int) -> None:
        try:
            with ds.writer() as w:
                for i in range(k, len(x), threads):
                    w.append({"image": x[i], "label": int(y[i]), "split": int(split[i])}, id=i)
        except Exception as e:                       # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=write, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    ds.commit()
    n = len(ds)
    ds.close()
    dt = time.perf_counter() - t0
    print("converted %d images into %s with %d writer threads in %.2f s (%.0f samples/s)"
          % (n, path, threads, dt, n / dt))
    return n


class Net(nn.Module):  # type: ignore[misc]  # torch is untyped for mypy (pyproject.toml)
    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def decode(sample: Dict[str, Any]) -> Tuple[torch.Tensor, int]:
    """A pagedb sample -> (image tensor, label).  The image is read from the
    zero-copy view of the map and converted once, to float."""
    img = np.frombuffer(sample["image"], dtype=np.uint8).astype(np.float32) / 255.0
    return torch.from_numpy(img.reshape(1, 28, 28)), int(sample["label"])


class MemoryDataset(torch.utils.data.Dataset):  # type: ignore[misc]
    """The baseline: the arrays in memory."""

    def __init__(self, x: "npt.NDArray[np.uint8]", y: "npt.NDArray[np.uint8]") -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> Tuple[torch.Tensor, int]:
        img = self.x[i].astype(np.float32) / 255.0
        return torch.from_numpy(img.reshape(1, 28, 28)), int(self.y[i])


def loaders(args: argparse.Namespace, epoch: int) -> Tuple[Any, Any, Any]:
    if args.source == "memory":
        tr_x, tr_y, te_x, te_y = load_arrays(args.src)
        train = torch.utils.data.DataLoader(MemoryDataset(tr_x, tr_y), batch_size=args.batch, shuffle=True,
                                            num_workers=args.workers, generator=torch.Generator().manual_seed(0))
        test = torch.utils.data.DataLoader(MemoryDataset(te_x, te_y), batch_size=1000, num_workers=args.workers)
        return train, test, train
    ds = pagedb.open(args.path)
    train_ids = ds.sql_ids("SELECT id FROM sample WHERE split = 0")
    test_ids = ds.sql_ids("SELECT id FROM sample WHERE split = 1")
    ds.close()
    tr = IterableDataset(args.path, kind="random", seed=0, ids=train_ids, fields=["image", "label"], transform=decode)
    tr.set_epoch(epoch)
    te = IterableDataset(args.path, kind="sequential", ids=test_ids, fields=["image", "label"], transform=decode)
    return (DataLoader(tr, batch_size=args.batch, num_workers=args.workers),
            DataLoader(te, batch_size=1000, num_workers=args.workers), tr)


def main(argv: Optional[Sequence[str]] = None) -> float:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--src", default=SRC, help="directory of the gzip IDX files (%(default)s)")
    ap.add_argument("--out", default=None, help="directory for the dataset (default: a temporary one)")
    ap.add_argument("--source", choices=["pagedb", "memory"], default="pagedb")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="stop each epoch after this many batches (0: all)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="torch's compute threads")
    ap.add_argument("--no-loader-pass", action="store_true", help="skip timing the loader alone")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    tmp: Optional[str] = None
    if args.source == "pagedb":
        out = args.out or (tmp := tempfile.mkdtemp(prefix="fmnist-"))
        args.path = os.path.join(out, "fashion-mnist.pagedb")
        convert(args.src, args.path)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        train, test, _ = loaders(args, epoch)
        if not args.no_loader_pass:
            # The loader alone: how fast it hands out batches.
            t0, n = time.perf_counter(), 0
            for x, y in train:
                n += len(y)
            dt = time.perf_counter() - t0
            print("epoch %d: %s loader alone: %d samples in %.2f s = %.0f samples/s (batch %d, %d workers)"
                  % (epoch, args.source, n, dt, n / dt, args.batch, args.workers))
            train, test, _ = loaders(args, epoch)
        model.train()
        t0, n, steps = time.perf_counter(), 0, 0
        for x, y in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            n += len(y)
            steps += 1
            if args.steps and steps >= args.steps:
                break
        dt = time.perf_counter() - t0
        print("epoch %d: trained on %d samples in %.1f s (%.0f samples/s with training), last loss %.3f"
              % (epoch, n, dt, n / dt, loss.item()))
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in test:
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    acc: float = correct / total
    print("test accuracy: %.4f (%d of %d)" % (acc, correct, total))
    if tmp:
        import shutil
        shutil.rmtree(tmp)
    return acc


if __name__ == "__main__":
    sys.exit(0 if main() > 0 else 1)
