#!/bin/sh
# Install everything pagedb needs to build and test on a fresh Debian
# machine.  Idempotent: packages already present are left alone.
#
#   sh tool/install-deps.sh --fuzz   also clang and its libFuzzer runtime
#                                    (libclang-rt-dev), for ./configure
#                                    --enable-fuzzing and make fuzz
set -e
PKGS="build-essential autoconf automake libtool pkgconf \
  libsqlite3-dev sqlite3 liblz4-dev libzstd-dev libxxhash-dev liburing-dev tcl tcl-dev libsqlite3-tcl \
  libedit-dev zlib1g-dev expect valgrind fio liblmdb-dev gnuplot-nox man-db groff-base"
[ "${1:-}" = "--fuzz" ] && PKGS="$PKGS clang libclang-rt-dev"
# Remote datasets (issue 18): libcurl for the http/https/s3 VFSes; nginx, a
# one-node Ceph (monitor, OSD, RADOS gateway) and s3cmd for remote.test;
# openssl makes the test's TLS certificate (nginx.sh NGINX_TLS=1); libssl-dev's
# libcrypto seals the chunks of a shared cache (issue 30: vfs/cache.c).
PKGS="$PKGS libcurl4-openssl-dev libssl-dev curl nginx-light ceph-mon ceph-osd radosgw s3cmd openssl"
missing=""
# Python (issue 17): headers, NumPy, pytest and torch for python/, and the
# Fashion-MNIST files of its example.
PKGS="$PKGS python3-dev python3-numpy python3-pytest python3-torch dataset-fashion-mnist"
# The pip build (issue 29: pyproject.toml, setup.py) with no network:
# setuptools and wheel, python3 -m build, venvs with pip, and mypy for the
# stubs (.ci/run's wheel phase).
PKGS="$PKGS python3-setuptools python3-wheel python3-build python3-venv python3-pip mypy"
# Parts written by a Dask cluster (issue 26: pagedb.dask, test_dask.py's
# LocalCluster) and pandas for its dataframes.
PKGS="$PKGS python3-dask python3-distributed python3-pandas"
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
fi
