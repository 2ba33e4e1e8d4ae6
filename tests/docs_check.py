#!/usr/bin/env python3
"""Documents name only what exists, and every measured figure comes with its command.

usage: docs_check.py SOURCE_DIR     (runs its own self-test first)

Read: README.md, docs/**/*.md, tests/README.md, the READMEs beside the code,
and the comments of the source files. Checked (the rules are in docs/testing.md):
  paths    every repository path or file name (fs/catalog.cpp, name.hpp,
           tests/bench/x.py, links), in documents and comments, exists;
  symbols  every code name in backticks (Catalog::resolve, kViewFormats,
           NCAFS_TEST_*) and after "see" in a comment occurs in a source
           file, in the file named beside it ("`Name` (path)") when there is
           one; every ctest name (e2e_*, security_cache) is registered;
  tracker  no comment points at a numbered issue of a tracker outside the tree;
  figures  a measured figure (0.26 s, 948 MiB, ratio 1.9-2.0) stands in a
           section that shows the command measuring it.
"""
import fnmatch
import os
import pathlib
import re
import sys
import tempfile

# Top-level folders of the tree: a path starting with one of them must exist as written.
TOP = ("aggregation", "cli", "codecs", "docs", "fs", "io", "packaging", "remote", "tests")
CODE_SUFFIXES = {".cpp", ".hpp", ".h", ".c", ".py", ".sh", ".cmake"}
SOURCE_NAMES = CODE_SUFFIXES | {"CMakeLists.txt"}
# Names that belong to other projects: checked by nobody here. Prefixes, not words.
EXTERNAL_PREFIXES = (
    "nc_", "NC_", "ncmpi_",          # netcdf-c
    "H5", "h5",                      # HDF5, h5py
    "fuse_", "FUSE_",                # libfuse
    "std::", "posix_", "pthread_",   # C/C++ libraries
    "O_", "AT_", "RLIMIT_", "PR_", "SECCOMP_", "CAP_", "MS_", "ST_", "SYS_", "RESOLVE_",
    "CLONE_", "FAN_", "IN_", "SPLICE_", "POSIX_",  # system call flags
    "np.", "numpy", "xr.", "os.", "sys.", "subprocess",  # Python / numpy APIs
    "CMAKE_", "ASAN_", "UBSAN_", "LSAN_",  # tools' own switches
    "Z_", "libdeflate_", "ZSTD_", "BLOSC_", "blosc_",  # codec libraries
    "curl_", "CURL", "ssl_", "SSL_", "XDG_", "HOME", "PATH",
    "NC3_", "NcStream",              # netcdf-c internals, netcdf-java classes
    "VolumeData", "DataBlock", "Dimensions_", "Get",  # OpenVDS (our code has no Get* names)
    "AF_", "FOPEN_", "io_uring",     # sockets, the kernel's FUSE and io_uring interfaces
    "_",                             # reserved identifiers: compilers' and libraries'
)
# A sentence or table row that names the owner of a name makes it external
# ("the kernel's `finish_task_switch`", "netcdf-java's `NcStreamIosp`", "the external `notes.md`").
OWNERS = re.compile(r"\b(?:kernel|Landlock|libfuse|libstdc\+\+|netcdf-c|netcdf-java|OpenVDS|HDF5|perf|"
                    r"external|sysfs|bdi|glibc|liburing)\b")
# Placeholders in names (`NAME_lodN`, `CATEGORY_NAME`, `BrickSize_N`) stand for many names, none checked.
PLACEHOLDER = re.compile(r"NAME|CATEGORY|AXIS|(?<=[a-z_])N\b|_N_")
GTEST = re.compile(r"^[A-Z]\w*\.[A-Z]\w*$")  # a googletest name: Suite.Test
IDENT = re.compile(r"^~?[A-Za-z_]\w*(::~?[A-Za-z_]\w*)*(\(\))?$")
GLOB_ENV = re.compile(r"^[A-Z][A-Z0-9_]*_\*$")
PATH = re.compile(
    r"(?<![\w./$~<{@-])((?:[\w.*@-]+/)*[\w*-][\w.*@-]*\.(?:cpp|hpp|h|c|py|sh|md|cmake)"
    r"|(?:%s)/[\w./*@-]*[\w*/])(?![\w/(])" % "|".join(TOP))
