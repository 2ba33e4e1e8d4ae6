#!/usr/bin/python3
"""Every Python module the tests import and every program they run comes
from a Debian package that packaging/install-deps.sh installs, directly or
as a dependency: a machine where something was installed by hand (pip, a
package installed once and forgotten) fails here the way a fresh machine
would fail later, in the test that needs it.

usage: check_dependencies.py SOURCE_DIR
       check_dependencies.py --self-test SOURCE_DIR

Modules: every `import` of the .py files under tests/ (parsed with ast),
less the tests' own modules; found with this interpreter (/usr/bin/python3,
the one the tests run with) and mapped to their package with `dpkg -S`.
Programs: the first word of the argument lists the tests pass to
subprocess (and to their helpers named run, timed...), the names they look
up with shutil.which, and the commands the C++ tests give std::system;
found on PATH, mapped with `dpkg -S`. The packages install-deps.sh names
are closed over the Depends and Pre-Depends of the installed packages
(dpkg's status: no network). --self-test runs the check against an
install list holding python3 alone and expects it to fail, naming a
module and a program with their packages.
"""

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict, deque

from packaging_common import TestFailure, log, main

# Functions the tests run programs through: subprocess's and the helpers'.
RUNNERS = {"run", "Popen", "check_output", "check_call", "call", "run_timed", "timed"}
# Runners whose programs run inside the Debian root of nspawn_root.py and nspawn_systemd.py, not here.
RUNNERS_ELSEWHERE = ("self.c.", "self.run")
# Programs of this project: built here, not installed by a package.
OWN_PROGRAMS = {"ncafs", "mount.ncafs"}
# Imports no `import` statement shows: protoc's generated *_pb2 modules
# (tests/ncstream/decode_ncstream.py) import google.protobuf.
INDIRECT_MODULES = {"google.protobuf": "tests/ncstream (protoc's generated *_pb2 modules)"}
# The Debian package to name when a module or program is not from any.
PACKAGE_HINTS = {"netCDF4": "python3-netcdf4", "google.protobuf": "python3-protobuf", "cftime": "python3-cftime",
                 "ncdump": "netcdf-bin", "ncgen": "netcdf-bin", "ncks": "nco", "ncrcat": "nco", "ncra": "nco",
                 "ncatted": "nco", "cdo": "cdo", "nginx": "nginx-light", "protoc": "protobuf-compiler"}


def install_list(script):
    """The packages install-deps.sh installs, and the programs it accepts
    from anywhere (`command -v PROGRAM >/dev/null || packages+=(...)`)."""
    text = "\n".join(line.split("#", 1)[0] for line in open(script).read().splitlines())
    packages, anywhere = [], set()
    for block in re.findall(r"packages\+?=\(([^)]*)\)", text):
        packages += block.split()
    for program in re.findall(r"command -v (\S+) >/dev/null \|\| packages\+=", text):
        anywhere.add(program)
    if not packages:
        raise TestFailure(f"{script}: no packages=( ... ) list found")
    return packages, anywhere


def installed_graph():
    """Installed packages: name -> the names its Depends/Pre-Depends clauses
    allow (every alternative); virtual name -> the packages providing it; and
    the packages every Debian system has (Essential: yes, Priority: required)."""
    fmt = "${Package}\t${Status}\t${Depends}, ${Pre-Depends}\t${Provides}\t${Essential} ${Priority}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True, check=True).stdout
    depends, providers, base = {}, defaultdict(set), set()
    for line in out.splitlines():
        name, status, deps, provides, kind = (line.split("\t") + ["", "", "", ""])[:5]
        if not status.endswith(" installed"):
            continue
        if kind.startswith("yes") or kind.endswith(" required"):
            base.add(name)
        depends[name] = {package_name(alt) for clause in deps.split(",") for alt in clause.split("|") if alt.strip()}
        for virtual in provides.split(","):
            if virtual.strip():
                providers[package_name(virtual)].add(name)
    return depends, providers, base


def package_name(relation):
    """"python3-numpy:any (>= 1:1.22)" -> "python3-numpy"."""
    return relation.strip().split(" ")[0].split(":")[0]


def closure(roots, depends, providers):
    """Installed packages reached from roots through Depends and Pre-Depends."""
    seen, queue = set(), deque(roots)
    while queue:
        name = queue.popleft()
        for package in ({name} if name in depends else set()) | providers.get(name, set()):
            if package not in seen:
                seen.add(package)
                queue.extend(depends[package])
    return seen


def python_files(tests_dir):
    for folder, dirs, files in os.walk(tests_dir):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        yield from (os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))


def local_modules(tests_dir):
    """The tests' own modules: every .py file's stem and every folder name."""
    names = set()
    for folder, dirs, files in os.walk(tests_dir):
        names.update(dirs)
        names.update(f[:-3] for f in files if f.endswith(".py"))
    return names


def imported_modules(path):
    """Top-level module names of every absolute import in the file (nested ones too)."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def run_programs(path):
    """Programs the file runs: the literal first word of argument lists given
    to a runner, and names looked up with shutil.which."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        function, first = ast.unparse(node.func), node.args[0]
        if function.endswith("which") and isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.add(first.value)
        elif (function.split(".")[-1] in RUNNERS and not function.startswith(RUNNERS_ELSEWHERE)
              and isinstance(first, (ast.List, ast.Tuple)) and first.elts
              and isinstance(first.elts[0], ast.Constant) and isinstance(first.elts[0].value, str)):
            found.add(first.elts[0].value)
    return found


