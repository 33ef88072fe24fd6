#!/bin/sh
# test_svg.sh VRAMCALC — `--sweep ... --plot FILE.svg` writes a valid SVG
# (XML checked with xmllint, or python3's xml.etree) that headless Chromium
# renders. Exit 77 (CTest: skipped) when chromium is not installed; the rest
# of the checks run first either way.
set -eu
CLI=${1:?usage: test_svg.sh path/to/vramcalc}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cat > "$T/model.json" <<'JSON'
{"name": "svg <test> & \"quotes\"", "input": [1024], "layers": [
  {"type": "Linear", "in_features": 1024, "out_features": 4096},
  {"type": "GELU"},
  {"type": "Linear", "in_features": 4096, "out_features": 1024}]}
JSON

fail() { echo "test_svg: $*" >&2; exit 1; }

valid_xml() {
    if command -v xmllint >/dev/null 2>&1; then
        xmllint --noout "$1" || return 1
    elif command -v python3 >/dev/null 2>&1; then
        python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); sys.exit(r.tag != "{http://www.w3.org/2000/svg}svg")' "$1" || return 1
    else
        echo "test_svg: neither xmllint nor python3: XML not checked" >&2
    fi
}

# geometric sweep with a GPU (capacity line, max batch), linear sweep, a single
# point, a sweep without a GPU, counts-only
"$CLI" "$T/model.json" --sweep 1:65536:x2 --gpu rtx4090 --plot "$T/geo.svg" >/dev/null || fail "geo sweep"
"$CLI" "$T/model.json" --sweep 1:512:16 --gpu 24GiB:90% -p amp-bf16 --plot "$T/lin.svg" -f json >/dev/null || fail "linear sweep"
"$CLI" "$T/model.json" --sweep 8 --gpu h100-80gb --plot "$T/one.svg" -f csv >/dev/null || fail "one point"
"$CLI" "$T/model.json" --sweep 1:64 -m infer --plot "$T/nogpu.svg" >/dev/null || fail "no gpu"
"$CLI" --params 1000000000 --activations 100000 --sweep 1:1024:x2 --gpu a100-40gb --plot "$T/counts.svg" >/dev/null || fail "counts"
for f in geo lin one nogpu counts; do
    valid_xml "$T/$f.svg" || fail "$f.svg is not valid XML"
done
grep -q 'max batch' "$T/geo.svg" || fail "geo.svg: no max batch mark"
grep -q 'capacity: rtx4090' "$T/geo.svg" || fail "geo.svg: no capacity line"
grep -q '&lt;test&gt; &amp; &quot;quotes&quot;' "$T/geo.svg" || fail "geo.svg: model name not escaped"
grep -q 'log scale' "$T/geo.svg" || fail "geo.svg: geometric sweep not on a log axis"
if grep -q 'log scale' "$T/lin.svg"; then fail "lin.svg: arithmetic sweep on a log axis"; fi
if grep -q 'capacity:' "$T/nogpu.svg"; then fail "nogpu.svg: capacity line without --gpu"; fi
# an unwritable path is a usage error with nothing on stdout
if "$CLI" "$T/model.json" --sweep 1:4 --plot "$T/no/such/dir/x.svg" >"$T/out" 2>"$T/err"; then fail "bad --plot path accepted"; fi
[ ! -s "$T/out" ] || fail "bad --plot path: output on stdout"

CHROMIUM=
for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then CHROMIUM=$c; break; fi
done
if [ -z "$CHROMIUM" ]; then
    echo "test_svg: chromium not installed: rendering not checked (skipped)"
    exit 77
fi
for f in geo lin; do
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$T/profile-$f" --screenshot="$T/$f.png" --window-size=900,600 "file://$T/$f.svg" \
        >/dev/null 2>&1 || fail "chromium failed on $f.svg"
    [ -s "$T/$f.png" ] || fail "chromium wrote no $f.png"
    # a PNG, and not a blank page (a white 900x600 screenshot compresses to a few KB)
    head -c 8 "$T/$f.png" | od -An -c | grep -q 'P   N   G' || fail "$f.png is not a PNG"
    size=$(wc -c < "$T/$f.png")
    [ "$size" -gt 15000 ] || fail "$f.png is only $size bytes: nothing drawn?"
done
echo "test_svg: ok"
