#!/usr/bin/env python3
"""vds_decode.py against the OpenVDS-written fixtures: every LOD's raw and
float64 sha1 and the chunk kinds must equal the table in tests/data/vds/README.md
(written from OpenVDS's own reads). This proves the decoder independent of
our writer before the writer's tests rely on it."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vds_decode  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "vds")


def expected_rows():
    """{file: [(lod, raw sha1, f64 sha1, {kind: count})]} from the README tables."""
    rows, current = {}, None
    with open(os.path.join(DATA, "README.md")) as f:
        for line in f:
            m = re.match(r"## `(.+\.vds)`", line)
            if m:
                current = m.group(1)
                rows[current] = []
            m = re.match(r"\| (\d+) \| .*?`([0-9a-f]{40})` \| `([0-9a-f]{40})` \|.*\| ([^|]+) \|$", line.strip())
            if m and current:
                kinds = {k: int(n) for n, k in (p.split(" ")[::-1] for p in m.group(4).strip().split(", "))}
                rows[current].append((int(m.group(1)), m.group(2), m.group(3), kinds))
    return rows


def main():
    rows = expected_rows()
    checked = 0
    assert len(rows) == 4, rows
    for name, lods in rows.items():
        vds = vds_decode.Vds(os.path.join(DATA, name))
        for lod, raw, f64, kinds in lods:
            got_raw = vds_decode.sha1(vds.read_lod(0, lod))
            got_f64 = vds_decode.f64_sha1(vds.read_values(0, lod))
            got_kinds = {}
            for kind, _, length in vds.chunk_kinds(0, lod):
                got_kinds[kind] = got_kinds.get(kind, 0) + 1
                assert kind == "data" or length == 0, (name, lod, kind, length)
            assert (got_raw, got_f64, got_kinds) == (raw, f64, kinds), (name, lod, got_raw, got_f64, got_kinds)
            checked += 1
    assert checked == 11, checked
    print("vds_decode reproduces %d fixture LODs" % checked)


if __name__ == "__main__":
    main()
