#!/bin/sh
# fuzz/run.sh [SECONDS] — builds the libFuzzer harness (clang, ASan+UBSan) and
# fuzzes load + estimate for SECONDS (default 60) from the committed seed
# corpus (fuzz/corpus) and the bad-model corpus (tests/bad).
#
# Environment:
#   BUILD_DIR   build directory (default: build-fuzz in the source tree)
#   JOBS        parallel fuzzing processes (default 1)
#   CORPUS      working corpus directory new inputs go to (default: $BUILD_DIR/corpus;
#               the committed seeds are only read)
#   FUZZ_ARGS   extra libFuzzer flags
#   KEEP_GOING  1: go on after undefined behaviour (each site reported once in the
#               log, as "runtime error") and broken invariants (inputs saved as
#               $BUILD_DIR/artifacts/invariant-LINE.json); a memory error still stops.
#               Builds with -DVRAMCALC_FUZZ_RECOVER=ON. For long unattended runs.
# Exit status: 0 no finding; non-zero: a crash, leak, timeout or invariant failure
# (the reproducer is in $BUILD_DIR/artifacts/; replay it with
#  $BUILD_DIR/fuzz_load ARTIFACT).
set -eu
SECONDS_TO_RUN=${1:-60}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC/build-fuzz}
JOBS=${JOBS:-1}
CORPUS=${CORPUS:-$BUILD_DIR/corpus}
CC_FUZZ=${CC_FUZZ:-clang}

command -v "$CC_FUZZ" >/dev/null || { echo "fuzz/run.sh: $CC_FUZZ not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
RECOVER=OFF
[ "${KEEP_GOING:-0}" = 1 ] && RECOVER=ON
cmake -S "$SRC" -B "$BUILD_DIR" -DCMAKE_C_COMPILER="$CC_FUZZ" -DVRAMCALC_FUZZ=ON -DVRAMCALC_FUZZ_RECOVER=$RECOVER \
      -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" --target fuzz_load -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

mkdir -p "$CORPUS" "$BUILD_DIR/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
if [ "${KEEP_GOING:-0}" = 1 ]; then
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=0}
  export VC_FUZZ_KEEP_GOING=1 VC_FUZZ_ARTIFACTS="$BUILD_DIR/artifacts"
else
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
SEEDS="$SRC/fuzz/corpus"
[ -d "$SRC/tests/bad" ] && SEEDS="$SEEDS $SRC/tests/bad"
[ -d "$SRC/examples" ] && SEEDS="$SEEDS $SRC/examples"

set -- -max_total_time="$SECONDS_TO_RUN" -timeout=30 -rss_limit_mb=2048 -max_len=40000 \
       -dict="$SRC/fuzz/vramcalc.dict" -artifact_prefix="$BUILD_DIR/artifacts/" -print_final_stats=1
if [ "$JOBS" -gt 1 ]; then
  set -- "$@" -fork="$JOBS"
fi
# shellcheck disable=SC2086
exec "$BUILD_DIR/fuzz_load" "$@" ${FUZZ_ARGS:-} "$CORPUS" $SEEDS