# Format notes kept outside the repository (the project's specification folder), cited by section.
EXTERNAL_DOCUMENTS = {"openvds-notes.md", "openvds-storage-format.txt"}
# "`Name` (path)" or "`Name::member` (path, ...)": the name is in that file or its .hpp/.cpp twin.
PLACED = re.compile(r"`([^`\s]+)`\s*\(((?:[\w-]+/)*[\w-]+\.(?:hpp|cpp|py|sh))[,;:)\s]")
SEE = re.compile(r"\bsee\s+(?:also\s+)?(?:the\s+)?`?([\w./:#*~-]+(?:\(\))?)")
TRACKER = re.compile(r"\b[Ii]ssue\s+(?:#?\d+|\")"
                     r"|\bitems?\s+\d+[a-z]?\b(?!\s*(?:of|in)\s+(?:the\s+)?(?:profile|spec))")

NUM = r"\d[\d,]*(?:\.\d+)?"
UNIT = r"(?:ns|µs|us|ms|s|min|B|KB|kB|KiB|MB|MiB|GB|GiB|TB|TiB|B/s|MB/s|MiB/s|GB/s|GiB/s|%|×|times)"
FIGURE = re.compile(
    rf"(?<![\w.])(?:{NUM}(?:\s*(?:-|–|to)\s*{NUM})?\s?{UNIT}(?![\w/])|\bratios?\s+(?:of\s+)?{NUM})")
MEASURED = re.compile(
    r"measured|medians?\b|benchmark|peak RSS|(?:faster|slower) than|times (?:faster|slower)|throughput|"
    r"wall time|CPU time|"
    r"\btook\b|\btakes?\s+(?:about\s+)?\d|"
    rf"\bcosts?\s+(?:about\s+|some\s+|up to\s+)?{NUM}\s?{UNIT}(?!\w)|"
    r"per second|best of|\bratio", re.I)
COMMAND = re.compile(
    r"tests/bench/|^(?:sudo\s+)?(?:\w+=\S+\s+)*(?:python3\s|\./|build/|\$BIN|ncafs\s|ctest\s|strace\s|perf\s|"
    r"/usr/bin/time\s|time\s|hyperfine\s|cmake\s)")
# What measures, for a chapter: a benchmark, a test run or a measuring tool (a command in the
# figure's own paragraph or row may be any command, `ncafs inspect` included).
MEASURING = re.compile(r"tests/bench/|\bpython3\s+tests/|tests/run\.sh|\.ci/run|_bench\b|_fuzz\b|"
                       r"(?:^|[\s;|&(])(?:ctest|strace|perf|time|/usr/bin/time|hyperfine)\s", re.M)
SHELL_BLOCKS = {"", "sh", "bash", "shell", "console"}


