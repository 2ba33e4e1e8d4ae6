#!/usr/bin/python3
"""Builds the Debian package in its own Release build directory, checks its
control fields, contents and dependencies, and installs it with apt-get.

usage: deb_build_install.py SOURCE_DIR DEB_BUILD_DIR
       deb_build_install.py --build-only SOURCE_DIR DEB_BUILD_DIR

--build-only configures and compiles the package tree and stops: tests/run.sh
does that once before ctest, so this test then finds the tree up to date
(configure and build are no-ops) and only packs, checks and installs. The
tree is always Release without sanitizers: a .deb never ships ASan binaries.

The ctest fixture ncafs_deb_installed: the mount and service tests run on
what this installs; deb_purge.py removes it afterwards.
"""

import glob
import os
import re
import subprocess

from packaging_common import TestFailure, main, log, run, require_root

EXPECTED_FILES = [
    "/usr/bin/ncafs",
    "/usr/sbin/mount.ncafs",
    "/usr/share/man/man1/ncafs.1.gz",
    "/usr/lib/systemd/system/ncafs@.service",
    "/etc/ncafs/example.conf.example",
    "/usr/share/man/man8/mount.ncafs.8.gz",
    "/usr/share/doc/ncafs/copyright",
    "/usr/share/doc/ncafs/changelog.Debian.gz",
    "/usr/share/doc/ncafs/examples/remote-partitions.conf",
]
HARDENING_COMPILE = ("-D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection -fcf-protection "
                     "-Wformat -Werror=format-security")
HARDENING_LINK = "-Wl,-z,relro -Wl,-z,now"
# lintian tags the package may carry, each explained in docs/install.md (section
# "From the Debian package"); any other tag fails the test.
ACCEPTED_LINTIAN_TAGS = {
    # cpack writes no source package, so there is no debian/copyright in the
    # DEP-5 format to check against, and the tree states no license.
    "copyright-without-copyright-notice",
    # The maintainer scripts call systemctl themselves: debhelper's
    # deb-systemd-invoke has no templates-with-instances form (ncafs@*.service).
    "maintainer-script-calls-systemctl",
    # The changelog of a package that is not uploaded to Debian closes no bug.
    "initial-upload-closes-no-bugs",
    # cpack strips with `strip` and no options, which keeps the compiler's .comment.
    "binary-has-unneeded-section",
    # False positives: two of the program's messages stored overlapping
    # ("...it fail" + "t fail...") read as the words "failt" and "mor".
    "spelling-error-in-binary",
}
# Packages the dependencies must name whatever the linker picked.
REQUIRED_DEPENDS = ["fuse3", "libfuse3-3", "libnetcdf19"]


def build_tree(source, build):
    run(["cmake", "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DNCAFS_BUILD_TESTS=OFF",
         "-DNCAFS_SANITIZE=OFF", "-DCMAKE_INSTALL_PREFIX=/usr",
         # Debian's hardening build flags (dpkg-buildflags with hardening=+all),
         # which lintian checks for: fortified libc calls, stack protection,
         # read-only relocations bound at start.
         f"-DCMAKE_C_FLAGS={HARDENING_COMPILE}", f"-DCMAKE_CXX_FLAGS={HARDENING_COMPILE}",
         f"-DCMAKE_EXE_LINKER_FLAGS={HARDENING_LINK}",
         # cpack then installs what is built below instead of building "all"
         # first: the package holds only ncafs and the packaging files.
         "-DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON",
         # Unity builds: one compiler run per batch of a library's files, so
         # the shared headers are parsed and the templates instantiated once
         # a batch (docs/performance.md, "The test command": CPU time).
         "-DCMAKE_UNITY_BUILD=ON"], timeout=300)
    run(["cmake", "--build", build, "-j2", "--target", "ncafs", "ncafs_man_page"], timeout=1500)


def check_lintian(deb):
    """lintian's verdict, at every level it reports (errors, warnings,
    informational, pedantic): nothing but the tags explained in docs/install.md."""
    result = run(["lintian", "--no-cfg", "--display-info", "--pedantic", "--tag-display-limit", "0", deb],
                 check=False, timeout=300)
    log(result.stdout + result.stderr)
    tags = set()
    for line in result.stdout.splitlines():
        match = re.match(r"^[EWIPX]: ncafs(?: \w+)?: (\S+)", line)
        if match:
            tags.add(match.group(1))
    unexplained = sorted(tags - ACCEPTED_LINTIAN_TAGS)
    if unexplained:
        raise TestFailure(f"lintian {deb}: tags not explained in docs/install.md: {unexplained}\n{result.stdout}")
    log(f"lintian: only explained tags ({sorted(tags) or 'none'})")


def build_package(source, build):
    build_tree(source, build)
    for old in glob.glob(os.path.join(build, "ncafs_*.deb")):
        os.unlink(old)
    run(["cpack", "-G", "DEB"], cwd=build, timeout=600)
    debs = glob.glob(os.path.join(build, "ncafs_*.deb"))
    if len(debs) != 1:
        raise TestFailure(f"cpack -G DEB in {build} made {debs}, expected one ncafs_<version>_<arch>.deb")
    return debs[0]


def control_field(deb, field):
    return run(["dpkg-deb", "-f", deb, field]).stdout.strip()


