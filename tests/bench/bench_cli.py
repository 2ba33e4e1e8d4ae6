"""The command line the bench scripts share: NCAFS_BINARY [WORK] [N ...],
and the flags of those that compare backings and binaries."""
import os
import sys


def positional(doc, default_work, *default_numbers):
    """[the ncafs binary (absolute), WORK, the numbers...] from sys.argv, each
    number defaulting in order; None (the usage printed) without a binary."""
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(doc)
        return None
    values = [os.path.abspath(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else default_work]
    for k, default in enumerate(default_numbers):
        values.append(int(sys.argv[3 + k]) if len(sys.argv) > 3 + k else default)
    return values


def take_flag(name, with_value):
    """Removes --name [VALUE] from sys.argv; returns the value (or True), None when absent."""
    if name not in sys.argv:
        return None
    i = sys.argv.index(name)
    value = sys.argv[i + 1] if with_value else True
    del sys.argv[i:i + (2 if with_value else 1)]
    return value


def comparison_flags(doc):
    """(--before OLD_NCAFS, --backing NAME), each None when absent, taken out of
    sys.argv; None (the usage printed) for --help."""
    if take_flag("--help", False) or take_flag("-h", False):
        print(doc)
        return None
    return take_flag("--before", True), take_flag("--backing", True)
