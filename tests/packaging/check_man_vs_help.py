#!/usr/bin/python3
"""`ncafs --help` and the man page list the same options.

usage: check_man_vs_help.py NCAFS_BINARY MANPAGE

How each side is read (keep both formats, or change this parser with them):
- --help: paragraphs (separated by blank lines). In the one starting with
  "usage:", every "[-x" names the option -x. A paragraph whose heading
  line ends with ':' is an option table: every line indented by exactly two
  spaces starts with a tag ("-d, -o debug", "cdf_version=1|2|5"), which ends
  at the first run of two spaces. A paragraph whose heading starts with
  "FUSE/mount options" is a prose list: after its first ':' the options are
  separated by ',' or ';' and each piece starts with an option name.
- man page: the tag line after every .TP in the OPTIONS section.
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


def help_options(text):
    options = set()
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.splitlines()
        if not lines:
            continue
        heading = lines[0]
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
            for line in lines[1:]:
                if re.match(r"^  \S", line):
                    tag = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
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


def man_options(path):
    options = set()
    in_options = False
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            in_options = line.split(None, 1)[1].strip('"') == "OPTIONS"
        elif in_options and line.strip() == ".TP" and i + 1 < len(lines):
            options |= option_names(roff_to_text(lines[i + 1]))
    return options


def check(argv):
    binary, manpage = argv
    if not os.access(binary, os.X_OK):
        raise TestFailure(f"the ncafs program is missing ({binary}): is the target ncafs built?")
    result = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise TestFailure(f"{binary} --help exited with {result.returncode}: {result.stderr}")
    from_help = help_options(result.stdout)
    from_man = man_options(manpage)
    if len(from_help) < 5:
        raise TestFailure(f"found only {sorted(from_help)} in --help: did its format change? "
                          f"(see the top of this script)\n{result.stdout}")
    only_help = sorted(from_help - from_man)
    only_man = sorted(from_man - from_help)
    if only_help or only_man:
        raise TestFailure("--help and the man page list different options:\n"
                          f"  only in --help:   {only_help}\n"
                          f"  only in ncafs.1:  {only_man}")
    log(f"--help and {manpage} both list {len(from_help)} options: {' '.join(sorted(from_help))}")


main(check)
