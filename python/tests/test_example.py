"""The Fashion-MNIST example, reduced (the full epoch takes minutes on this
machine: doc/python.md records a full run): convert all 70,000 images with
2 writer threads, train 150 batches of 64 through DataLoader(num_workers=2),
and check the test accuracy is far above chance (10%)."""
import os
import sys

import pytest

from conftest import SANITIZERS

if SANITIZERS:
    pytest.skip("the training run is left out of the sanitizer build (minutes of torch's arithmetic)",
                allow_module_level=True)
pytest.importorskip("torch")
SRC = "/usr/share/datasets/fashion-mnist"
if not os.path.exists(os.path.join(SRC, "train-images-idx3-ubyte.gz")):
    pytest.skip("no %s (Debian: dataset-fashion-mnist)" % SRC, allow_module_level=True)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import fashion_mnist  # noqa: E402


def test_fashion_mnist_reduced(tmp_path, capsys):
    acc = fashion_mnist.main(["--out", str(tmp_path), "--steps", "150", "--no-loader-pass"])
    out = capsys.readouterr().out
    assert "converted 70000 images" in out
    assert acc > 0.5, out
    import pagedb
    with pagedb.open(str(tmp_path / "fashion-mnist.pagedb")) as ds:
        assert len(ds) == 70000
        assert len(ds.sql_ids("SELECT id FROM sample WHERE split = 1")) == 10000
        tr_x, tr_y, te_x, te_y = fashion_mnist.load_arrays(SRC)
        for i in (0, 1, 59999):
            assert ds.read(i, "image") == tr_x[i].tobytes() and ds[i]["label"] == tr_y[i]
        for i in (0, 9999):
            assert ds.read(60000 + i, "image") == te_x[i].tobytes() and ds[60000 + i]["split"] == 1
