#!/bin/sh
# Installs what vramcalc needs on Debian (if missing) and builds it into build/.
# Usage: tools/setup.sh            (run from the repository root)
set -eu
cd "$(dirname "$0")/.."
pkgs="build-essential cmake pkg-config libcjson-dev libcmocka-dev"
missing=""
for p in $pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${VRAMCALC_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
