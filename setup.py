"""setup.py -- the pip build of pagedb (pyproject.toml: PEP 517 with setuptools).

    python3 -m venv --system-site-packages v && v/bin/pip install --no-build-isolation .
    python3 -m build --wheel --no-isolation

One extension, pagedb._pagedb, holds the whole C library (src/, vfs/), the
Python binding (python/*.c) and the shell (shell/: python -m pagedb and the
pagedb script; python/shellentry.c): an installed pagedb needs nothing from
make install, only the system libraries the library links.

Nothing here is a second list to keep in step with Makefile.am and
configure.ac; it is read from them at build time:

  - the sources: libpagedb_la_SOURCES, python__pagedb_la_SOURCES and
    pagedb_SOURCES of Makefile.am, with its "if NAME ... endif" blocks
    taken when the probe found NAME's library (HAVE_URING: URING);
  - the libraries: the X_LIBS named in libpagedb_la_LIBADD (and the
    shell's pagedb_LDADD), each X found with pkg-config by the module
    configure.ac gives it (PDB_REQUIRE or PKG_CHECK_MODULES([X], [...]));
    a PDB_REQUIRE one missing stops the build with its Debian package's
    name, an optional one missing leaves its feature out, as configure does;
  - config.h: written by this probe, not by autotools: PAGEDB_HAVE_X for
    each optional library found whose AC_DEFINE configure.ac has;
  - the version: the file VERSION (configure.ac's AC_INIT reads it too).
"""
import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

TOP = os.path.dirname(os.path.abspath(__file__))


def read(name):
    with open(os.path.join(TOP, name), encoding="utf-8") as f:
        return f.read()


VERSION = read("VERSION").strip()


class Automake:
    """The variables of Makefile.am, as automake would assign them, with
    conditional blocks taken or skipped by ``cond(name)``."""

    def __init__(self, text, cond):
        self.vars = {}
        self.conds = set()
        stack = []
        # Join continued lines, drop comments.
        lines = re.sub(r"\\\n", " ", text).split("\n")
        for line in lines:
            line = line.split("#", 1)[0].rstrip()
            m = re.match(r"^if\s+(!?)(\w+)$", line)
            if m:
                self.conds.add(m.group(2))
                on = cond(m.group(2))
                stack.append(on if not m.group(1) else not on)
                continue
            if line == "else":
                stack[-1] = not stack[-1]
                continue
            if line == "endif":
                stack.pop()
                continue
            if not all(stack):
                continue
            m = re.match(r"^(\w+)\s*(\+?=)\s*(.*)$", line)
            if m:
                name, op, value = m.groups()
                if op == "=":
                    self.vars[name] = value
                else:
                    self.vars[name] = self.vars.get(name, "") + " " + value

    def words(self, name):
        """NAME's words, $(VAR) of Makefile.am expanded, others kept."""
        out = []
        for w in self.vars.get(name, "").split():
            m = re.match(r"^\$\((\w+)\)$", w)
            if m and m.group(1) in self.vars:
                out += self.words(m.group(1))
            else:
                out.append(w)
        return out


def configure_modules():
    """{X: (pkg-config spec, required, Debian package)} from configure.ac."""
    ac = read("configure.ac")
    mods = {}
    for m in re.finditer(r"PDB_REQUIRE\(\[(\w+)\],\s*\[([^\]]+)\],\s*\[([^\]]+)\]\)", ac):
        mods[m.group(1)] = (m.group(2), True, m.group(3))
    for m in re.finditer(r"PKG_CHECK_MODULES\(\[(\w+)\],\s*\[([^\]]+)\]", ac):
        mods.setdefault(m.group(1), (m.group(2), False, None))
    defines = set(re.findall(r"AC_DEFINE\(\[PAGEDB_HAVE_(\w+)\]", ac))
    return mods, defines


def pkg_config(*args):
    return subprocess.run(["pkg-config", *args], capture_output=True, text=True)