def check_control(deb, source):
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    version = project_version(source)
    version += "-1"  # Debian revision 1 (packaging/CMakeLists.txt)
    expected_name = f"ncafs_{version}_{arch}.deb"
    if os.path.basename(deb) != expected_name:
        raise TestFailure(f"package file is {os.path.basename(deb)}, expected {expected_name}")
    info = run(["dpkg-deb", "-I", deb]).stdout
    log(info)
    for field in ("Package", "Version", "Architecture", "Maintainer", "Section", "Priority", "Description"):
        if not control_field(deb, field):
            raise TestFailure(f"{deb}: control field {field} is empty")
    if control_field(deb, "Package") != "ncafs" or control_field(deb, "Version") != version:
        raise TestFailure(f"{deb}: Package/Version are not ncafs/{version}")
    description = control_field(deb, "Description")
    if len(description.splitlines()) < 2:
        raise TestFailure(f"{deb}: Description has no extended description:\n{description}")
    conffiles = run(["sh", "-c", f"dpkg-deb --ctrl-tarfile '{deb}' | tar -xOf - ./conffiles"]).stdout.split()
    if "/etc/ncafs/example.conf.example" not in conffiles:
        raise TestFailure(f"{deb}: /etc/ncafs/example.conf.example is not a conffile ({conffiles})")


def project_version(source):
    text = open(os.path.join(source, "CMakeLists.txt")).read()
    match = re.search(r"project\(\s*ncafs\s+VERSION\s+([\d.]+)", text)
    if not match:
        raise TestFailure("cannot find the project version in CMakeLists.txt")
    return match.group(1)


def check_contents(deb):
    listing = run(["dpkg-deb", "-c", deb]).stdout
    paths = {line.split()[5].lstrip(".") for line in listing.splitlines() if len(line.split()) >= 6}
    missing = [p for p in EXPECTED_FILES if p not in paths]
    if missing:
        hint = " (the ncafs program is not in the package: is the target ncafs defined and built?)" \
            if "/usr/bin/ncafs" in missing else ""
        raise TestFailure(f"{deb} lacks {missing}{hint}\ncontents:\n{listing}")


def depends_packages(deb):
    depends = control_field(deb, "Depends")
    names = set()
    for clause in depends.split(","):
        for alternative in clause.split("|"):
            name = alternative.strip().split(" ")[0].split(":")[0]
            if name:
                names.add(name)
    return depends, names


def check_dependencies(deb, workdir):
    """Every shared library the program links directly (readelf NEEDED,
    resolved by ldd, owner found by dpkg -S) belongs to a package named in
    Depends: checked independently of dpkg-shlibdeps."""
    depends, names = depends_packages(deb)
    log(f"Depends: {depends}")
    missing = [p for p in REQUIRED_DEPENDS if p not in names]
    if missing:
        raise TestFailure(f"{deb}: Depends lacks {missing}: {depends}")
    extract = os.path.join(workdir, "extracted")
    run(["rm", "-rf", extract])
    run(["dpkg-deb", "-x", deb, extract])
    binary = os.path.join(extract, "usr/bin/ncafs")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", run(["readelf", "-d", binary]).stdout)
    resolved = {}
    for line in run(["ldd", binary]).stdout.splitlines():
        match = re.match(r"\s*(\S+) => (\S+)", line)
        if match:
            resolved[match.group(1)] = match.group(2)
        if "not found" in line:
            raise TestFailure(f"ldd {binary}: {line.strip()}")
    for soname in needed:
        path = resolved.get(soname)
        if path is None:
            raise TestFailure(f"ldd {binary} does not resolve {soname}")
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = run(["dpkg", "-S", path])
        package = owner.stdout.split(":")[0].strip()
        if package not in names:
            raise TestFailure(f"{binary} needs {soname} ({path}, package {package}) but Depends "
                              f"does not name {package}: {depends}")
        log(f"  {soname:28} -> {package:18} in Depends")


def install(deb):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "ncafs"], capture_output=True, text=True)
    if "installed" in status.stdout and "not-installed" not in status.stdout:
        run(["apt-get", "purge", "-y", "-q", "ncafs"], env=env, timeout=300)  # a fresh install, not an upgrade
    run(["apt-get", "install", "-y", "-q", "--no-install-recommends", os.path.abspath(deb)], env=env, timeout=600)
    status = run(["dpkg-query", "-W", "-f=${Status} ${Version}", "ncafs"]).stdout
    if not status.startswith("install ok installed"):
        raise TestFailure(f"after apt-get install, dpkg says: {status}")
    for path in EXPECTED_FILES:
        if not os.path.exists(path):
            raise TestFailure(f"installed package lacks {path}")
    version = run(["/usr/bin/ncafs", "--version"]).stdout.strip()
    log(f"installed: {status}; /usr/bin/ncafs --version: {version}")
    helper = os.path.realpath("/sbin/mount.ncafs")
    if not os.access(helper, os.X_OK):
        raise TestFailure("mount(8) looks in /sbin: /sbin/mount.ncafs is not an executable")
    # The helper must call the installed program by its absolute path.
    if "/usr/bin/ncafs" not in open("/usr/sbin/mount.ncafs").read():
        raise TestFailure("/usr/sbin/mount.ncafs does not run /usr/bin/ncafs")


def check(argv):
    if argv and argv[0] == "--build-only":
        build_tree(*argv[1:])
        return
    source, build = argv
    require_root()
    deb = build_package(source, build)
    check_control(deb, source)
    check_contents(deb)
    check_dependencies(deb, build)
    check_lintian(deb)
    install(deb)


main(check)
