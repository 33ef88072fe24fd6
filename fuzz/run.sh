#!/bin/sh
# fuzz/run.sh [SECONDS] [load|cli|hf] — builds a libFuzzer harness (clang, ASan+UBSan)
# and fuzzes for SECONDS (default 60):
#   load (default)  fuzz_load: load + estimate, from the committed seed corpus
#                   (fuzz/corpus) and the bad-model corpus (tests/bad);
#   cli             fuzz_cli: the command line (argument vectors through
#                   vc_cli_main, in process), from fuzz/corpus_cli with
#                   fuzz/cli.dict; see fuzz/fuzz_cli.c for what it checks.
#   hf              fuzz_hf: Hugging Face configs (tests/data/hf and small ones)
#                   with interesting values swapped into their keys, under
#                   combinations of options, through vc_cli_main; inputs are
#                   byte programs (fuzz/corpus_hf); see fuzz/fuzz_hf.c.
#
# Environment:
#   BUILD_DIR   build directory (default: build-fuzz in the source tree)
#   JOBS        parallel fuzzing processes (default 1)
#   CORPUS      working corpus directory new inputs go to (default: $BUILD_DIR/corpus;
#               the committed seeds are only read)
#   FUZZ_ARGS   extra libFuzzer flags
#   KEEP_GOING  1: go on after undefined behaviour (each site reported once in the
#               log, as "runtime error") and broken invariants (inputs saved as
#               $BUILD_DIR/artifacts/invariant-LINE.json, fuzz_hf's as
#               invariant-hf-LINE-KIND.txt: the config and arguments); a memory error still stops.
#               Builds with -DVRAMCALC_FUZZ_RECOVER=ON. For long unattended runs.
#   INVARIANTS  report: fuzz_hf's broken invariants (its checks of the messages and figures)
#               are saved as $BUILD_DIR/artifacts/invariant-hf-*.txt and printed, and the run
#               goes on; sanitizer reports and crashes still stop it (CI's setting).
# Exit status: 0 no finding; non-zero: a crash, leak, timeout or invariant failure
# (the reproducer is in $BUILD_DIR/artifacts/; replay it with
#  $BUILD_DIR/fuzz_load ARTIFACT, or fuzz_cli / fuzz_hf ARTIFACT).
set -eu
SECONDS_TO_RUN=${1:-60}
TARGET=${2:-load}
case "$TARGET" in load|cli|hf) ;; *) echo "fuzz/run.sh: unknown harness '$TARGET' (load, cli or hf)" >&2; exit 2 ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC/build-fuzz}
JOBS=${JOBS:-1}
CORPUS=${CORPUS:-$BUILD_DIR/corpus}
[ "$TARGET" = cli ] && CORPUS=${CORPUS_CLI:-$BUILD_DIR/corpus_cli}
[ "$TARGET" = hf ] && CORPUS=${CORPUS_HF:-$BUILD_DIR/corpus_hf}
CC_FUZZ=${CC_FUZZ:-clang}

command -v "$CC_FUZZ" >/dev/null || { echo "fuzz/run.sh: $CC_FUZZ not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
RECOVER=OFF
[ "${KEEP_GOING:-0}" = 1 ] && RECOVER=ON
cmake -S "$SRC" -B "$BUILD_DIR" -DCMAKE_C_COMPILER="$CC_FUZZ" -DVRAMCALC_FUZZ=ON -DVRAMCALC_FUZZ_RECOVER=$RECOVER \
      -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" --target "fuzz_$TARGET" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

mkdir -p "$CORPUS" "$BUILD_DIR/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
if [ "${KEEP_GOING:-0}" = 1 ]; then
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=0}
  export VC_FUZZ_KEEP_GOING=1 VC_FUZZ_ARTIFACTS="$BUILD_DIR/artifacts"
else
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  [ "${INVARIANTS:-stop}" = report ] && export VC_FUZZ_KEEP_GOING=1 VC_FUZZ_ARTIFACTS="$BUILD_DIR/artifacts"
fi
if [ "$TARGET" = cli ]; then
  SEEDS="$SRC/fuzz/corpus_cli"
  DICT="$SRC/fuzz/cli.dict"
  MAX_LEN=4096
elif [ "$TARGET" = hf ]; then
  SEEDS="$SRC/fuzz/corpus_hf"
  DICT="" # byte programs: no words to splice
  MAX_LEN=64
  # a unit runs the whole CLI on a real config under the sanitizers and coverage, about 15x
  # slower than a Release build: qwen3.6-27b --batch 2147483648 --accumulate 4 --seq 2 (2.3 s
  # native, the allocator replays of its reserved envelope) took 36 s here
  UNIT_TIMEOUT=120
else
  SEEDS="$SRC/fuzz/corpus"
  [ -d "$SRC/tests/bad" ] && SEEDS="$SEEDS $SRC/tests/bad"
  [ -d "$SRC/examples" ] && SEEDS="$SEEDS $SRC/examples"
  DICT="$SRC/fuzz/vramcalc.dict"
  MAX_LEN=40000
fi

set -- -max_total_time="$SECONDS_TO_RUN" -timeout="${UNIT_TIMEOUT:-30}" -rss_limit_mb=2048 -max_len="$MAX_LEN" \
       -artifact_prefix="$BUILD_DIR/artifacts/" -print_final_stats=1
[ -n "$DICT" ] && set -- "$@" -dict="$DICT"
if [ "$JOBS" -gt 1 ]; then
  set -- "$@" -fork="$JOBS"
fi
# shellcheck disable=SC2086
exec "$BUILD_DIR/fuzz_$TARGET" "$@" ${FUZZ_ARGS:-} "$CORPUS" $SEEDS