class Tree:
    """The files of the tree, the words of its sources and its ctest names."""

    def __init__(self, root, exclude=()):
        self.root = root
        self.files = set()
        words = set()
        self.ctest = set()
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not (d.startswith("build") or d.startswith("."))]
            for name in filenames:
                rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                self.files.add(rel)
                if not (name in SOURCE_NAMES or pathlib.Path(name).suffix in SOURCE_NAMES):
                    continue
                text = (root / rel).read_text(errors="replace")
                if rel in exclude:  # this script: its own names count, its fake tree's do not
                    words.update(re.findall(r"(?m)^(?:def |class )?([A-Za-z_]\w*)\b", text))
                    continue
                words.update(re.findall(r"[A-Za-z_]\w*", without_comments(text, pathlib.Path(name).suffix)))
                if name == "CMakeLists.txt":
                    self.ctest.update(ctest_names(text))
        self.words = words
        self.dirs = {str(pathlib.PurePosixPath(f).parent) for f in self.files}
        self.dirs = {p for d in self.dirs for p in parents(d)}
        self.basenames = {pathlib.PurePosixPath(f).name for f in self.files}

    def has_path(self, token, base):
        token = token.split("#")[0].rstrip("/").removeprefix("./")
        if not token or token in EXTERNAL_DOCUMENTS or PLACEHOLDER.search(token):
            return True
        if token.endswith(".pb.h"):  # generated by protoc into the build tree from NAME.proto
            return pathlib.PurePosixPath(token).name.removesuffix(".pb.h") + ".proto" in self.basenames
        candidates = {token, os.path.normpath(os.path.join(base, token)).replace(os.sep, "/")}
        if not pathlib.PurePosixPath(token).suffix:  # a unit named by its stem: fs/catalog
            candidates |= {c + ext for c in set(candidates) for ext in (".hpp", ".cpp", ".py")}
        candidates |= {c + ".in" for c in set(candidates)}  # configured by CMake from NAME.in
        known = self.files | self.dirs
        if "*" in token:
            return any(fnmatch.filter(known, c) for c in candidates)
        if candidates & known:
            return True
        if token.split("/")[0] in TOP:
            return False
        if "/" not in token:
            return token in self.basenames
        return any(f.endswith("/" + token) for f in known)

    def file_of(self, token, base):
        """The tree path a written path names, if exactly known."""
        for c in (token, os.path.normpath(os.path.join(base, token)).replace(os.sep, "/")):
            if c in self.files:
                return c
        matches = [f for f in self.files if f.endswith("/" + token)]
        return matches[0] if len(matches) == 1 else None

    def defines(self, path, symbol):
        """The file or its .hpp/.cpp twin holds the name; a `Class::member` needs Class defined there."""
        parts = [p for p in re.split(r"::|\.", symbol.removesuffix("()").lstrip("~")) if p]
        stem = str(pathlib.PurePosixPath(path).with_suffix(""))
        text = "\n".join((self.root / twin).read_text(errors="replace")
                         for twin in sorted({path, stem + ".hpp", stem + ".cpp"}) if twin in self.files)
        if not re.search(r"(?<![\w~])%s(?!\w)" % re.escape(parts[-1]), text):
            return False
        if GTEST.match(symbol):
            return re.search(r"\bTEST\w*\(\s*%s\s*,\s*%s\s*\)" % tuple(map(re.escape, parts)), text) is not None
        if len(parts) > 1 and parts[-2][:1].isupper():
            owner = re.escape(parts[-2])
            return re.search(r"(?m)\b(?:class|struct)\s+%s\b[^;{]*\{|^[\w:<>,*& ]*\b%s::%s\s*\("
                             % (owner, owner, re.escape(parts[-1])), text) is not None
        return True

    def has_symbol(self, name):
        parts = [p for p in re.split(r"::|\.", name.removesuffix("()").lstrip("~")) if p]
        if GLOB_ENV.match(name):
            prefix = name[:-1]
            return any(w.startswith(prefix) for w in self.words)
        return all(p.lstrip("~") in self.words for p in (parts[0], parts[-1]))

    def has_ctest(self, name):
        return any(fnmatch.fnmatchcase(t, name) or fnmatch.fnmatchcase(name, t) for t in self.ctest)


def without_comments(text, suffix):
    """Code without its comments, so that a comment never vouches for itself."""
    if suffix in {".cpp", ".hpp", ".h", ".c"}:
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        return re.sub(r"(?<![:\\])//.*", "", text)
    return re.sub(r"(?m)(^|\s)#.*$", r"\1", text)


def parents(d):
    parts = d.split("/")
    return {"/".join(parts[:i]) for i in range(1, len(parts) + 1)} - {"."}


