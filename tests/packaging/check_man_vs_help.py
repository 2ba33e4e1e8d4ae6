#!/usr/bin/python3
"""`ncafs --help`, the man page and the README list the same options, and
name every kind of view.

usage: check_man_vs_help.py NCAFS_BINARY MANPAGE
       check_man_vs_help.py --readme README NCAFS_BINARY MANPAGE

The first form compares --help with the man page; the second (its own ctest
entry) compares the README with --help, whose list of views the binary
generates from its registry of views (fs/view_registry.hpp), so that no
list here can drift from the code.

How each side is read (keep the formats, or change this parser with them):
- --help: paragraphs (separated by blank lines). In the one starting with
  "usage:", every "[-x" names the option -x. The paragraph starting with
  "views:" is the list of view kinds: every line indented by exactly two
  spaces starts with a name pattern (NAME.nc, NAME.lodN.vds), which ends at
  the first run of two spaces. Any other paragraph whose heading line ends
  with ':' is an option table: every line indented by exactly two spaces
  starts with a tag ("-d, -o debug", "cdf_version=1|2|5"), which ends at the
  first run of two spaces. A paragraph whose heading starts with
  "FUSE/mount options" is a prose list: after its first ':' the options are
  separated by ',' or ';' and each piece starts with an option name.
- man page: the tag line after every .TP in the OPTIONS section (options)
  and in the VIEWS section (view name patterns).
- README (markdown): the first table after the heading "## Options" and the
  first table after "## Views". In each, the first column of every body row
  holds one or more items in backticks, for example

      ## Options
      | Option | Default | Meaning |
      |---|---|---|
      | `-f` | background | stay in the foreground |
      | `allow_other` | off | let other users read the mount |
      | `cache_mem=SIZE` | 256M | ... |
      | `exec`, `noexec` | | passed to the kernel |

      ## Views
      | Name | Shown for | Contents |
      |---|---|---|
      | `NAME.nc` | every dataset, an aggregation NAME.nca | netCDF classic |
      | `NAME.lodN.nc`, `NAME.lodN.ds`, `NAME.lodN.ncs`, `NAME.lodN.vds` | ... | ... |

  Each option item is read as a --help tag (`-d, -o debug`, `views=nc[,ds]`,
  `cache_mem=SIZE`): the README's options must be exactly those of --help.
  Each view item is a name pattern as --help writes it: every pattern of
  --help must be in the table (the table may have more rows, such as the
  sources `NAME.nca` or `NAME.vds/`).
An option is named by its dash form (-f, --help) or by the name before '='
(cdf_version); "-o debug" names the -o option debug.
"""

import os
import re
import subprocess

from packaging_common import TestFailure, main, log

OPTION = re.compile(r"(x-\*|--?[A-Za-z][\w-]*|[a-z_][a-z0-9_]*=?)")


def option_names(tag):
    """Names in one tag: '-h, --help' -> {-h, --help}; 'fsname=NAME' -> {fsname}."""
    names = set()
    if re.match(r"-o \w+\[", tag.strip()):  # "-o opt[,opt...]": the -o option itself
        return {"-o"}
    tag = re.sub(r"\[[^]]*\]", "", tag)  # optional parts: "views=nc[,ds,ncs]" -> "views=nc"
    for piece in re.split(r",\s*", tag.strip()):
        piece = piece.strip()
        # "-o debug" names the -o option debug; "-o opt[,opt...]" names -o itself.
        if re.fullmatch(r"-o [a-z_][a-z0-9_]*", piece):
            piece = piece[3:]
        match = OPTION.match(piece)
        if match:
            names.add(match.group(1).rstrip("="))
    return names


def table_tags(lines):
    """The tags of the lines indented by exactly two spaces (up to two spaces)."""
    return [re.split(r"\s{2,}", line.strip(), maxsplit=1)[0] for line in lines if re.match(r"^  \S", line)]


def help_views(text):
    """The view name patterns of the "views:" paragraph of --help."""
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.startswith("views:"):
            return set(table_tags(paragraph.splitlines()[1:]))
    return set()


def help_options(text):
    options = set()
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.splitlines()
        if not lines:
            continue
        heading = lines[0]
        if heading.startswith("views:"):
            continue
        if heading.startswith("usage:"):
            # The synopsis: "[-f] [-d] [-s] [-o opt[,opt...]]"
            options |= set(re.findall(r"\[(-\w+)", paragraph))
        elif heading.startswith("FUSE/mount options"):
            listed = paragraph.split(":", 1)[1]
            for piece in re.split(r"[,;]", listed):
                words = piece.split()
                if words:
                    match = OPTION.fullmatch(words[0].rstrip("."))
                    if match:
                        options.add(match.group(1).rstrip("="))
        elif heading.rstrip().endswith(":"):
            for tag in table_tags(lines[1:]):
                options |= option_names(tag)
    return options


