#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds with AddressSanitizer and
# UndefinedBehaviorSanitizer, runs every test through ctest. Run as root on
# Debian 12 (the end-to-end tests mount real FUSE filesystems).
set -euo pipefail
cd "$(dirname "$0")/.."
packaging/install-deps.sh
build=build/asan
# -O1 -g1: enough for the sanitizers (line tables in their reports) and
# quicker to compile than -O2 -g on the 2-core CI machines.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DNCAFS_SANITIZE=ON
cmake --build "$build" -j2
# LeakSanitizer cannot run under ptrace-restricted sandboxes; leaks are not
# what these runs look for, memory errors and undefined behaviour are.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir "$build" --output-on-failure -j2 --timeout 900

# libFuzzer targets (tests/fuzz): a separate clang build of only them and the
# libraries they need, each target run for a bounded time over its committed
# corpus (about a minute on 2 cores).
if command -v clang++ >/dev/null 2>&1; then
  fuzz=build/fuzz
  cmake -S . -B "$fuzz" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DNCAFS_SANITIZE=ON -DNCAFS_FUZZ=ON -DNCAFS_FUZZ_SECONDS=15
  cmake --build "$fuzz" -j2 --target fuzz_targets
  ctest --test-dir "$fuzz" -L fuzz --output-on-failure -j2
else
  echo "fuzz: SKIPPED: clang++ not found (packaging/install-deps.sh installs clang); the libFuzzer targets need it"
fi
