#!/bin/sh
# check-wheel.sh -- the pip paths of README and doc/python.md, as a user
# takes them, with no network (make check-wheel; .ci/run's wheel phase):
#
#   1. python3 -m build --wheel --no-isolation: a wheel;
#   2. python3 -m venv --system-site-packages A && A/bin/pip install
#      --no-build-isolation SRCDIR, then import pagedb, python -m pagedb and
#      the pagedb script in a fresh directory;
#   3. the wheel installed into another fresh venv B, and the pytest suite
#      (python/tests; doc/tutorial.md's blocks among them, test_tutorial.py;
#      the Fashion-MNIST training only with CHECK_WHEEL_FULL=1, below)
#      run by B's interpreter from a fresh directory against
#      the installed package (PAGEDB_TEST_INSTALLED=1: conftest.py refuses
#      a pagedb imported from the source tree);
#   4. mypy --strict on python/examples against the installed package's
#      stubs (_pagedb.pyi, py.typed).
#
#   sh tool/check-wheel.sh [SRCDIR [WORKDIR]]
#
# PYTHON (default /usr/bin/python3: the pyenv python3 that may come first
# on PATH cannot import Debian's packages) builds and makes the venvs.
# WORKDIR (default a new temporary directory, removed at the end) holds
# the wheel, the venvs and the runs.  Each step prints its time.
set -eu
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
if [ -n "${2:-}" ]; then work=$2; mkdir -p "$work"; keep=1; else work=$(mktemp -d); keep=0; fi
work=$(cd "$work" && pwd)
[ $keep = 1 ] || trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
step() { echo "=== check-wheel: $1 ($(( $(date +%s) - t0 )) s)"; }

cd "$src"
"$PYTHON" -m build --wheel --no-isolation --outdir "$work/dist" > "$work/build.log" 2>&1 ||
  { tail -n 40 "$work/build.log"; echo "check-wheel: python3 -m build failed (log above)"; exit 1; }
wheel=$(ls "$work"/dist/pagedb-*.whl)
step "built $(basename "$wheel")"

rm -rf "$work/A" "$work/B" "$work/runA" "$work/runB"
"$PYTHON" -m venv --system-site-packages "$work/A"
"$work/A/bin/pip" install -q --no-build-isolation "$src" > "$work/pipA.log" 2>&1 ||
  { tail -n 40 "$work/pipA.log"; echo "check-wheel: pip install --no-build-isolation failed"; exit 1; }
mkdir "$work/runA" && cd "$work/runA"
"$work/A/bin/python" -c "import pagedb, sys; assert pagedb.__file__.startswith(sys.prefix), pagedb.__file__; print('import pagedb', pagedb.__version__, 'from', pagedb.__file__)"
"$work/A/bin/python" -m pagedb a.pagedb ".create --field n:int" ".put 1 n=7"
test "$("$work/A/bin/pagedb" a.pagedb ".get 1 n")" = 7
step "pip install --no-build-isolation . into a venv: import, python -m pagedb, the pagedb script"

"$PYTHON" -m venv --system-site-packages "$work/B"
"$work/B/bin/pip" install -q --no-index "$wheel"
mkdir "$work/runB" && cd "$work/runB"
# All of it but the reduced Fashion-MNIST training (test_example.py: four
# minutes of torch's arithmetic on a busy 2-core machine, the same module
# code the normal build's make check-python runs it on); CHECK_WHEEL_FULL=1
# runs it too.
set -- -k "not fashion_mnist"
[ "${CHECK_WHEEL_FULL:-0}" = 1 ] && set --
# test_dask.py in a process of its own, after the rest, as make check-python
# runs it (Makefile.am: a Dask client's threads, then a fork).
PAGEDB_TEST_INSTALLED=1 PYTHONDONTWRITEBYTECODE=1 "$work/B/bin/python" -m pytest -p no:cacheprovider -q -rs \
  --durations=5 "$@" --ignore="$src/python/tests/test_dask.py" "$src/python/tests"
PAGEDB_TEST_INSTALLED=1 PYTHONDONTWRITEBYTECODE=1 "$work/B/bin/python" -m pytest -p no:cacheprovider -q -rs \
  --durations=5 "$src/python/tests/test_dask.py"
step "the wheel in a fresh venv: the pytest suite against it"

# From the top: pyproject.toml's [tool.mypy] applies; pagedb is found in
# B's site-packages (python/examples holds no pagedb of its own).
cd "$src"
MYPYPATH= "$work/B/bin/python" -m mypy --strict --no-incremental --cache-dir "$work/mypy-cache" python/examples
step "mypy --strict python/examples against the installed stubs"
