"""Helpers shared by the packaging test drivers (run with /usr/bin/python3).

Every check raises TestFailure with a message that says what was expected;
main() turns it into exit status 1, so ctest reports the reason.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

UNIT_NAME = "ncafs@.service"
UNIT_DIRS = ["/usr/lib/systemd/system", "/lib/systemd/system", "/usr/local/lib/systemd/system"]

# Values of the two partitions of the test aggregation; the master array is
# their concatenation along time.
PART1 = [1.5, 2.5]
PART2 = [3.5, 4.5, 5.5]


class TestFailure(Exception):
    pass


def main(function):
    """Runs FUNCTION(argv) and maps the outcome to an exit status."""
    try:
        function(sys.argv[1:])
    except TestFailure as failure:
        print(f"FAIL: {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
    print("PASS", flush=True)


def log(message):
    print(message, flush=True)


def run(args, check=True, timeout=120, **kwargs):
    """Runs ARGS, returns the CompletedProcess (text); raises TestFailure on a
    non-zero status when CHECK, with the command's output in the message."""
    log("$ " + " ".join(shlex.quote(str(a)) for a in args))
    try:
        result = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                                timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"{args[0]} did not finish within {timeout} s: {e}") from None
    except FileNotFoundError as e:
        raise TestFailure(f"cannot run {args[0]}: {e}") from None
    if check and result.returncode != 0:
        raise TestFailure(f"{' '.join(map(str, args))} exited with {result.returncode}\n"
                          f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def require_root():
    if os.geteuid() != 0:
        raise TestFailure("this test installs a package and mounts file systems: run it as root "
                          "(tests/run.sh does)")


def require_file(path, what):
    if not os.path.exists(path):
        raise TestFailure(f"{what} is missing: {path}")


# --- mounts -----------------------------------------------------------------

def _unescape_mountinfo(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_entry(mountpoint):
    """The mountinfo line of MOUNTPOINT as (fstype, source, options), or None."""
    mountpoint = os.path.realpath(mountpoint)
    found = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if _unescape_mountinfo(fields[4]) == mountpoint:
                fstype, source, super_options = right.split(" ", 2)
                found = (fstype, _unescape_mountinfo(source), super_options.strip())
    return found  # the last one is the one on top


def wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise TestFailure(f"timed out after {timeout} s waiting for {what}")


def force_unmount(mountpoint):
    """Cleanup after a failure: detach whatever is mounted there."""
    if mount_entry(mountpoint) is not None:
        subprocess.run(["umount", "-l", mountpoint], capture_output=True)
    if mount_entry(mountpoint) is not None:
        subprocess.run(["fusermount3", "-u", "-z", mountpoint], capture_output=True)


def check_ncafs_mount(mountpoint, source):
    """The mount is a FUSE file system of type fuse.ncafs, answering, and its
    virtual file holds the aggregation read by ncdump (an independent reader)."""
    entry = mount_entry(mountpoint)
    if entry is None:
        raise TestFailure(f"nothing is mounted at {mountpoint}")
    if entry[0] != "fuse.ncafs":
        raise TestFailure(f"{mountpoint} has type {entry[0]}, expected fuse.ncafs")
    stat_in_subprocess(mountpoint)
    listing = run(["ls", "-1", mountpoint], timeout=60).stdout.split()
    if "agg.nc" not in listing:
        raise TestFailure(f"agg.nc (the aggregation agg.nca) is not listed in {mountpoint}: {listing}")
    check_virtual_file(os.path.join(mountpoint, "agg.nc"))


def stat_in_subprocess(mountpoint):
    """stat through the mount in a child, so that a daemon that does not
    answer makes the test fail instead of hang."""
    result = run(["stat", "-f", "-c", "%T", mountpoint], timeout=60)
    kind = result.stdout.strip()
    if "fuse" not in kind:
        raise TestFailure(f"stat -f {mountpoint} says {kind!r}, expected a FUSE file system")


def check_virtual_file(path, ncdump=("ncdump",)):
    """ncdump PATH (the command NCDUMP, e.g. one run inside a container) shows
    the master array of the test aggregation."""
    dump = run([*ncdump, path], timeout=60).stdout
    if not re.search(r"float tas\(time\)", dump):
        raise TestFailure(f"ncdump {path}: expected the master array 'float tas(time)'; got:\n{dump}")
    match = re.search(r"\btas\s*=\s*([^;]*);", dump.split("data:", 1)[-1])
    if match is None:
        raise TestFailure(f"ncdump {path}: no data of tas; got:\n{dump}")
    values = [float(v) for v in match.group(1).replace("\n", " ").split(",")]
    if values != PART1 + PART2:
        raise TestFailure(f"ncdump {path}: tas = {values}, expected {PART1 + PART2}")
    log(f"ncdump {path}: tas = {values} as expected")


# --- test data ----------------------------------------------------------------

def make_aggregation(directory, partitions_at=None, name="agg", netcdf4_part2=False):
    """Writes two partition files (classic; part2 netCDF-4 with NETCDF4_PART2,
    so that the installed binary reads one through its helper processes) and
    the NCA file NAME.nca that joins them along time, all with ncgen. The NCA
    file names the partitions as PARTITIONS_AT/part1.nc (default: DIRECTORY;
    a container path or a URL). Returns DIRECTORY."""
    for part, values in (("part1", PART1), ("part2", PART2)):
        cdl = (f"netcdf {part} {{\ndimensions:\n  time = {len(values)} ;\nvariables:\n"
               f"  float tas(time) ;\n    tas:units = \"K\" ;\ndata:\n"
               f"  tas = {', '.join(map(str, values))} ;\n}}\n")
        kind = "nc4" if netcdf4_part2 and part == "part2" else "nc3"
        write_and_generate(directory, part, cdl, kind=kind)
    partitions_at = partitions_at or directory
    p1 = f"{partitions_at}/part1.nc"
    p2 = f"{partitions_at}/part2.nc"
    n1, n2 = len(PART1), len(PART2)
    partitions = (
        f'{{"index": [0], "location": [[0, {n1}]], "format": "netCDF", '
        f'"data": {{"file": "{p1}", "ncvar": "tas", "shape": [{n1}]}}}}, '
        f'{{"index": [1], "location": [[{n1}, {n1 + n2}]], "format": "netCDF", '
        f'"data": {{"file": "{p2}", "ncvar": "tas", "shape": [{n2}]}}}}')
    array = f'{{"pmshape": [2], "pmdimensions": ["time"], "Partitions": [{partitions}]}}'
    cdl_string = array.replace("\\", "\\\\").replace('"', '\\"')
    cdl = (f"netcdf {name} {{\ndimensions:\n  time = 5 ;\nvariables:\n  float tas ;\n"
           "    tas:units = \"K\" ;\n    tas:cf_role = \"nca_variable\" ;\n"
           "    tas:nca_dimensions = \"time\" ;\n"
           f"    tas:nca_array = \"{cdl_string}\" ;\n\n"
           "// global attributes:\n  :Conventions = \"CF-1.5 NCA\" ;\n}\n")
    write_and_generate(directory, name, cdl, suffix=".nca")
    return directory


def write_and_generate(directory, name, cdl, suffix=".nc", kind="nc3"):
    cdl_path = os.path.join(directory, name + ".cdl")
    with open(cdl_path, "w") as f:
        f.write(cdl)
    run(["ncgen", "-k", kind, "-o", os.path.join(directory, name + suffix), cdl_path])
    os.unlink(cdl_path)  # keep only data files in the mounted tree


def temporary_tree(prefix):
    """A fresh directory with source/ (holding the aggregation) and mnt/."""
    root = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(root, 0o755)
    source = os.path.join(root, "source")
    mountpoint = os.path.join(root, "mnt")
    os.mkdir(source)
    os.mkdir(mountpoint)
    make_aggregation(source, netcdf4_part2=True)
    return root, source, mountpoint


# --- the installed unit ----------------------------------------------------------

def installed_unit_path():
    for d in UNIT_DIRS:
        path = os.path.join(d, UNIT_NAME)
        if os.path.exists(path):
            return path
    raise TestFailure(f"{UNIT_NAME} is not installed in any of {UNIT_DIRS}")


def read_unit(path):
    """[(section, key, value)] of a unit file (continuation lines joined)."""
    entries = []
    section = None
    pending = ""
    with open(path) as f:
        for raw in f:
            line = pending + raw.rstrip("\n")
            pending = ""
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.startswith("[") and stripped.endswith("]"):
                section = stripped[1:-1]
                continue
            key, _, value = stripped.partition("=")
            entries.append((section, key.strip(), value.strip()))
    return entries


def unit_values(entries, key, section="Service"):
    return [v for s, k, v in entries if s == section and k == key]


def read_environment_file(path):
    """KEY=VALUE lines as systemd's EnvironmentFile= reads them (simple form:
    comments, optional quotes)."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            key, _, value = line.partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            env[key.strip()] = value
    return env


def expand_specifiers(text, instance):
    return text.replace("%%", "\0").replace("%i", instance).replace("%I", instance).replace("\0", "%")


def expand_command_line(line, env):
    """ExecStart= as systemd runs it: ${VAR} is one word, $VAR splits on
    whitespace; the leading -@:+! flags are dropped."""
    line = line.lstrip("-@:+!")
    words = []
    for word in shlex.split(line):
        whole = re.fullmatch(r"\$\{(\w+)\}", word)
        split = re.fullmatch(r"\$(\w+)", word)
        if whole:
            words.append(env.get(whole.group(1), ""))
        elif split:
            words.extend(env.get(split.group(1), "").split())
        else:
            words.append(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), word))
    return words
