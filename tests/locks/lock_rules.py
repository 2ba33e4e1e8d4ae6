#!/usr/bin/env python3
"""The compiler refuses what the lock annotations forbid.

usage: lock_rules.py CXX SOURCE_DIR

Compiles tests/locks/lock_rules.cpp with the flags of CMakeLists.txt: as it
is it must compile; with each BREAK_* defined it must fail with the
analysis' own complaint (not some other error).
"""
import subprocess
import sys

CASES = {
    None: None,
    "BREAK_UNGUARDED": "requires holding mutex 'inner'",
    "BREAK_ORDER": "mutex 'outer' must be acquired before 'inner'",
    "BREAK_RELEASED": "requires holding mutex 'inner'",
}


def compile_with(cxx, root, define):
    command = [cxx, "-std=c++20", "-fsyntax-only", "-I", root, "-Wthread-safety", "-Wthread-safety-beta",
               "-Werror=thread-safety", f"{root}/tests/locks/lock_rules.cpp"]
    if define:
        command.append("-D" + define)
    return subprocess.run(command, capture_output=True, text=True)


def main():
    cxx, root = sys.argv[1], sys.argv[2]
    if "clang" not in subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout:
        print(f"SKIPPED: {cxx} is not clang; the thread-safety analysis is clang's", flush=True)
        return 77
    failures = []
    for define, complaint in CASES.items():
        done = compile_with(cxx, root, define)
        if complaint is None and done.returncode != 0:
            failures.append(f"the correct code does not compile:\n{done.stderr}")
        elif complaint is not None and (done.returncode == 0 or complaint not in done.stderr):
            failures.append(f"{define}: expected a compile error saying {complaint!r}, got status "
                            f"{done.returncode}:\n{done.stderr}")
        else:
            print(f"{define or 'as written'}: {'compiles' if complaint is None else 'refused: ' + complaint}")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
