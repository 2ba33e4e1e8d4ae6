#!/usr/bin/env python3
"""Every #include of the project's own headers follows the layering rule.

usage: layering_check.py SOURCE_DIR     (runs its own self-test first)

The folders depend one way: cli -> fs -> aggregation -> {codecs, remote} -> io
(codecs and remote do not know each other); fs skips no level to remote: what
it needs of remote objects comes through aggregation/read/remote_objects.hpp. CMake's target links allow the same
edges, but one global include path would let a header of a higher layer be
included from a lower one unnoticed; this check reads every include instead.
The project's libraries link one way too: no two of them link each other,
directly or around a longer cycle (the target_link_libraries of every
CMakeLists.txt of the layer folders).

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
import tempfile

ALLOWED = {
    "io": {"io"},
    "codecs": {"io", "codecs"},
    "remote": {"io", "remote"},
    "aggregation": {"io", "codecs", "remote", "aggregation"},
    "fs": {"io", "codecs", "aggregation", "fs"},
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
STD_MUTEX = re.compile(r"\bstd::(?:recursive_|shared_|timed_)?mutex\b(?!\s*>)")
MUTEX_HOMES = {"io/mutex.hpp", GATEWAY + "/netcdf_library.hpp"}


def std_mutex_violations(root):
    for layer in ALLOWED:
        for path in sorted((root / layer).rglob("*.[ch]pp")):
            rel = path.relative_to(root).as_posix()
            if rel in MUTEX_HOMES:
                continue
            if STD_MUTEX.search(code_of(path)):
                yield f"{rel} declares a std::mutex: use ncafs::Mutex (io/mutex.hpp) with NCAFS_GUARDED_BY on its data"


def violations(root):
    for layer, allowed in ALLOWED.items():
        for path in sorted((root / layer).rglob("*.[ch]pp")):
            rel = path.relative_to(root).as_posix()
            for folder in INCLUDE.findall(path.read_text(errors="replace")):
                if folder in ALLOWED and folder not in allowed:
                    yield f"{rel} includes {folder}/: {layer}/ may include only {sorted(allowed)}"


# The project's libraries and whom they link, from the CMakeLists.txt of
# the layer folders (tests/ links them from outside: its programs are leaves).
LIBRARY = re.compile(r"\badd_library\(\s*([A-Za-z_][\w-]*)")
LINKS = re.compile(r"\btarget_link_libraries\(\s*([A-Za-z_][\w-]*)([^)]*)\)")


def link_graph(root):
    """{library: the project's libraries it links}."""
    texts = [re.sub(r"#[^\n]*", " ", p.read_text()) for layer in ALLOWED
             for p in sorted((root / layer).rglob("CMakeLists.txt"))]
    graph = {name: set() for text in texts for name in LIBRARY.findall(text)}
    for text in texts:
        for target, linked in LINKS.findall(text):
            if target in graph:
                graph[target].update(name for name in linked.split() if name in graph and name != target)
    return graph


def link_cycle_violations(root):
    """One line per cycle of target links, found by a depth-first walk."""
    graph = link_graph(root)
    state = {}  # library -> "open" while on the walk's path, "done" after
    path = []

    def walk(library):
        state[library] = "open"
        path.append(library)
        for linked in sorted(graph[library]):
            if state.get(linked) == "open":
                cycle = path[path.index(linked):] + [linked]
                yield f"libraries link in a cycle: {' -> '.join(cycle)} (CMakeLists.txt target_link_libraries)"
            elif linked not in state:
                yield from walk(linked)
        path.pop()
        state[library] = "done"

    for library in sorted(graph):
        if library not in state:
            yield from walk(library)


def run(root):
    found = list(violations(root)) + list(std_mutex_violations(root)) + list(link_cycle_violations(root))
    functions = library_functions()
    if functions:
        found += list(library_violations(root, functions))
    else:
        print("netcdf-c and HDF5 headers not found: the library calls are not checked")
    return found


# A small fake tree with one planted fault per rule the self-test proves can fail.
FAKE = {
    "io/CMakeLists.txt": "add_library(fake_io STATIC a.cpp)\n",
    "codecs/CMakeLists.txt": "add_library(fake_codecs STATIC a.cpp)\n"
                             "target_link_libraries(fake_codecs PUBLIC fake_io fake_vds)\n",
    "codecs/vds/CMakeLists.txt": "add_library(fake_vds STATIC a.cpp)\n"
                                 "# target_link_libraries(fake_io PUBLIC fake_vds): a comment links nothing\n"
                                 "target_link_libraries(fake_vds PUBLIC fake_codecs)\n",
    "codecs/reader.cpp": '#include "aggregation/read/open_aggregation.hpp"\n',
    "fs/mount.cpp": '#include "remote/remote_store.hpp"\n',
    "fs/catalog.cpp": '#include "aggregation/read/remote_objects.hpp"\n',
}
EXPECTED = [
    "libraries link in a cycle: fake_codecs -> fake_vds -> fake_codecs",
    "codecs/reader.cpp includes aggregation/",
    "fs/mount.cpp includes remote/",
]


def self_test():
    """The check reports each planted fault, and nothing else, in the fake tree."""
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        for rel, text in FAKE.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        found = list(violations(root)) + list(link_cycle_violations(root))
    missing = [e for e in EXPECTED if not any(line.startswith(e) for line in found)]
    extra = [line for line in found if not any(line.startswith(e) for e in EXPECTED)]
    for line in missing:
        print(f"self-test: not reported: {line}")
    for line in extra:
        print(f"self-test: reported though not planted: {line}")
    return not missing and not extra


def main():
    if not self_test():
        print("layering_check: the self-test failed, the check itself is broken")
        return 1
    root = pathlib.Path(sys.argv[1])
    found = run(root)
    for line in found:
        print(line)
    if not any((root / layer).is_dir() for layer in ALLOWED):
        print(f"no layer folder under {root}")
        return 1
    print(f"{len(found)} include(s), link(s) or call(s) against the layering rule")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