class Probe:
    """Which libraries configure.ac names are here, and their flags."""

    def __init__(self):
        self.mods, self.defines = configure_modules()
        self.found = {}
        if subprocess.run(["pkg-config", "--version"], capture_output=True).returncode != 0:
            sys.exit("pagedb: pkg-config not found: install the Debian package pkg-config")

    def have(self, var):
        if var not in self.found:
            spec = self.mods.get(var)
            if spec is None:
                self.found[var] = None
            else:
                mod, required, deb = spec
                r = pkg_config("--exists", "--print-errors", mod)
                if r.returncode != 0:
                    if required:
                        sys.exit("pagedb: %s not found: install the Debian package %s (or run "
                                 "tool/install-deps.sh)\n%s" % (mod, deb, r.stderr.strip()))
                    print("pagedb: %s not found: building without it" % mod, file=sys.stderr)
                    self.found[var] = None
                else:
                    cflags = shlex.split(pkg_config("--cflags", mod).stdout)
                    libs = shlex.split(pkg_config("--libs", mod).stdout)
                    self.found[var] = (cflags, libs)
        return self.found[var] is not None

    def cond(self, name):
        """An automake conditional of Makefile.am: HAVE_PYTHON is this
        build, HAVE_X is X found; the others (SANITIZERS, FUZZING) are off."""
        if name == "HAVE_PYTHON":
            return True
        m = re.match(r"^HAVE_(\w+)$", name)
        return bool(m) and self.have(m.group(1))


def library_flags(am, probe, names):
    """Compiler and linker flags for the X_LIBS / -lY words of NAMES."""
    cflags, libs = [], []
    for name in names:
        for w in am.words(name):
            m = re.match(r"^\$\((\w+)_LIBS\)$", w)
            if m:
                if probe.have(m.group(1)):
                    c, l = probe.found[m.group(1)]
                    cflags += c
                    libs += l
            elif w.startswith("-l"):
                libs.append(w)
    return cflags, libs


def extension():
    probe = Probe()
    am = Automake(read("Makefile.am"), probe.cond)
    sources = []
    for var in ("libpagedb_la_SOURCES", "python__pagedb_la_SOURCES"):
        for w in am.words(var):
            if w.endswith(".c") and w not in sources:
                sources.append(w)
    if not sources or "src/main.c" not in sources:
        sys.exit("pagedb: no library sources found in Makefile.am's libpagedb_la_SOURCES")
    cflags, libs = library_flags(am, probe, ["libpagedb_la_LIBADD", "pagedb_LDADD"])
    # config.h, by this probe (src/pagedbInt.h includes it): BuildExt
    # writes it into its build directory.
    lines = ["/* config.h -- made by setup.py's probe (pip build), not by configure. */"]
    for x in sorted(probe.defines):
        if probe.have(x):
            lines.append("#define PAGEDB_HAVE_%s 1" % x)
    BuildExt.config_h = "\n".join(lines) + "\n"
    try:
        import numpy
    except ImportError:
        # --no-build-isolation builds with the environment's own packages.
        sys.exit("pagedb: building the module needs NumPy (its headers), and %s cannot import numpy:"
                 " install it into that environment first (pip install numpy; on Debian python3-numpy,"
                 " and a venv made with --system-site-packages), or build with pip's build isolation"
                 " where pip can download it" % sys.executable)
    # configure.ac's PDB_CFLAGS (release: -DNDEBUG), with -pthread.
    extra = ["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wshadow",
             "-fvisibility=hidden", "-DNDEBUG", "-pthread", "-fno-strict-aliasing"]
    # Dedupe, keeping order: pkg-config repeats -I/-l across modules.
    def uniq(xs):
        seen, out = set(), []
        for x in xs:
            if x not in seen:
                seen.add(x)
                out.append(x)
        return out
    # Headers too: build_ext rebuilds when any is newer than the module.
    import glob
    depends = sorted(h for d in ("src", "vfs", "shell", "tool", "python") for h in glob.glob(d + "/*.h"))
    return Extension(
        "pagedb._pagedb",
        sources=sources,
        depends=depends + ["Makefile.am", "configure.ac", "VERSION"],
        include_dirs=["src", "vfs", "shell", "tool", "python", numpy.get_include()],
        define_macros=[("PDB_SHELL_MAIN", "pdb_shell_main")],
        extra_compile_args=uniq(extra + cflags),
        extra_link_args=uniq(["-pthread"] + libs + ["-lm"]),
    )


class BuildExt(build_ext):
    """build_ext, its compiles run side by side (the library is ~60 files)."""

    config_h = ""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        gen = os.path.join(self.build_temp, "pagedb-config")
        os.makedirs(gen, exist_ok=True)
        path = os.path.join(gen, "config.h")
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != self.config_h:
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.config_h)
        for ext in self.extensions:
            ext.include_dirs.insert(0, gen)
        super().build_extensions()


# egg_info needs its directory to exist already (a fresh clone has none).
os.makedirs("build-py", exist_ok=True)

setup(
    version=VERSION,
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExt},
    # Not build/: the autotools build directory of README's two commands.
    options={"build": {"build_base": "build-py"}, "egg_info": {"egg_base": "build-py"}},
)
