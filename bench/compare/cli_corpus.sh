#!/usr/bin/env bash
# Diffs the command line of two vramcalc builds over a broad corpus: every
# example and Hugging Face config under many option sets (each format, the
# searches, sweeps and plots, generate, serve, LoRA/QLoRA/--weights, the
# parallel layouts, counts-only, --per-layer, --trace, --emit-model, the
# listings) and the bad-usage cases (each refusal of the command line). A
# front-end refactor (issue 25: the request layer) must leave every one
# byte-identical: stdout, stderr, exit status and the --plot file.
#
#   bench/compare/cli_corpus.sh OLD_BIN NEW_BIN [SKIP_REGEX]
#
# SKIP_REGEX: cases (their argument line) left out, e.g. '^--help' when the
# help text is regrouped on purpose. Exit 0 when every case is identical;
# else each differing case is listed (the first five with their diff).
set -u
old=$1 new=$2 skip=${3:-}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plot=$tmp/plot.svg
n=0 bad=0
run() { # SIDE BIN ARGS... -> $tmp/SIDE: exit status, stdout, stderr, the plot
  local side=$1 bin=$2; shift 2
  rm -f "$plot"
  { "$bin" "$@" 2>"$tmp/$side.err" <"${stdin:-/dev/null}"; echo "rc $?"; echo "-- stderr"; cat "$tmp/$side.err"
    if [ -e "$plot" ]; then echo "-- plot"; cat "$plot"; fi; } >"$tmp/$side"
}
check() {
  if [ -n "$skip" ] && [[ "$*" =~ $skip ]]; then return; fi
  n=$((n + 1))
  run a "$old" "$@"
  run b "$new" "$@"
  if ! cmp -s "$tmp/a" "$tmp/b"; then
    bad=$((bad + 1))
    echo "DIFF: vramcalc $*"
    if [ $bad -le 5 ]; then diff "$tmp/a" "$tmp/b" | head -20; fi
  fi
}
models=(examples/*.json tests/data/hf/*.json)
configs=(
  "" "-f json" "-f csv" "--per-layer" "--per-layer -f json" "--per-layer -f csv"
  "--max-batch --gpu a100-80gb" "--max-batch --gpu a100-80gb -f json" "--max-batch --gpu 24GiB -f csv"
  "--max-batch --gpu rtx4090 -b 2"
  "--sweep 1,8,32" "--sweep 1:64:x2 -f json --gpu h100-80gb --max-batch" "--sweep 1:16:4 -f csv"
  "--sweep 1,2 --per-layer" "--sweep 1,2 --per-layer -f json" "--sweep 1:8:x2 --plot $plot --gpu a100-80gb"
  "--sweep 1:4 --plot $plot -m infer -p bf16"
  "-m infer" "-m infer -f json -p fp16" "-m infer -f csv -p bf16 --gpu rtx4090"
  "-m generate" "-m generate -f json --cache static" "-m generate --cache quantized --kv-bits 2"
  "-m generate --cache offloaded --prompt 100 --new-tokens 10 -f csv"
  "-m generate --max-context --gpu a100-80gb" "-m generate --max-context --gpu a100-80gb -f json --new-tokens 64"
  "--serve --gpu h100-80gb" "--serve --gpu h100-80gb -f json" "--serve --gpu a100-80gb --kv-cache-dtype fp8 --max-num-seqs 64"
  "--serve --gpu h100-80gb --tp 2 --gpus 2 --gpu-memory-utilization 0.8"
  "--lora 16" "--lora 8 --lora-targets q_proj,v_proj --lora-alpha 16 --lora-dropout 0.1 -f json" "--qlora" "--qlora -f json --gpu rtx4090"
  "--weights int8" "--weights gptq4 -f json" "--weights nf4 -m infer" "--weights fp8 -p bf16"
  "--parallel zero3 --gpus 8" "--parallel zero3 --gpus 8 -f json --offload params"
  "--parallel fsdp --gpus 4 -p mixed-bf16" "--parallel ddp --gpus 2 -f json" "--parallel zero2 --gpus 4 --offload optimizer"
  "--parallel fsdp2 --gpus 4 --fsdp-param-dtype bf16 --fsdp-reshard-after-forward false"
  "--parallel zero1 --gpus 2 --ds-overlap-comm true" "--parallel zero1-torch --gpus 2 --parameters-as-bucket-view"
  "--tp 2 --gpus 2" "--tp 2 --sp --pp 2 --gpus 8 --parallel megatron -p mixed-bf16"
  "--pp 2 --gpus 2 --micro-batches 4 -f json" "--pp 2 --pp-virtual 2 --gpus 2 --micro-batches 4" "--ep 2 --gpus 2"
  "--emit-model" "--max-seq --gpu h100-80gb" "--max-seq --gpu h100-80gb -f json" "--seq 512 --grad-ckpt"
  "--loss liger" "--moe-imbalance 2" "-p bf16 -o sgd --batch 4" "--accumulate 4 -p amp" "--optim adafactor --torch 2.5"
  "--attention math -f json" "--workspace 0 --context 0" "--input 3,32,32" "--input 8"
  "--columns batch,memory.total -f csv" "--columns batch,gpu.fits -f csv --gpu rtx4090"
  "--gpu 8GiB:90%" "--no-color" "-b 2 --trace"
)
for m in "${models[@]}"; do
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086
    check "$m" $c
  done
done
for m in examples/mlp.json examples/resnet18.json tests/data/hf/gpt2.json; do check "$m" --trace; check "$m" --per-layer --trace; done
# no model, or no estimate
other=(
  "--help" "-h" "--version" "--list-gpus" "--list-gpus -f json" "--list-gpus -f csv" "--list-layers"
  "--params 7000000000" "--params 7000000000 -f json" "--params 7000000000 -f csv -p bf16"
  "--params 1000000 --activations 5000 -b 8" "--params 1000000 --activations 5000 --sweep 1:8:x2 -f csv"
  "--params 7000000000 --max-batch --gpu a100-80gb" "--params 7000000000 --gpus 8 --parallel zero3"
  "--params 7000000000 -m infer" "--params 0"
  # bad usage: tests/test_errors.c's cli group
  "examples/mlp.json --batch 0" "examples/mlp.json --batch -1" "examples/mlp.json --batch 1e99" "examples/mlp.json --batch 1.5"
  "examples/mlp.json --batch abc" "examples/mlp.json -b 99999999999999999999" "examples/mlp.json --batch 4611686018427387904"
  "examples/mlp.json --accumulate 0" "examples/mlp.json --optim adamm" "examples/mlp.json -o Adam"
  "examples/mlp.json --optim-impl fast" "examples/mlp.json --precision fp64" "examples/mlp.json --mode eval"
  "examples/mlp.json --attention fast" "examples/mlp.json --format xml" "examples/mlp.json --workspace -5"
  "examples/mlp.json --workspace 12XB" "examples/mlp.json --context 1e400" "examples/mlp.json --context 99999999999TiB"
  "examples/mlp.json --input 0,4" "examples/mlp.json --input abc" "examples/mlp.json --input 1,2,3,4,5,6,7,8,9"
  "examples/mlp.json --input 2199023255552" "examples/mlp.json --input 784," "examples/mlp.json --frobnicate" "examples/mlp.json -z"
  "examples/mlp.json --batch" "examples/mlp.json examples/mlp.json" "examples/mlp.json --activations 5"
  "--params -5" "--params 9223372036854775807" "--params 1000 --activations 9223372036854775807 --batch 4"
  "--batch 2" "/nonexistent/model.json" "/" ""
  # the refusals of the command line (src/cli/main.c, drivers.c)
  "examples/mlp.json --moe-imbalance 0.5" "examples/mlp.json --moe-imbalance x" "examples/mlp.json --moe-imbalance 2"
  "examples/mlp.json --seq 64" "examples/mlp.json --grad-ckpt" "examples/mlp.json --loss liger" "examples/mlp.json --loss foo"
  "examples/mlp.json --emit-model" "examples/mlp.json --parallel foo" "examples/mlp.json --offload foo"
  "examples/mlp.json --fsdp-param-dtype foo" "examples/mlp.json --fsdp-reshard-after-forward maybe"
  "examples/mlp.json --fsdp-reshard-after-forward 0" "examples/mlp.json --ds-overlap-comm maybe"
  "examples/mlp.json --offload-device disk" "examples/mlp.json --gpu-memory-utilization 2" "examples/mlp.json --gpu-memory-utilization 0.5"
  "examples/mlp.json --kv-cache-dtype fp3" "examples/mlp.json --kv-bits 3" "examples/mlp.json --kv-bits 0"
  "examples/mlp.json --kv-residual-length 0 -m generate --cache quantized" "examples/mlp.json --cache foo"
  "examples/mlp.json --weights nf5" "examples/mlp.json --lora 0" "examples/mlp.json --lora-alpha 0" "examples/mlp.json --lora-dropout 1"
  "examples/mlp.json --lora 8" "examples/mlp.json --lora 8 --lora-targets nothere" "examples/mlp.json --lora-targets $(printf 'x%.0s' $(seq 300))"
  "examples/mlp.json --torch 1.9" "examples/mlp.json --columns batch" "examples/mlp.json --columns nope -f csv"
  "--list-gpus --columns batch -f csv" "examples/mlp.json --serve --columns batch -f csv"
  "examples/mlp.json -m generate --per-layer" "examples/mlp.json -m generate --parallel ddp --gpus 2"
  "tests/data/hf/gpt2.json -m generate --seq 64" "tests/data/hf/gpt2.json --qlora --weights int8"
  "tests/data/hf/gpt2.json --qlora -p fp32" "tests/data/hf/gpt2.json --qlora -p fp16" "--params 100 --weights int8" "--params 100 --qlora"
  "examples/mlp.json --max-batch" "examples/mlp.json --plot x.svg" "examples/mlp.json --sweep 1,2 --plot -"
  "--params 100 --trace" "--params 100 --input 3" "--params 100 --per-layer" "examples/mlp.json --trace --max-batch --gpu 1GiB"
  "examples/mlp.json --trace -f json" "examples/mlp.json --prompt 5" "examples/mlp.json --new-tokens 5" "examples/mlp.json --cache static"
  "tests/data/hf/gpt2.json -m generate --kv-bits 2" "tests/data/hf/gpt2.json --serve --gpu h100-80gb --cache quantized"
  "tests/data/hf/gpt2.json -m generate --kv-cache-dtype fp8" "tests/data/hf/gpt2.json --block-size 32"
  "tests/data/hf/gpt2.json --serve" "--params 100 --serve --gpu h100-80gb" "tests/data/hf/gpt2.json --serve --gpu h100-80gb --max-batch"
  "tests/data/hf/gpt2.json --serve --gpu h100-80gb --sweep 1,2" "tests/data/hf/gpt2.json --serve --gpu h100-80gb --trace"
  "tests/data/hf/gpt2.json --serve --gpu h100-80gb -m generate --max-context" "tests/data/hf/gpt2.json --serve --gpu h100-80gb -m train"
  "tests/data/hf/gpt2.json --serve --gpu h100-80gb --parallel ddp" "tests/data/hf/gpt2.json --serve --gpu h100-80gb --gpus 2"
  "--params 100 -m generate" "tests/data/hf/gpt2.json --max-context" "tests/data/hf/gpt2.json -m generate --max-context"
  "tests/data/hf/gpt2.json -m generate --max-context --gpu 80GB --max-batch" "tests/data/hf/gpt2.json -m generate --max-context --gpu 80GB --sweep 1,2"
  "tests/data/hf/gpt2.json -m generate --max-context --gpu 80GB --trace" "tests/data/hf/gpt2.json --sweep 1,2 --batch 3"
  "tests/data/hf/gpt2.json --max-seq" "--params 5 --max-seq --gpu 80GB" "tests/data/hf/gpt2.json --max-seq --gpu 80GB --max-batch"
  "tests/data/hf/gpt2.json --max-seq --gpu 80GB --sweep 1,2" "tests/data/hf/gpt2.json --max-seq --gpu 80GB --input 5"
  "tests/data/hf/gpt2.json --max-seq --gpu 80GB --seq 5" "tests/data/hf/gpt2.json --max-seq --gpu 80GB --trace"
  "tests/data/hf/gpt2.json --max-seq --gpu 80GB --emit-model" "examples/mlp.json --max-seq --gpu 80GB"
  "examples/mlp.json --sweep 1,2 --trace" "examples/mlp.json --gpu h100-80gx" "examples/mlp.json --gpu 9223372036854775807"
  "examples/mlp.json --sweep 0" "examples/mlp.json --sweep 5:1" "examples/mlp.json --sweep 1:10:x1" "examples/mlp.json --sweep 1:1000000"
  "examples/mlp.json --sweep 9999999999999999" "examples/mlp.json --sweep 1,,2" "tests/data/hf/gpt2.json --input 100"
  "examples/mlp.json --tp 0" "examples/mlp.json --gpus 0" "examples/mlp.json --pp 0" "examples/mlp.json --ep 0"
  "examples/mlp.json --tp 3 --gpus 3" "examples/mlp.json --ep 2 --gpus 2" "examples/mlp.json --micro-batches 0"
  "examples/mlp.json --pp-virtual 0" "examples/mlp.json --fsdp-replicate 0" "examples/mlp.json --prompt 0 -m generate"
  "examples/mlp.json --max-num-batched-tokens 0" "examples/mlp.json --max-num-seqs x" "examples/mlp.json --block-size 0"
  "examples/mlp.json --kv-group-size 0" "examples/mlp.json --params 5" "examples/mlp.json --optim none -m train"
  "examples/mlp.json --offload optimizer" "examples/mlp.json --parallel zero3 --gpus 2 --offload-device nvme --nvme-gds"
  "examples/mlp.json --nvme-gds" "examples/mlp.json --sp" "examples/mlp.json --gradient-as-bucket-view" "examples/mlp.json --fsdp-use-orig-params"
  "tests/data/hf/mixtral-8x7b-v0.1.json --ep 3 --gpus 3" "tests/data/hf/gpt2.json --serve --gpu h100-80gb --lora 8"
  "tests/data/hf/gpt2.json --lora-alpha 4" "examples/mlp.json --no-colour" "examples/mlp.json --columns" "examples/mlp.json -f"
  "--bach 4 examples/mlp.json" "examples/mlp.json --max-bach" "examples/mlp.json --serv" "examples/mlp.json --help-me"
)
for c in "${other[@]}"; do
  # shellcheck disable=SC2086
  check $c
done
stdin=examples/mlp.json check -
stdin=examples/mlp.json check - -f json
echo "compared $n cases: $bad differ"
[ $bad -eq 0 ]
