#!/usr/bin/env bash
# Builds ridge (installing what is missing) and runs its tests.
# Usage: scripts/test.sh              Release build in build/, the whole suite
#        scripts/test.sh --lower-isas the kernel, model and engine suites of build/ again under
#                                     each ISA below this CPU's best (RIDGE_ISA=scalar, avx2, avx512)
#        scripts/test.sh --sanitize   ASan+UBSan build in build-asan/, every C++ suite (mpi: leak checks off)
#        scripts/test.sh --tsan       ThreadSanitizer build in build-tsan/, the engine and server suites
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
case "${1:-}" in
  "")
    scripts/setup.sh build
    ctest --test-dir build --output-on-failure -j "$jobs"
    ;;
  --lower-isas)
    scripts/setup.sh build --target ridge --target ridge_kernels_tests --target ridge_model_tests \
      --target ridge_engine_tests
    # The plain run above used the best ISA; `ridge cpu` says which that is.
    best=$(build/ridge cpu | sed -n 's/.*hardware best: \([a-z0-9]*\).*/\1/p')
    for isa in scalar avx2 avx512 amx; do
      [ "$isa" = "$best" ] && break
      echo "== RIDGE_ISA=$isa"
      RIDGE_ISA=$isa ctest --test-dir build --output-on-failure -j "$jobs" -L '^(kernels|model|engine)$'
    done
    ;;
  --sanitize)
    scripts/setup.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIDGE_SANITIZE=ON
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE '^mpi$'
    # Open MPI leaks its start-up allocations in every rank (LeakSanitizer finds ~120 KB in libopen-pal, libmpi,
    # hwloc and MCA components it has unloaded, so no suppression can name them): the mpi suite runs with leak
    # checking off, ASan's memory errors and UBSan still on.
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ctest --test-dir build-asan --output-on-failure -j "$jobs" -L '^mpi$'
    ;;
  --tsan)
    # Only what the threaded layers need: the engine loop and the HTTP server
    # (serve's CLI test runs the `ridge` binary, built with them).
    scripts/setup.sh build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIDGE_SANITIZE_THREAD=ON \
      --target ridge_engine_tests --target ridge_server_tests
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" -L '^(engine|server)$'
    ;;
  *)
    echo "usage: scripts/test.sh [--lower-isas | --sanitize | --tsan]" >&2
    exit 2
    ;;
esac
