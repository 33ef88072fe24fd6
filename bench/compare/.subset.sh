#!/usr/bin/env bash
# Diffs every estimate of two vramcalc builds: a refactor that must not change
# any output (issue 11) runs this with the old and the new binary.
#
#   bench/compare/compare_builds.sh OLD_BIN NEW_BIN [QUICK]
#
# Models: examples/, bench/accuracy/models/, bench/accuracy/suite/models/ and
# the fuzz corpus (fuzz/corpus/*.json, most of them layer fixtures). For each
# model and each configuration below it runs `BIN MODEL -f json --per-layer`
# (errors too: the stderr line and exit status are compared), then a sweep and
# --trace for the examples. Exit 0 when every output is identical; otherwise
# every differing command is listed (the first five with their diff) and the
# exit status is 1.
set -u
old=$1 new=$2
cd "$(dirname "$0")/../.."
configs=(
  ""
  "-m infer"
  "-o sgd" "-o momentum" "-o adamw" "-o none"
  "--optim-impl fused" "--optim-impl forloop"
  "-p fp16" "-p bf16" "-p amp-fp16" "-p amp-bf16" "-p mixed-fp16" "-p mixed-bf16"
  "-p amp-bf16 -m infer" "-p mixed-fp16 -o sgd --accumulate 4"
  "--attention math -b 3" "--attention flash -p bf16 -b 5" "--attention efficient -p amp-fp16 -b 7"
  "-b 64" "--accumulate 2 -b 8"
)
[ "${3:-}" = QUICK ] && configs=("" "-m infer" "-o sgd -p mixed-bf16" "-p amp-fp16 -b 16")
mapfile -t models < /tmp/rest_models.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
run() { # SIDE BIN ARGS... -> $tmp/SIDE: exit status, stdout, stderr
  local side=$1 bin=$2; shift 2
  { "$bin" "$@" 2>"$tmp/$side.err"; echo "rc $?"; cat "$tmp/$side.err"; } >"$tmp/$side"
}
check() {
  n=$((n + 1))
  run a "$old" "$@"
  run b "$new" "$@"
  if ! diff "$tmp/a" "$tmp/b" >"$tmp/diff"; then
    bad=$((bad + 1))
    echo "DIFF: vramcalc $*"
    if [ $bad -le 5 ]; then head -20 "$tmp/diff"; fi
  fi
}
for m in "${models[@]}"; do
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086
    check "$m" -f json --per-layer $c
  done
done
for m in examples/*.json; do
  check "$m" -f csv --sweep 1:300:x2 -g rtx4090
  check "$m" -g h100-80gb --max-batch -f json
  check "$m" --trace -b 3
done
echo "compared $n runs: $bad differ"
[ $bad -eq 0 ]
