#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds with AddressSanitizer and
# UndefinedBehaviorSanitizer, builds the Release tree the .deb is made from,
# runs every test through ctest and prints the wall time of each phase. Run as
# root on Debian 12 (the end-to-end tests mount real FUSE filesystems).
set -euo pipefail
cd "$(dirname "$0")/.."

phase_report=()
phase() {  # phase NAME COMMAND...: runs COMMAND, records its wall time (failed or not)
    local name=$1 started=$SECONDS status=0
    shift
    "$@" || status=$?
    local outcome=""
    [ "$status" -eq 0 ] || outcome="  (failed, status $status)"
    phase_report+=("$(printf '%-34s %5d s%s' "$name" $((SECONDS - started)) "$outcome")")
    return "$status"
}
report() {
    local status=$?
    echo "== wall time per phase (exit status $status)"
    printf '%s\n' "${phase_report[@]}" "$(printf '%-34s %5d s' total $SECONDS)"
}
trap report EXIT

# ccache, when installed, lets later runs reuse objects; a fresh machine compiles everything.
# Paths below the clone are hashed relative to it and the build folder not at
# all (-g puts it in the hash by default), so a clone elsewhere reuses them too;
# a cache hit's debug information then names the first clone's build folder.
launcher=() launcher_env=()
if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    launcher_env=(CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache)
fi
phase "install dependencies" packaging/install-deps.sh
# One sanitizer build serves the tests and the libFuzzer targets (tests/fuzz):
# with clang (installed just above, with lld) it also carries libFuzzer's coverage instrumentation
# (-DNCAFS_FUZZ=ON), so the fuzz targets need no second build of the libraries.
build=build/suite
package_tree=build/package
compiler=() fuzz=0
if command -v clang++ >/dev/null 2>&1; then
    compiler=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNCAFS_FUZZ=ON -DNCAFS_FUZZ_SECONDS=15)
    fuzz=1
    # lld links the ASan test executables in about a third of ld.bfd's CPU time.
    if command -v ld.lld >/dev/null 2>&1; then
        compiler+=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
    fi
fi
# -O1 -g1: enough for the sanitizers (line tables in their reports) and
# quicker to compile than -O2 -g on the 2-core CI machines. A unity build
# (batches of 8 files a compiler run) takes 29 % off the CPU of a build from scratch
# (docs/performance.md, "The test command").
phase "configure (ASan+UBSan)" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DNCAFS_SANITIZE=ON "${compiler[@]}" "${launcher[@]}" \
    -DCMAKE_UNITY_BUILD=ON \
    -DNCAFS_DEB_BUILD_DIR="$PWD/$package_tree"
phase "build (ASan+UBSan, tests, fuzz)" cmake --build "$build" -j2
phase "build (Release, for the .deb)" env "${launcher_env[@]}" /usr/bin/python3 tests/packaging/deb_build_install.py --build-only "$PWD" "$PWD/$package_tree"
# LeakSanitizer cannot run under ptrace-restricted sandboxes; leaks are not
# what these runs look for, memory errors and undefined behaviour are.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# ctest starts the longest tests first when it knows their times (its cost
# file, rewritten after every run); a fresh tree starts from the times of a
# recent run, so the last long test does not start late and end the run alone.
costs=$build/Testing/Temporary/CTestCostData.txt
if [ ! -e "$costs" ]; then
    mkdir -p "$(dirname "$costs")"
    cp tests/ctest_costs.txt "$costs"
fi
# The fuzz targets (label fuzz, 15 s each, one at a time) run beside the
# other tests. Those spend much of their time waiting on mounts, servers,
# containers and child programs: at -j2 they kept about one core busy, so
# four run at once (all 618 took 632 s of CPU in 466 s of wall time at -j4,
# against 767 s at -j2; docs/performance.md "The test command").
# That ctest runs in the fuzz targets' own folder, so that its LastTest.log
# and cost file are its own: two ctest runs in one folder write into each
# other's LastTest.log.
fuzz_log=$build/fuzz-ctest.log fuzz_report=$build/fuzz-phase.txt fuzz_pid=""
if [ "$fuzz" -eq 1 ]; then
    (
        phase_report=() status=0
        phase "fuzz (15 s a target, beside ctest)" ctest --test-dir "$build/tests/fuzz" -L fuzz --output-on-failure -j1 || status=$?
        printf '%s\n' "${phase_report[@]}" >"$fuzz_report"
        exit "$status"
    ) >"$fuzz_log" 2>&1 &
    fuzz_pid=$!
else
    echo "fuzz: SKIPPED: clang++ not found (packaging/install-deps.sh installs clang); the libFuzzer targets need it"
fi
status=0
phase "ctest -j4 (all but fuzz)" ctest --test-dir "$build" -LE fuzz --output-on-failure -j4 --timeout 900 || status=$?
if [ -n "$fuzz_pid" ]; then
    wait "$fuzz_pid" || status=1
    cat "$fuzz_log"
    phase_report+=("$(cat "$fuzz_report" 2>/dev/null || echo "fuzz: no phase report (the run was cut short)")")
fi
exit "$status"
