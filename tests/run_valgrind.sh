#!/bin/bash
# tests/run_valgrind.sh — valgrind memcheck over the CLI: every example model
# (several option sets) and every bad model file must run with no memory
# error and no leak (definite, indirect or possible). Bad files must still
# exit 2, examples 0 (or 1: does not fit).
#
#   tests/run_valgrind.sh            (a few minutes on 2 cores)
#
# Environment: BUILD_DIR (default build-valgrind: a plain -O1 -g build of
# its own), JOBS (parallel valgrind processes, default: all cores),
# VALGRIND (default valgrind), TRACK_ORIGINS=1 (slower; where an
# uninitialised value came from). Exit status 0 when everything is clean.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC/build-valgrind}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
VALGRIND=${VALGRIND:-valgrind}
command -v "$VALGRIND" >/dev/null || { echo "run_valgrind.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }

cmake -S "$SRC" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DBUILD_TESTING=OFF >/dev/null
cmake --build "$BUILD_DIR" --target vramcalc_cli -j "$JOBS" >/dev/null
CLI="$BUILD_DIR/vramcalc"
LOGS="$BUILD_DIR/valgrind-logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"

# One job per line: EXPECTED_EXIT<TAB>LABEL<TAB>ARGS (space-separated).
JOBLIST="$LOGS/jobs.tsv"
: > "$JOBLIST"
shopt -s nullglob
for m in "$SRC"/examples/*.json "$SRC"/bench/accuracy/models/*.json; do
  grep -q '"layers"' "$m" || continue   # a model (examples/ also holds reference data)
  name=$(basename "$(dirname "$m")")_$(basename "$m" .json)
  for opts in "" "--mode infer --batch 8" "--precision amp-bf16 --optim sgd --per-layer --format json" \
              "--precision mixed-fp16 --optim adamw --accumulate 4 --batch 3 --format csv"; do
    label="$name${opts:+ $opts}"
    printf '0|1\t%s\t%s %s\n' "$label" "$m" "$opts" >> "$JOBLIST"
  done
done
while IFS=$'\t' read -r name expected args; do
  case "$name" in \#*|"") continue;; esac
  printf '2\tbad/%s\t%s %s\n' "$name" "$SRC/tests/bad/$name.json" "$args" >> "$JOBLIST"
done < "$SRC/tests/bad/expected.txt"

run_one() { # EXPECTED LABEL ARGS
  local expected=$1 label=$2 args=$3 log
  log="$LOGS/$(printf '%s' "$label" | tr -c 'A-Za-z0-9._-' '_').log"
  local rc=0
  # shellcheck disable=SC2086
  "$VALGRIND" --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
      --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 --track-origins="$ORIGINS" \
      --log-file="$log" "$CLI" $args >/dev/null 2>&1 </dev/null || rc=$?
  if [ "$rc" = 99 ]; then echo "FAIL (memcheck) $label: see $log"; return 1; fi
  if ! [[ "$rc" =~ ^($expected)$ ]]; then echo "FAIL (exit $rc, expected $expected) $label"; return 1; fi
  rm -f "$log"
}
export -f run_one
ORIGINS=no
[ "${TRACK_ORIGINS:-0}" = 1 ] && ORIGINS=yes
export VALGRIND CLI LOGS ORIGINS

total=$(wc -l < "$JOBLIST")
echo "valgrind memcheck: $total runs, $JOBS at a time"
fails=$(tr '\t' '\n' < "$JOBLIST" | xargs -d '\n' -n 3 -P "$JOBS" bash -c 'run_one "$0" "$1" "$2"' | tee /dev/stderr | grep -c '^FAIL' || true)
if [ "$fails" != 0 ]; then
  echo "run_valgrind.sh: $fails of $total runs failed" >&2
  exit 1
fi
echo "run_valgrind.sh: $total runs, no memory errors, no leaks"
