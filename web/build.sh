#!/bin/sh
# web/build.sh — the page (issue 30): the library compiled to WebAssembly with Debian's
# emscripten (apt-get install emscripten node-acorn) into BUILD_DIR/page (default
# build-web/page), a folder that works offline: open build-web/page/index.html.
#   web/build.sh            configure once, then rebuild what changed
# The same build as `cmake --preset web && cmake --build --preset web` (web/CMakeLists.txt),
# in any BUILD_DIR.
# Environment: BUILD_DIR, JOBS (default 2).
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC/build-web}
JOBS=${JOBS:-2}
# emscripten's JavaScript optimizer needs acorn: Debian's node-acorn is in /usr/share/nodejs,
# where Debian's node looks and another node (NodeSource's) does not.
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
command -v emcmake >/dev/null 2>&1 || { echo "web/build.sh: emcmake not found (apt-get install emscripten node-acorn)" >&2; exit 2; }
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    emcmake cmake -S "$SRC" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DVRAMCALC_WERROR=ON >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "web/build.sh: open $BUILD_DIR/page/index.html"