def ctest_names(text):
    """Names registered by add_test and the project's helpers; ${...} becomes *."""
    text = re.sub(r"#.*", "", text)
    names = set(re.findall(r"add_test\s*\(\s*NAME\s+([^\s)]+)", text))
    names |= set(re.findall(r"ncafs_add_(?:gtest|cdf_test)\s*\(\s*([^\s)]+)", text))
    for prefix, args in re.findall(r"ncafs_add_(?:release_)?py_cases\s*\(\s*(\S+)\s+\S+\s+\S+\s+([^)]*)\)", text):
        names |= {prefix + case for case in args.split()}
    names = {re.sub(r"\$\{[^}]*\}", "*", n) for n in names}
    return {n for n in names if not n.startswith("*")}  # the helpers' own ${name}: no name of its own


def looks_like_code(span):
    """A backticked name that is code: qualified, snake_case, CamelCase or kConstant."""
    if GLOB_ENV.match(span) or GTEST.match(span):
        return True
    if not IDENT.match(span):
        return False
    bare = span.removesuffix("()")
    return ("::" in bare or "_" in bare.strip("_") or span.endswith("()")
            or re.match(r"^k[A-Z]", bare) is not None
            or re.match(r"^[A-Z][a-z0-9]+[A-Z]", bare) is not None)


def is_external(name):
    return name.startswith(EXTERNAL_PREFIXES)


def ctest_prefixes(tree):
    """The first words of the ctest names (e2e_, security_, packaging.)."""
    return {t.split("_")[0].split(".")[0] + ("_" if "_" in t else ".")
            for t in tree.ctest if "*" not in t.split("_")[0]}


def check_symbol(tree, span, prefixes):
    """None when the name is known, else the reason."""
    if is_external(span) or PLACEHOLDER.search(span):
        return None
    if span.startswith(tuple(prefixes)) and tree.has_ctest(span):
        return None
    if "*" in span and not GLOB_ENV.match(span):
        return None if tree.has_ctest(span) else f"no ctest registered as {span}"
    if tree.has_symbol(span):
        return None
    return f"`{span}` is neither in a source file nor a registered ctest"


# ---------------------------------------------------------------- markdown

def markdown_blocks(text):
    """(line number, kind, text) with kind 'code' (fenced, text = info + body), 'heading' or 'line'."""
    fence = None
    body = []
    for number, line in enumerate(text.splitlines(), 1):
        if fence is not None:
            if line.strip().startswith(fence):
                yield start, "code", info + "\n" + "\n".join(body)
                fence = None
            else:
                body.append(line)
            continue
        m = re.match(r"^\s*(```+|~~~+)\s*(\S*)", line)
        if m:
            fence, info, body, start = m.group(1), m.group(2), [], number
        elif re.match(r"^#{1,6}\s", line):
            yield number, "heading", line
        else:
            yield number, "line", line


def slug(heading):
    text = heading.lstrip("#").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class Section:
    def __init__(self, level, title, line):
        self.level, self.title, self.line = level, title, line
        self.has_command = False
        self.chapter_command = False  # set for a chapter (level <= 2) with a command anywhere in it
        self.parent = None


def sections_of(text):
    """The sections of a document (the text before the first heading is one)."""
    top = Section(0, "", 1)
    out, stack = [top], [top]
    for number, kind, line in markdown_blocks(text):
        if kind == "heading":
            level = len(line) - len(line.lstrip("#"))
            while stack[-1].level >= level:
                stack.pop()
            section = Section(level, line, number)
            section.parent = stack[-1]
            stack.append(section)
            out.append(section)
        elif kind == "code":
            info, _, body = line.partition("\n")
            if info in SHELL_BLOCKS and MEASURING.search(body):
                stack[-1].has_command = True
        elif any(COMMAND.search(s) and MEASURING.search(s) for s in re.findall(r"`([^`]+)`", line)):
            stack[-1].has_command = True
    for section in out:
        if section.has_command:
            chapter(section).chapter_command = True
    return out