def roff_to_text(line):
    """A macro line such as '.BR \\-d ", " "\\-o debug"' as the words it shows."""
    macro, _, rest = line.partition(" ")
    words = re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest)
    parts = [a if a else b for a, b in words]
    joiner = " " if macro in (".B", ".I") else ""  # .BR/.BI/... alternate fonts without spaces
    text = joiner.join(parts) if macro.startswith(".") else line
    text = re.sub(r"\\f(\[[^]]*\]|.)", "", text)  # font changes
    text = text.replace("\\-", "-").replace("\\|", "").replace("\\&", "").replace("\\ ", " ")
    return text.strip()


def man_tags(path, section):
    """The text of the tag line after every .TP of the section .SH SECTION."""
    tags = []
    inside = False
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            inside = line.split(None, 1)[1].strip('"') == section
        elif inside and line.strip() == ".TP" and i + 1 < len(lines):
            tags.append(roff_to_text(lines[i + 1]))
    return tags


def man_options(path):
    options = set()
    for tag in man_tags(path, "OPTIONS"):
        options |= option_names(tag)
    return options


def readme_table_items(path, heading):
    """The backticked items of the first column of the first table after `## heading`."""
    lines = open(path).read().splitlines()
    try:
        start = lines.index("## " + heading)
    except ValueError:
        raise TestFailure(f"{path} has no section '## {heading}' (see the top of this script)") from None
    items, in_table = [], False
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if in_table:
                break
            continue
        # Markdown escapes a | inside a cell as \|: split on the others only.
        cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
        first = cells[0].strip().replace("\\|", "|")
        if not in_table:  # the header row, then the |---| row
            in_table = True
            continue
        if re.fullmatch(r":?-+:?", first):
            continue
        items += re.findall(r"`([^`]+)`", first)
    if not items:
        raise TestFailure(f"{path}: no table with backticked items in its first column under '## {heading}'")
    return items


def help_text(binary):
    if not os.access(binary, os.X_OK):
        raise TestFailure(f"the ncafs program is missing ({binary}): is the target ncafs built?")
    result = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise TestFailure(f"{binary} --help exited with {result.returncode}: {result.stderr}")
    text = result.stdout
    if len(help_options(text)) < 5 or len(help_views(text)) < 5:
        raise TestFailure(f"found only {sorted(help_options(text))} and views {sorted(help_views(text))} in "
                          f"--help: did its format change? (see the top of this script)\n{text}")
    return text


def compare(what, ours, theirs, our_name, their_name):
    only_ours, only_theirs = sorted(ours - theirs), sorted(theirs - ours)
    if only_ours or only_theirs:
        raise TestFailure(f"{our_name} and {their_name} list different {what}:\n"
                          f"  only in {our_name}: {only_ours}\n"
                          f"  only in {their_name}: {only_theirs}")


def check_readme(readme, text):
    options = set()
    for item in readme_table_items(readme, "Options"):
        options |= option_names(item)
    compare("options", help_options(text), options, "--help", readme)
    views = set(readme_table_items(readme, "Views"))
    missing = sorted(help_views(text) - views)
    if missing:
        raise TestFailure(f"{readme}: the table of '## Views' does not name {missing} "
                          f"(it names {sorted(views)})")
    log(f"{readme} lists the {len(options)} options of --help and names its {len(help_views(text))} views")


def check(argv):
    readme = None
    if argv[:1] == ["--readme"]:
        readme, argv = argv[1], argv[2:]
    binary, manpage = argv
    text = help_text(binary)
    if readme:
        check_readme(readme, text)
        return
    from_help = help_options(text)
    from_man = man_options(manpage)
    only_help = sorted(from_help - from_man)
    only_man = sorted(from_man - from_help)
    if only_help or only_man:
        raise TestFailure("--help and the man page list different options:\n"
                          f"  only in --help:   {only_help}\n"
                          f"  only in ncafs.1:  {only_man}")
    log(f"--help and {manpage} both list {len(from_help)} options: {' '.join(sorted(from_help))}")
    views_help, views_man = help_views(text), set(man_tags(manpage, "VIEWS"))
    compare("views", views_help, views_man, "--help", manpage + " (.TP tags of VIEWS)")
    log(f"--help and {manpage} both name {len(views_help)} views: {' '.join(sorted(views_help))}")


main(check)
