#!/bin/sh
# tests/web_page.sh — CTest web_page (label web, issue 30): builds the page (web/build.sh,
# emscripten) and runs web/test/page_test.js, the page in Debian's Chromium headless
# (puppeteer-core from web/node_modules, `npm ci` in web/) against the native CLI.
#   tests/web_page.sh CLI OUT_DIR [--docs]
# Exit 77 (CTest's SKIP_RETURN_CODE) when emscripten, node, Chromium or the node modules are
# missing; .ci/run installs them. Environment: VC_WEB_BUILD (default build-web in the source
# tree), CHROMIUM (default /usr/bin/chromium).
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
CLI=$1 OUT=$2
shift 2
BUILD=${VC_WEB_BUILD:-$SRC/build-web}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
missing=""
command -v emcmake >/dev/null 2>&1 || missing="$missing emscripten"
command -v node >/dev/null 2>&1 || missing="$missing node"
[ -x "$CHROMIUM" ] || missing="$missing $CHROMIUM"
[ -d "$SRC/web/node_modules/puppeteer-core" ] || missing="$missing web/node_modules (npm ci in web/)"
if [ -n "$missing" ]; then
    echo "web_page: skipped, missing:$missing"
    exit 77
fi
mkdir -p "$OUT"
start=$(date +%s)
if ! BUILD_DIR=$BUILD "$SRC/web/build.sh" >"$OUT/build.log" 2>&1; then
    cat "$OUT/build.log"
    exit 1
fi
echo "web_page: web/build.sh took $(($(date +%s) - start)) s"
export CHROMIUM
exec node "$SRC/web/test/page_test.js" "$CLI" "$BUILD/page" "$BUILD/vramcalc-node.js" "$OUT" "$@"
