#!/usr/bin/env bash
# Installs the Debian packages ridge needs (only those missing), then
# configures and builds ridge in Release.
# Usage: scripts/setup.sh [BUILD_DIR] [--target NAME]... [extra cmake args]
#   --target NAME  build only NAME (and what it needs), e.g. `ridge`; default: everything
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
cmake_args=() targets=()
while (($#)); do
  if [ "$1" = --target ]; then targets+=(--target "$2"); shift 2; else cmake_args+=("$1"); shift; fi
done

packages=(cmake ninja-build g++ clang libclang-rt-14-dev pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcpp-httplib-dev
  libcli11-dev libtomlplusplus-dev libfmt-dev libspdlog-dev libpcre2-dev libicu-dev librsvg2-bin ccache nodejs npm python3-numpy
  python3-jinja2 python3-jsonschema chromium
  libopenmpi-dev openmpi-bin  # --tp/--pp across processes (RIDGE_MPI)
  dpkg-dev file systemd)  # deploy tests: dpkg-shlibdeps and file for cpack's .deb, systemd-analyze for the unit
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from elsewhere than Debian: a working `node` and `npm` is enough.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ccache keeps objects across clones: CI builds a fresh clone in another folder,
# so paths are hashed relative to the checkout (and not the folder itself).
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
