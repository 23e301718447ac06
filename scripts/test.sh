#!/usr/bin/env bash
# Builds ridge (installing what is missing) and runs the whole test suite.
# Usage: scripts/test.sh            Release build in build/
#        scripts/test.sh --sanitize ASan+UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  scripts/setup.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIDGE_SANITIZE=ON
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
else
  scripts/setup.sh build
  ctest --test-dir build --output-on-failure -j "$(nproc)"
fi