def system_programs(tests_dir):
    """Programs the C++ tests give std::system or popen: a string literal's
    first word that names a program on PATH, in a file that calls them."""
    found = defaultdict(set)
    for folder, _, files in os.walk(tests_dir):
        for name in (f for f in files if f.endswith(".cpp")):
            path = os.path.join(folder, name)
            text = open(path, encoding="utf-8", errors="replace").read()
            if not re.search(r"\b(system|popen)\s*\(", text):
                continue
            for word in re.findall(r'"([a-z][\w.+-]*) ', text):
                if shutil.which(word):
                    found[word].add(path)
    return found


def usage(tests_dir):
    """{module: files importing it}, {program: files running it}."""
    own = local_modules(tests_dir)
    modules, programs = defaultdict(set), system_programs(tests_dir)
    for path in python_files(tests_dir):
        for module in imported_modules(path) - own:
            modules[module].add(path)
        for program in run_programs(path):
            programs[program].add(path)
    for module, where in INDIRECT_MODULES.items():
        modules[module].add(where)
    for program in OWN_PROGRAMS | {"/usr/bin/" + p for p in OWN_PROGRAMS} | {"/usr/sbin/" + p for p in OWN_PROGRAMS}:
        programs.pop(program, None)
    return modules, programs


def module_path(module):
    """The file a module is loaded from; "" for one built into the
    interpreter; None when it is not installed."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin in (None, "namespace") and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return "" if spec.origin in ("built-in", "frozen") else spec.origin


def path_variants(path):
    """The path and its realpath, also spelled with and without /usr
    (dpkg records /bin/x or /usr/bin/x, whichever the package ships)."""
    variants = []
    for p in (path, os.path.realpath(path)):
        variants.append(p)
        for top in ("/bin/", "/sbin/", "/lib/"):
            if p.startswith(top):
                variants.append("/usr" + p)
            elif p.startswith("/usr" + top):
                variants.append(p[4:])
    return list(dict.fromkeys(variants))


def owners(paths):
    """path -> the installed packages dpkg says ship it (one dpkg -S for all)."""
    if not paths:
        return {}
    out = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True).stdout
    found = defaultdict(set)
    for line in out.splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        packages, path = line.split(": ", 1)
        found[path].update(package_name(p) for p in packages.split(","))
    return found


def package_hint(kind, name):
    """The Debian package to name for a module or program found in none."""
    if name in PACKAGE_HINTS:
        return PACKAGE_HINTS[name]
    return "python3-" + name.lower() if kind == "module" else "the Debian package that ships it"


def where_text(files, source_dir):
    shown = sorted(os.path.relpath(f, source_dir) if os.path.isabs(f) else f for f in files)
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def judge(kind, name, path, shipped_by, installed, anywhere):
    """The problem with one module or program, or None."""
    if path is None:
        return f"{kind} {name} is not installed here (Debian package: {package_hint(kind, name)})"
    if path == "":
        return None
    packages = set().union(*(shipped_by.get(p, set()) for p in path_variants(path)))
    if not packages:
        if name in anywhere:
            return None
        return (f"{kind} {name} comes from {path}, which no Debian package installs (installed by hand?); "
                f"packaging/install-deps.sh should install {package_hint(kind, name)}")
    if packages & installed:
        return None
    return (f"{kind} {name} comes from package {' or '.join(sorted(packages))} ({path}), which "
            f"packaging/install-deps.sh does not install, directly or as a dependency")


def problems(source_dir, install_script):
    packages, anywhere = install_list(install_script)
    depends, providers, base = installed_graph()
    installed = closure(packages + sorted(base), depends, providers)
    log(f"{install_script}: {len(packages)} packages named; with the {len(base)} essential and required ones "
        f"and their dependencies, {len(installed)} installed")
    modules, programs = usage(os.path.join(source_dir, "tests"))
    paths = {("module", m): module_path(m) for m in modules}
    paths.update({("program", p): shutil.which(p) for p in programs})
    shipped_by = owners(sorted({v for p in paths.values() if p for v in path_variants(p)}))
    found = []
    for (kind, name), path in sorted(paths.items()):
        files = (modules if kind == "module" else programs)[name]
        problem = judge(kind, name, path, shipped_by, installed, anywhere)
        log(f"  {kind} {name}: {'not found' if path is None else path or 'built in'}: {problem and 'MISSING' or 'ok'}")
        if problem:
            found.append(f"{problem} (used by {where_text(files, source_dir)})")
    log(f"{len(modules)} modules and {len(programs)} programs checked")
    return found


def check(argv):
    if argv and argv[0] == "--self-test":
        return self_test(argv[1])
    (source_dir,) = argv
    found = problems(source_dir, os.path.join(source_dir, "packaging/install-deps.sh"))
    if found:
        raise TestFailure("what the tests use is not installed by packaging/install-deps.sh:\n  " +
                          "\n  ".join(found))


def self_test(source_dir):
    """An install list holding python3 alone: numpy (python3-numpy) and
    ncdump (netcdf-bin) must then be reported missing."""
    with tempfile.TemporaryDirectory() as folder:
        fake = os.path.join(folder, "install-deps.sh")
        with open(fake, "w") as f:
            f.write("packages=(\n  python3  # nothing else\n)\n")
        found = "\n".join(problems(source_dir, fake))
    for expected in ("module numpy comes from package python3-numpy", "program ncdump comes from package netcdf-bin"):
        if expected not in found:
            raise TestFailure(f"with python3 alone installed, expected a report containing '{expected}', got:\n{found}")
    log("an install list of python3 alone is reported as lacking numpy and ncdump, with their packages")


if __name__ == "__main__":
    main(check)
