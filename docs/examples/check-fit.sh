#!/bin/sh
# Fails (exit 1) when the model no longer fits the card, keeping 10% headroom.
# The report goes to $OUT (default fit.json), for the CI job to keep.
set -u
MODEL=${MODEL:-examples/gpt2_small.json}
BATCH=${BATCH:-8}
GPU=${GPU:-a10g:90%}
OUT=${OUT:-fit.json}
vramcalc "$MODEL" --batch "$BATCH" -p amp-bf16 --gpu "$GPU" -f json > "$OUT"
status=$?
case $status in
  0) jq -r '"fits: \(.model) batch \(.batch) needs \(.memory.total) of \(.gpu.capacity) bytes on \(.gpu.name)"' "$OUT" ;;
  1) jq -r '"DOES NOT FIT: \(.model) batch \(.batch) needs \(.memory.total) bytes, \(-.gpu.free) more than \(.gpu.name) has"' "$OUT" ;;
  *) echo "vramcalc failed (exit $status)" ;;
esac
exit $status