def paragraphs(text):
    """(first line, last line, text) of each paragraph; a table row is a paragraph."""
    para, first, last = [], None, None
    for number, kind, line in markdown_blocks(text):
        if para and kind == "line" and re.match(r"^\s*(?:[-*+]|\d+\.)\s", line):
            yield first, last, " ".join(para)  # a list item starts a paragraph of its own
            para = []
        if kind == "line" and line.strip() and not line.lstrip().startswith("|"):
            first = number if not para else first
            para.append(line)
            last = number
            continue
        if para:
            yield first, last, " ".join(para)
            para = []
        if kind == "line" and line.lstrip().startswith("|"):
            yield number, number, line
    if para:
        yield first, last, " ".join(para)


def sentences(para):
    return re.split(r"(?<=[.!?])\s+(?=[A-Z(`\[])", para)


def external_names(text):
    """Line -> names in a sentence or table row that names their owner (OWNERS)."""
    out = {}
    for first, last, para in paragraphs(text):
        for sentence in sentences(para):
            if OWNERS.search(sentence):
                names = set(re.findall(r"`([^`]+)`", sentence)) | set(PATH.findall(sentence))
                for n in range(first, last + 1):
                    out.setdefault(n, set()).update(s.strip() for s in names)
    return out


class DocChecker:
    def __init__(self, tree):
        self.tree = tree
        self.prefixes = ctest_prefixes(tree)
        self.problems = []
        self.sections = {}

    def report(self, where, line, message):
        self.problems.append(f"{where}:{line}: {message}")

    def check_doc(self, rel):
        text = (self.tree.root / rel).read_text(errors="replace")
        base = str(pathlib.PurePosixPath(rel).parent)
        owners = external_names(text)
        for number, kind, line in markdown_blocks(text):
            if kind == "code":
                line = line.partition("\n")[2]
                # Only tree-rooted paths in code blocks: the rest is example data.
                for i, body_line in enumerate(line.splitlines(), 1):
                    for token in PATH.findall(body_line):
                        if token.split("/")[0] in TOP and not self.tree.has_path(token, base):
                            self.report(rel, number + i, f"path {token} does not exist")
                continue
            self.check_line(rel, number, line, base, owners.get(number, set()))
        self.check_placed(rel, text, base)
        self.check_figures(rel, text)

    def check_placed(self, rel, text, base):
        """"`Name` (path)": the name is in that file (paragraph by paragraph: the two may sit on two lines)."""
        for number, _, para in paragraphs(text):
            for symbol, token in PLACED.findall(para):
                where = self.tree.file_of(token, base)
                if where and looks_like_code(symbol) and not self.tree.has_ctest(symbol) \
                        and not self.tree.defines(where, symbol):
                    self.report(rel, number, f"`{symbol}` is not in {token}")

    def check_line(self, rel, number, line, base, excused):
        without_urls = re.sub(r"https?://\S+", "", line)
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", without_urls)):
            if not target.startswith(("http", "#", "mailto")) and not self.tree.has_path(target, base):
                self.report(rel, number, f"link {target} does not exist")
        without_links = re.sub(r"\]\([^)]*\)", "]", without_urls)
        for token in PATH.findall(without_links):
            if token not in excused and not self.tree.has_path(token, base):
                self.report(rel, number, f"path {token} does not exist")
        for span in re.findall(r"`([^`]+)`", without_links):
            span = span.strip()
            if looks_like_code(span) and span not in excused:
                reason = check_symbol(self.tree, span, self.prefixes)
                if reason:
                    self.report(rel, number, reason)

    def check_figures(self, rel, text):
        whole = rel == "docs/performance.md"
        figures_chapter = rel == "README.md"
        sections = sections_of(text)
        by_line = sorted(sections, key=lambda s: s.line)
        for number, _, para in paragraphs(text):
            section = [s for s in by_line if s.line <= number][-1]
            everything = whole or (figures_chapter and chapter(section).title.strip("# ").lower() == "figures")
            for sentence in sentences(para):
                found = FIGURE.findall(sentence)
                found = [f for f in found if not sentence[:sentence.find(f)].endswith("±")]
                if not found or not (everything or para.lstrip().startswith("|") and MEASURED.search(para)
                                     or MEASURED.search(sentence)):
                    continue
                if self.backed(rel, section, para):
                    continue
                word = MEASURED.search(sentence) or MEASURED.search(para)
                why = f"in {rel}" if everything else f"'{word.group(0)}'"
                self.report(rel, number, f"figure '{found[0].strip()}' ({why}) without the command that measures "
                                         f"it in section '{section.title.strip('# ') or rel}'")

    def backed(self, rel, section, para):
        if any(COMMAND.search(s) for s in re.findall(r"`([^`]+)`", para)):
            return True
        if chapter_has_command(section):
            return True
        for target in re.findall(r"\]\(([^)\s]*#[^)\s]+)\)", para):
            path, _, anchor = target.partition("#")
            doc = os.path.normpath(os.path.join(os.path.dirname(rel), path)).replace(os.sep, "/") if path else rel
            if self.anchor_has_command(doc, anchor):
                return True
        return False

    def anchor_has_command(self, doc, anchor):
        if doc not in self.sections:
            try:
                self.sections[doc] = sections_of((self.tree.root / doc).read_text(errors="replace"))
            except OSError:
                self.sections[doc] = []
        return any(slug(s.title) == anchor and chapter_has_command(s) for s in self.sections[doc])

    def check_comment(self, rel, first, block):
        """Paths, "see X" and tracker references of one comment block (its lines joined: X may wrap)."""
        base = str(pathlib.PurePosixPath(rel).parent)
        comment = " ".join(block)
        starts = [sum(len(line) + 1 for line in block[:i]) for i in range(len(block))]

        def line_of(match):
            return first + sum(1 for start in starts[1:] if start <= match.start())

        for m in TRACKER.finditer(comment):
            self.report(rel, line_of(m), f"'{m.group(0)}' points at a tracker outside the repository")
        for m in PATH.finditer(comment):
            if not self.tree.has_path(m.group(1), base):
                self.report(rel, line_of(m), f"path {m.group(1)} does not exist")
        for m in SEE.finditer(comment):
            target = m.group(1).rstrip(".,:;)")
            if PATH.fullmatch(target.split("#")[0]) or not looks_like_code(target):
                continue  # paths are checked above; "see the header" names nothing
            reason = check_symbol(self.tree, target, self.prefixes)
            if reason:
                self.report(rel, line_of(m), f"see {target}: {reason}")


