#!/usr/bin/env python3
"""Every #include of the project's own headers follows the layering rule.

usage: layering_check.py SOURCE_DIR

The folders depend one way: cli -> fs -> aggregation -> {codecs, remote} -> io
(codecs and remote do not know each other). CMake's target links allow the same
edges, but one global include path would let a header of a higher layer be
included from a lower one unnoticed; this check reads every include instead.
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


def violations(root):
    for layer, allowed in ALLOWED.items():
        for path in sorted((root / layer).rglob("*.[ch]pp")):
            for folder in INCLUDE.findall(path.read_text(errors="replace")):
                if folder in ALLOWED and folder not in allowed:
                    yield f"{path.relative_to(root)} includes {folder}/: {layer}/ may include only {sorted(allowed)}"


def main():
    root = pathlib.Path(sys.argv[1])
    found = list(violations(root))
    for line in found:
        print(line)
    if not any((root / layer).is_dir() for layer in ALLOWED):
        print(f"no layer folder under {root}")
        return 1
    print(f"{len(found)} include(s) against the layering rule")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
