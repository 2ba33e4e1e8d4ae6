#!/usr/bin/env bash
# The demo: installs dependencies, builds ncafs (release), and shows it at work.
set -euo pipefail
cd "$(dirname "$0")/.."
packaging/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNCAFS_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j2
echo "ncafs built in build/release"
