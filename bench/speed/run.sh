#!/bin/sh
# bench/speed/run.sh [BUILD_DIR] — issue 4's speed targets, measured (no
# timed tests: these are numbers for people to read).
#
#   1. one estimate of a generated 2,000-layer model (~100 KB of JSON) takes
#      at most a quarter of `jq -c . model.json` on the same file;
#   2. `--sweep 1:1024` on it costs at most 10x one estimate;
#   3. `--max-batch` at most 3x one estimate;
#   4. resident memory under 32 MiB for a 10,000-layer model;
#   5. issue 28's jobs (jobs.py): instructions and wall against jq;
#   6. with LIMITS=1, every layer kind at the layer limit (limits.py).
#
# Needs hyperfine (Debian: apt-get install hyperfine), jq, /usr/bin/time
# (Debian: time) and /usr/bin/python3. Writes its models and results to
# $OUT (default: a temporary directory, printed at the end).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../../build}
V=$(cd "$BUILD" && pwd)/vramcalc
OUT=${OUT:-$(mktemp -d)}
RUNS=${RUNS:-30}
[ -x "$V" ] || { echo "no $V: build first (cmake --build $BUILD)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 2; }

/usr/bin/python3 "$HERE/gen_model.py" 2000 > "$OUT/m2000.json"
/usr/bin/python3 "$HERE/gen_model.py" 2000 --names > "$OUT/m2000-names.json"
/usr/bin/python3 "$HERE/gen_model.py" 10000 > "$OUT/m10000.json"
ls -l "$OUT"/*.json
nproc; uptime

# 1. one estimate against jq
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$OUT/estimate.json" \
    "jq -c . $OUT/m2000.json" \
    "$V $OUT/m2000.json" \
    "$V $OUT/m2000.json -f json" \
    "$V $OUT/m2000-names.json"
# 2, 3. sweep and max batch against one estimate
hyperfine -N --warmup 1 --runs "${RUNS_SLOW:-5}" --export-json "$OUT/sweep.json" \
    "$V $OUT/m2000.json -f csv" \
    "$V $OUT/m2000.json --sweep 1:1024 -f csv" \
    "$V $OUT/m2000.json --gpu h100-80gb --max-batch -f csv" \
    "$V $OUT/m2000.json --sweep 1:1024:x2 -f csv"
# 4. resident memory
for m in m2000 m10000; do
    for args in "" "--sweep 1:64" "--gpu mi300x --max-batch"; do
        /usr/bin/time -f "$m $args: %M KiB max resident, %e s" "$V" "$OUT/$m.json" $args -f csv >/dev/null || true
    done
done 2>&1
# the ratios, from hyperfine's means
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def means(name):
    return [(r["command"], r["mean"], r["user"] + r["system"]) for r in json.load(open(f"{out}/{name}.json"))["results"]]
e = means("estimate"); s = means("sweep")
print("\n(wall = hyperfine mean; cpu = user + system, steadier on a busy machine)")
jq = e[0]
for cmd, m, cpu in e[1:]:
    print(f"{cmd.split('/')[-1]:32s} / jq: wall {m*1e3:6.1f}/{jq[1]*1e3:.1f} ms = {m/jq[1]:.3f}, "
          f"cpu {cpu*1e3:6.1f}/{jq[2]*1e3:.1f} ms = {cpu/jq[2]:.3f}   (target <= 0.25)")
base = s[0]
for cmd, m, cpu in s[1:]:
    print(f"{cmd.split('.json',1)[1].strip():40s} wall {m*1e3:8.1f} ms = {m/base[1]:6.1f}x, "
          f"cpu {cpu*1e3:8.1f} ms = {cpu/base[2]:6.1f}x one estimate")
print("(targets: --sweep 1:1024 <= 10x, --max-batch <= 3x)")
PY
# where the time goes, in-process (load, plan build, one replay per batch)
if cc -O2 -I"$HERE/../../include" "$HERE/bench_api.c" "$BUILD/libvramcalc.a" -lcjson -lm -o "$OUT/bench_api" 2>/dev/null; then
    "$OUT/bench_api" "$OUT/m2000.json"
fi
# MoE configs: sweeps and max-batch searches, and the plans they build (issue 16)
if cc -O2 -I"$HERE/../../include" "$HERE/bench_moe.c" "$BUILD/libvramcalc.a" -lcjson -lm -o "$OUT/bench_moe" 2>/dev/null; then
    for f in mixtral-8x7b-v0.1 qwen1.5-moe-a2.7b; do
        "$OUT/bench_moe" "$HERE/../../tests/data/hf/$f.json" 256
        "$OUT/bench_moe" "$HERE/../../tests/data/hf/$f.json" 256 2048 infer
    done
fi
# the ratios again, interleaved (each round runs every command once: steadier on a shared machine)
/usr/bin/python3 "$HERE/ratios.py" "$BUILD" "$OUT/m2000.json" "${ROUNDS:-30}" "$OUT/m2000-names.json"
# issue 28's jobs: instructions (callgrind) and interleaved wall ratios against jq; BEFORE=path/to/vramcalc
# runs an older build in the same rounds
if command -v valgrind >/dev/null; then CG=; else CG=--no-callgrind; fi
/usr/bin/python3 "$HERE/jobs.py" "$V" ${BEFORE:-} --rounds "${JOB_ROUNDS:-11}" $CG
# every layer kind at the layer limit (issue 28 item 4): minutes and up to ~4.5 GB a run, so only with LIMITS=1
if [ "${LIMITS:-0}" = 1 ]; then /usr/bin/python3 "$HERE/limits.py" "$V"; fi
echo "results in $OUT"
