"""One version (VERSION) everywhere: configure.ac's AC_INIT reads it,
setup.py reads it into the package metadata, pagedb.h's PAGEDB_VERSION and
PAGEDB_VERSION_NUMBER, the library's pagedb_libversion() and
pagedb.__version__ must say the same; and the stubs name every public name
of the C module."""
import ast
import os
import re

import pagedb
from conftest import INSTALLED, SRCDIR


def source(name):
    with open(os.path.join(SRCDIR, name), encoding="utf-8") as f:
        return f.read()


VERSION = source("VERSION").strip()


def test_version_file():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


def test_header_agrees():
    h = source("src/pagedb.h")
    assert re.search(r'#define PAGEDB_VERSION\s+"([^"]+)"', h).group(1) == VERSION
    x, y, z = (int(p) for p in VERSION.split("."))
    assert int(re.search(r"#define PAGEDB_VERSION_NUMBER\s+(\d+)", h).group(1)) == x * 1000000 + y * 1000 + z


def test_configure_reads_it():
    assert re.search(r"AC_INIT\(\[pagedb\],\s*m4_esyscmd_s\(\[cat VERSION\]\)", source("configure.ac"))


def test_library_and_module_agree():
    assert pagedb._pagedb.libversion() == VERSION
    assert pagedb.__version__ == VERSION


def test_package_metadata():
    # The installed distribution's version (pip install, wheel): setup.py's.
    if not INSTALLED:
        import pytest
        pytest.skip("the build tree's module has no package metadata (PAGEDB_TEST_INSTALLED=1 runs this)")
    from importlib.metadata import version
    assert version("pagedb") == VERSION


def test_stubs_cover_the_module():
    stub = os.path.join(os.path.dirname(pagedb.__file__), "_pagedb.pyi")
    if not os.path.exists(stub):
        stub = os.path.join(SRCDIR, "python", "pagedb", "_pagedb.pyi")
    tree = ast.parse(open(stub, encoding="utf-8").read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    public = {n for n in dir(pagedb._pagedb) if not n.startswith("_")}
    assert public - names == set(), "names of _pagedb without a stub in %s" % stub
    for cls in ("Dataset", "Writer", "Iterator"):
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
        have = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | \
               {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        methods = {n for n in vars(getattr(pagedb._pagedb, cls)) if not n.startswith("__")}
        assert methods - have == set(), "methods of %s without a stub" % cls
    assert os.path.exists(os.path.join(os.path.dirname(stub), "py.typed"))
