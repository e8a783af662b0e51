"""doc/tutorial.md runs as written: its blocks, extracted in order and run
in one empty directory -- each ```python block saved under the file name
its first line gives ("# NAME.py"), the ```sh blocks run in order by one
bash -e.  The install block pip-installs ./pagedb (the source tree,
linked there) into a new venv, so this runs only where that is what is
being tested: PAGEDB_TEST_INSTALLED=1 (tool/check-wheel.sh, .ci/run)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import INSTALLED, SANITIZERS, SRCDIR

if not INSTALLED:
    pytest.skip("runs against a pip install (PAGEDB_TEST_INSTALLED=1: make check-wheel)", allow_module_level=True)
if SANITIZERS:
    pytest.skip("not in a sanitizer build", allow_module_level=True)
pytest.importorskip("torch")

TUTORIAL = os.path.join(SRCDIR, "doc", "tutorial.md")


def blocks():
    text = open(TUTORIAL, encoding="utf-8").read()
    return re.findall(r"^```(\w+)\n(.*?)^```$", text, re.S | re.M)


def test_blocks_are_well_formed():
    kinds = [k for k, _ in blocks()]
    assert set(kinds) == {"sh", "python"}, kinds
    for kind, body in blocks():
        if kind == "python":
            assert re.match(r"# [\w-]+\.py\n", body), body.split("\n")[0]
    # Every script saved is run by a sh block.
    sh = "".join(b for k, b in blocks() if k == "sh")
    for kind, body in blocks():
        if kind == "python":
            assert "python " + body.split("\n")[0][2:] in sh


def test_tutorial_runs_as_written(tmp_path):
    os.symlink(SRCDIR, tmp_path / "pagedb")
    script = ["set -e -x"]
    for kind, body in blocks():
        if kind == "python":
            name = body.split("\n")[0][2:]
            (tmp_path / name).write_text(body)
        else:
            script.append(body)
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PAGEDB_TEST_INSTALLED", "VIRTUAL_ENV"):
        env.pop(k, None)
    # python3 as the tutorial's reader has it: the interpreter whose
    # system packages this run uses (Debian's, not a pyenv build first on PATH).
    base = getattr(sys, "_base_executable", sys.executable)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(base, bindir / "python3")
    env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    out = r.stdout
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    assert "made shapes/ (400 images) and shapes-test.tar (100 samples)" in out
    assert "400\n0|data|BYTES|none\n1|label|INT|none\n2|path|TEXT|none" in out
    assert "0|__key__|TEXT|none\n1|cls|INT|none\n2|pgm|BYTES|none\ntest/000\n0\n" in out
    assert "circle|200\nsquare|200" in out
    assert "400 samples; sample 0: 0 " in out
    acc = re.search(r"test accuracy: ([0-9.]+) \((\d+) of 100\)", out)
    assert acc and float(acc.group(1)) >= 0.9, out[-2000:]