def chapter(section):
    """The level-2 section (or the document's preamble) holding a section."""
    while section.parent is not None and section.level > 2:
        section = section.parent
    return section


def chapter_has_command(section):
    """The section's chapter (its level-2 section with every subsection) names a command."""
    return chapter(section).chapter_command


def comment_blocks(text, suffix):
    """(first line number, lines) of each run of consecutive comment lines, and of Python docstrings."""
    marker = "#" if suffix in {".py", ".sh", ".cmake", ".txt"} else "//"
    block, first = [], None
    for number, line in enumerate(text.splitlines(), 1):
        at = line.find(marker)
        if at >= 0 and (marker == "//" or not line[:at].count('"') % 2):
            if not block:
                first = number
            block.append(line[at + len(marker):].strip())
            continue
        if block:
            yield first, block
            block = []
    if block:
        yield first, block
    if suffix == ".py":
        for m in re.finditer(r'"""(.*?)"""', text, re.S):
            yield text.count("\n", 0, m.start()) + 1, [line.strip() for line in m.group(1).splitlines()]


def documents(root):
    docs = ["README.md", "tests/README.md"]
    docs += sorted(str(p.relative_to(root)) for p in (root / "docs").rglob("*.md"))
    # The READMEs beside the code (codecs/ncstream/README.md), not those of test data.
    docs += sorted(str(p.relative_to(root)) for top in TOP if top not in ("docs", "tests")
                   for p in (root / top).rglob("README.md"))
    return [d for d in docs if (root / d).is_file()]


