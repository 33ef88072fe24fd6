#!/bin/sh
# tests/run_sanitizers.sh — builds the whole project (library, CLI, tests)
# with AddressSanitizer + UndefinedBehaviorSanitizer (-DVRAMCALC_SANITIZE=ON)
# in its own build directory and runs every CTest test there. The CLI that
# the tests run is sanitized too, so a memory error, undefined behaviour or
# leak in any error path fails the test that reached it.
#
#   tests/run_sanitizers.sh [CTEST ARGS...]     e.g. -R errors
#
# Environment: BUILD_DIR (default build-sanitize in the source tree),
# JOBS (default: all cores), CC (compiler; gcc and clang both work).
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC/build-sanitize}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

cmake -S "$SRC" -B "$BUILD_DIR" -DVRAMCALC_SANITIZE=ON -DVRAMCALC_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

# halt on the first report; leaks are errors (LeakSanitizer runs at exit)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$BUILD_DIR"
ctest --output-on-failure -j "$JOBS" "$@"
