"""The command line the bench scripts share: NCAFS_BINARY [WORK] [N ...]."""
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
