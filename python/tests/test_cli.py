"""The shell travels with the package: python -m pagedb (and the pagedb
script a pip install makes) runs the same C shell as the autotools-built
pagedb program (python/shellentry.c); pagedb.torch without torch says what
to install."""
import io
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile

import pytest

import pagedb
from conftest import INSTALLED


def run(args, **kw):
    return subprocess.run([sys.executable, "-m", "pagedb"] + args, capture_output=True, **kw)


def shard(path, n):
    """A WebDataset shard: N samples k/NNN.{txt,cls}."""
    with tarfile.open(path, "w") as t:
        for i in range(n):
            for ext, data in (("txt", ("sample %d " % i * (1 + i % 7)).encode()), ("cls", str(i % 10).encode())):
                info = tarfile.TarInfo("k/%03d.%s" % (i, ext))
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))


def commands(path):
    return [[path, ".count"], [path, ".fields"], [path, "SELECT count(*) FROM sample WHERE cls < 5"],
            [path, ".get 7 txt"], [path, ".check"], ["/nonexistent/x.pagedb", ".count"]]


def test_module_shell(tmp_path):
    tar = str(tmp_path / "s.tar")
    shard(tar, 300)
    db = str(tmp_path / "m.pagedb")
    r = run([db, ".import " + tar])
    assert r.returncode == 0, r.stderr
    out = [run(c) for c in commands(db)]
    assert out[0].stdout == b"300\n"
    assert out[2].stdout == b"150\n"
    assert out[3].stdout == b"sample 7 \n"
    assert out[5].returncode == 1 and b"no dataset at /nonexistent/x.pagedb" in out[5].stderr
    # The same answers, byte for byte, as the pagedb program (make check
    # names it in PAGEDB_SHELL).
    prog = os.environ.get("PAGEDB_SHELL")
    if prog and os.path.exists(prog):
        for c, r in zip(commands(db), out):
            p = subprocess.run([prog] + c, capture_output=True)
            assert (p.returncode, p.stdout, p.stderr) == (r.returncode, r.stdout, r.stderr), c


def test_broken_pipe_is_quiet(tmp_path):
    # As a program: a reader that stops early ends the shell by SIGPIPE,
    # with no error message (CPython ignores SIGPIPE; shellentry.c restores it).
    # The output (about 2 MB) is larger than any pipe's buffer, so the shell
    # is still writing when the reader stops: with 23 KB it could finish
    # first and exit 0 (a third of the runs on a busy machine).
    tar = str(tmp_path / "s.tar")
    shard(tar, 3000)
    db = str(tmp_path / "p.pagedb")
    assert run([db, ".import " + tar]).returncode == 0
    p = subprocess.Popen([sys.executable, "-m", "pagedb", db,
                          "SELECT a.id, a.txt FROM sample a, sample b WHERE b.id < 100"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == -signal.SIGPIPE and err == b""


def test_shell_main_once():
    with pytest.raises(ValueError):
        pagedb._pagedb.shell_main([])


def test_console_script(tmp_path):
    script = os.path.join(sysconfig.get_path("scripts"), "pagedb")
    if not INSTALLED or not os.path.exists(script):
        pytest.skip("no pagedb script in %s (not a pip install)" % os.path.dirname(script))
    tar = str(tmp_path / "s.tar")
    shard(tar, 20)
    db = str(tmp_path / "c.pagedb")
    assert subprocess.run([script, db, ".import " + tar]).returncode == 0
    assert subprocess.run([script, db, ".count"], capture_output=True).stdout == b"20\n"


def test_torch_missing_says_what_to_install():
    code = "import sys; sys.modules['torch'] = None\nimport pagedb\nimport pagedb.torch"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 1
    assert "ImportError: pagedb.torch needs PyTorch" in r.stderr and "pip install 'pagedb[torch]'" in r.stderr
    # pagedb itself imports without torch.
    r = subprocess.run([sys.executable, "-c", "import sys; sys.modules['torch'] = None\nimport pagedb; print(len(pagedb.__version__))"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() != "0", r.stderr