def run(root, exclude=()):
    tree = Tree(root, exclude)
    checker = DocChecker(tree)
    for rel in documents(root):
        checker.check_doc(rel)
    for rel in sorted(tree.files):
        path = pathlib.PurePosixPath(rel)
        if rel in exclude or rel.startswith("tests/data/") or not (
                path.suffix in CODE_SUFFIXES or path.name == "CMakeLists.txt"):
            continue
        text = (root / rel).read_text(errors="replace")
        for first, block in comment_blocks(text, path.suffix or ".txt"):
            checker.check_comment(rel, first, block)
    return checker.problems


# ---------------------------------------------------------------- self-test

FAKE = {
    "docs/design.md": """# Design

The catalog (fs/catalog.cpp, `Catalog::resolve`) and `fs/gone.cpp`; `kKnown`
(fs/catalog.cpp) and `Catalog::mutex_` (fs/catalog.cpp); see
[the tests](../tests/README.md) and [nothing](missing.md).
`NoSuchThing::resolve` is gone, `kKnown` and `NCAFS_TEST_*` exist.
The kernel's `finish_task_switch` is not ours.
The ctest `e2e_reads` runs, `e2e_vanished` does not.

## Costs

A partition costs 700 B in memory (measured).

## Speed

Reads take 0.26 s (ratio 1.9-2.0):

```sh
python3 tests/bench/fuse_bench.py $BIN $WORK
```
""",
    "docs/performance.md": "# Performance\n\n## Cold\n\n| what | time |\n|---|---|\n| cat | 0.49 s |\n",
    "tests/README.md": "# Tests\n",
    "README.md": "# x\n\n## Figures\n\nSee [figures](docs/design.md#speed): 0.26 s.\n",
    "fs/catalog.cpp": "// see kKnown, see Catalog::resolve and (see NoSuchHelper)\n"
                      "// see fs/nowhere.hpp\n// Hostile sizes (issue 11 item 4).\n"
                      "int Catalog::resolve() { return kKnown; }\nconst char* e = \"NCAFS_TEST_FAKE\";\n",
    "tests/bench/fuse_bench.py": "",
    "tests/CMakeLists.txt": "ncafs_add_py_cases(e2e_ x.py 300 reads data)\n",
}
EXPECTED = [
    "docs/design.md:3: path fs/gone.cpp does not exist",
    "docs/design.md:3: `Catalog::mutex_` is not in fs/catalog.cpp",  # found by paragraph
    "docs/design.md:4: `Catalog::mutex_` is neither",
    "docs/design.md:5: link missing.md does not exist",
    "docs/design.md:6: `NoSuchThing::resolve` is neither",
    "docs/design.md:8: `e2e_vanished` is neither",
    "docs/design.md:12: figure '700 B'",
    "docs/performance.md:7: figure '0.49 s'",
    "fs/catalog.cpp:1: see NoSuchHelper:",
    "fs/catalog.cpp:2: path fs/nowhere.hpp does not exist",
    "fs/catalog.cpp:3: 'issue 11' points at a tracker",
    "fs/catalog.cpp:3: 'item 4' points at a tracker",
]


def self_test():
    """The check reports each planted fault, and nothing else, in a small fake tree."""
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        for rel, text in FAKE.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        found = run(root)
    missing = [e for e in EXPECTED if not any(p.startswith(e) for p in found)]
    extra = [p for p in found if not any(p.startswith(e) for e in EXPECTED)]
    for line in missing:
        print(f"self-test: not reported: {line}")
    for line in extra:
        print(f"self-test: reported wrongly: {line}")
    return not missing and not extra


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not self_test():
        print("docs_check: the self-test failed, the check itself is broken")
        return 1
    root = pathlib.Path(sys.argv[1]).resolve()
    problems = run(root, exclude={"tests/docs_check.py"})
    for line in problems:
        print(line)
    print(f"{len(problems)} reference(s) or figure(s) that are not so")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
