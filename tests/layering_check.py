#!/usr/bin/env python3
"""Every #include of the project's own headers follows the layering rule.

usage: layering_check.py SOURCE_DIR

The folders depend one way: cli -> fs -> aggregation -> {codecs, remote} -> io
(codecs and remote do not know each other). CMake's target links allow the same
edges, but one global include path would let a header of a higher layer be
included from a lower one unnoticed; this check reads every include instead.

It also keeps netcdf-c and HDF5 behind their gateway, codecs/netcdf/: a call
into either library (a function their installed headers declare) elsewhere
fails; and every library function called in the gateway
is declared there as requiring the library lock (library_calls.hpp), so that
clang's thread-safety analysis sees every call. Every mutex is one the
analysis checks (no std::mutex outside io/mutex.hpp and the library's).
"""
import pathlib
import re
import sys

ALLOWED = {
    "io": {"io"},
    "codecs": {"io", "codecs"},
    "remote": {"io", "remote"},
    "aggregation": {"io", "codecs", "remote", "aggregation"},
    "fs": {"io", "codecs", "remote", "aggregation", "fs"},
    "cli": {"io", "codecs", "remote", "aggregation", "fs", "cli"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)

GATEWAY = "codecs/netcdf"
LIBRARY_HEADERS = [pathlib.Path("/usr/include"), pathlib.Path("/usr/include/hdf5/serial")]
CALL = re.compile(r"\b((?:nc|H5)[A-Za-z0-9_]*)\s*\(")
DECLARED = re.compile(r"\b((?:nc_|H5)[A-Za-z0-9_]*)\s*\(")
LISTED = re.compile(r"NCAFS_LIBRARY_CALL\((\w+)\)")
UNLISTED_OK = {"nc_strerror"}  # maps a number to a constant text: no state, no lock


def library_functions():
    """Names netcdf-c's and HDF5's installed headers declare (empty without them)."""
    names = set()
    for folder in LIBRARY_HEADERS:
        for header in list(folder.glob("netcdf*.h")) + list(folder.glob("H5*.h")) + list(folder.glob("hdf5*.h")):
            names.update(DECLARED.findall(header.read_text(errors="replace")))
    return names


def code_of(path):
    """The file's text without comments and string literals (names in them are no calls)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", path.read_text(errors="replace"), flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def analysis_is_global(root):
    """Whether CMakeLists.txt compiles every source with clang's thread-safety analysis, as errors."""
    text = (root / "CMakeLists.txt").read_text()
    return re.search(r"add_compile_options\([^)]*-Werror=thread-safety", text) is not None


def library_violations(root, functions):
    listed = set(LISTED.findall((root / GATEWAY / "library_calls.hpp").read_text()))
    if not analysis_is_global(root):
        yield "CMakeLists.txt does not compile every source with -Wthread-safety as an error"
    for layer in ALLOWED:
        for path in sorted((root / layer).rglob("*.[ch]pp")):
            rel = path.relative_to(root).as_posix()
            called = {n for n in CALL.findall(code_of(path)) if n in functions}
            if not called:
                continue
            if not rel.startswith(GATEWAY + "/"):
                yield f"{rel} calls {', '.join(sorted(called))}: netcdf-c and HDF5 are called only in {GATEWAY}/"
                continue
            for name in sorted(called - listed - UNLISTED_OK):
                yield f"{rel} calls {name}, not declared in {GATEWAY}/library_calls.hpp (the lock is not checked)"
            if path.suffix == ".cpp" and called - UNLISTED_OK and "library_calls.hpp" not in path.read_text():
                yield f"{rel} calls the libraries without including {GATEWAY}/library_calls.hpp"


# A mutex the compiler checks is an ncafs::Mutex (io/mutex.hpp) or the
# library's LibraryMutex; a std::mutex declared anywhere else would be one
# whose data and order only prose guards.
PLAIN_MUTEX = re.compile(r"\bstd::(?:recursive_|shared_|timed_)?mutex\b(?!\s*>)")
MUTEX_HOMES = {"io/mutex.hpp", GATEWAY + "/netcdf_library.hpp"}


def plain_mutex_violations(root):
    for layer in ALLOWED:
        for path in sorted((root / layer).rglob("*.[ch]pp")):
            rel = path.relative_to(root).as_posix()
            if rel in MUTEX_HOMES:
                continue
            if PLAIN_MUTEX.search(code_of(path)):
                yield f"{rel} declares a std::mutex: use ncafs::Mutex (io/mutex.hpp) with NCAFS_GUARDED_BY on its data"


def violations(root):
    for layer, allowed in ALLOWED.items():
        for path in sorted((root / layer).rglob("*.[ch]pp")):
            for folder in INCLUDE.findall(path.read_text(errors="replace")):
                if folder in ALLOWED and folder not in allowed:
                    yield f"{path.relative_to(root)} includes {folder}/: {layer}/ may include only {sorted(allowed)}"


def main():
    root = pathlib.Path(sys.argv[1])
    found = list(violations(root)) + list(plain_mutex_violations(root))
    functions = library_functions()
    if functions:
        found += list(library_violations(root, functions))
    else:
        print("netcdf-c and HDF5 headers not found: the library calls are not checked")
    for line in found:
        print(line)
    if not any((root / layer).is_dir() for layer in ALLOWED):
        print(f"no layer folder under {root}")
        return 1
    print(f"{len(found)} include(s) or call(s) against the layering rule")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
