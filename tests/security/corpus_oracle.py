#!/usr/bin/python3
"""What netCDF4-python (netcdf-c) reads of a file's root group, and what a
classic view of it must then hold by ncafs's documented mapping
(docs/formats/netcdf4.md, docs/formats/cdf.md "Record dimension choice").

Run as: corpus_oracle.py FILE [--source]   prints the pickled description
of FILE (--source: of a source file, not a view); corpus_oracle.py --each
DIR [--source] FILE...   writes them to DIR/0.pickle ... (described_many).
described(path, timeout) runs that in a process of its own (netCDF4-python
is not thread-safe, and netcdf-c loops on some HDF5 files): the description,
or None and why it could not be had.

A description: dims [(name, length, unlimited)], attrs {name: value},
vars {name: {kind, dims, attrs, values}} with values as netCDF4-python reads
them raw (no mask, no scale), or the text of the error reading them;
non_classic [names], groups [names].
"""
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

CLASSIC_CODES = {"i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8", "S1"}
PYTHON = "/usr/bin/python3"


def classic_code(datatype):
    """The classic type code of a netCDF4-python datatype, or None."""
    if isinstance(datatype, np.dtype) and datatype.fields is None:
        code = datatype.kind + str(datatype.itemsize)
        return code if code in CLASSIC_CODES else None
    return None


def attribute_value(value):
    """An attribute as the classic views keep it, or None when they skip it:
    numbers of the classic types, text, a single-valued string as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, (np.ndarray, np.generic)) and classic_code(value.dtype) in CLASSIC_CODES - {"S1"}:
        return np.atleast_1d(value)
    return None


def attributes(obj):
    kept = {}
    for name in obj.ncattrs():
        try:
            value = attribute_value(obj.getncattr(name))
        except (KeyError, RuntimeError, UnicodeError):  # opaque and other types netCDF4-python cannot read
            continue
        if value is not None:
            kept[name] = value
    return kept


def element_by_element(v):
    """The values read one element at a time: netcdf-c 4.9.0 lays out a box
    that passes the HDF5 extent of an unlimited dimension after the first
    wrongly (shifted values, then fill or bytes never written), a single
    element never. (Past the extent of the first dimension its fill comes
    after the values read, in C order: right.)"""
    values = np.empty(v.shape, dtype=v.dtype)
    for index in np.ndindex(*v.shape):
        values[index] = v[index]
    return values


def variable(v, unlimited):
    """A classic variable: its kind, dimensions, attributes and values (those of
    variables with a dimension of `unlimited` after their first element by element)."""
    v.set_auto_maskandscale(False)
    try:
        values = element_by_element(v) if set(v.dimensions[1:]) & unlimited else np.array(v[...])
        values = values.astype(values.dtype.newbyteorder("=")) if values.dtype.kind in "iuf" else values
    except Exception as e:  # noqa: BLE001 - every failure of the library is the oracle's answer
        values = "%s: %s" % (type(e).__name__, e)
    return {"kind": classic_code(v.datatype), "dims": v.dimensions, "attrs": attributes(v), "values": values}


def describe(path, source):
    """The description of path; a source's variables with an unlimited
    dimension after their first are read element by element, a view's as
    one box each (as clients do)."""
    import netCDF4
    warnings.simplefilter("ignore")  # "variable has unsupported datatype, skipping"
    with netCDF4.Dataset(path) as ds:
        out = {"dims": [(name, len(d), d.isunlimited()) for name, d in ds.dimensions.items()],
               "attrs": attributes(ds), "vars": {}, "non_classic": [], "groups": list(ds.groups)}
        unlimited = {name for name, d in ds.dimensions.items() if d.isunlimited() and source}
        for name, v in ds.variables.items():
            if classic_code(v.datatype) is None:
                out["non_classic"].append(name)
            else:
                out["vars"][name] = variable(v, unlimited)
    return out


def described(path, timeout=20, source=False):
    try:
        r = subprocess.run([PYTHON, __file__, path] + (["--source"] if source else []), capture_output=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "netCDF4-python did not open %s within %d s" % (path, timeout)
    if r.returncode != 0:
        return None, r.stderr.decode(errors="replace").strip().splitlines()[-1]
    return pickle.loads(r.stdout), None


def describe_each(paths, source, out_dir):
    """Writes OUT_DIR/I.pickle for each path in turn: its description, or why
    netCDF4-python could not have it."""
    for i, path in enumerate(paths):
        try:
            result = (describe(path, source), None)
        except Exception as e:  # noqa: BLE001 - the library's failure is the oracle's answer
            result = (None, "%s: %s" % (type(e).__name__, e))
        with open(os.path.join(out_dir, "%d.tmp" % i), "wb") as f:
            pickle.dump(result, f)
        os.rename(os.path.join(out_dir, "%d.tmp" % i), os.path.join(out_dir, "%d.pickle" % i))


def described_many(paths, out_dir, source=False, stall=10):
    """{path: (description or None, why)} of every path, in one process at a
    time (netCDF4-python's imports once); a file on which netcdf-c makes no
    progress for `stall` seconds is given up (the process killed) and the
    rest go on in a new process."""
    results, todo = {}, list(paths)
    while todo:
        folder = tempfile.mkdtemp(dir=out_dir)
        args = [PYTHON, __file__, "--each", folder] + (["--source"] if source else []) + todo
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        done, last = 0, time.monotonic()
        while done < len(todo) and process.poll() is None or os.path.exists(os.path.join(folder, "%d.pickle" % done)):
            if os.path.exists(os.path.join(folder, "%d.pickle" % done)):
                with open(os.path.join(folder, "%d.pickle" % done), "rb") as f:
                    results[todo[done]] = pickle.load(f)
                done, last = done + 1, time.monotonic()
            elif time.monotonic() - last > stall:
                break
            else:
                time.sleep(0.02)
        process.kill()
        err = process.communicate()[1].decode(errors="replace").strip()
        if done < len(todo):
            why = "netCDF4-python made no progress on %s in %d s" % (todo[done], stall) if not err else err
            results[todo[done]] = (None, why.splitlines()[-1])
            done += 1
        todo = todo[done:]
    return results


def record_dimension(dims, variables):
    """The record dimension of the classic view, by the documented rule: the
    first UNLIMITED dimension that every shown variable using it has first and
    once; every other one is fixed at its current length."""
    for name, _, unlimited in dims:
        if unlimited and all(name not in v["dims"] or (v["dims"][0] == name and v["dims"].count(name) == 1)
                             for v in variables.values()):
            return name
    return None


def classic_refusal(source):
    """Why no classic file can hold the view (cdf.md: a fixed dimension of
    length 0 cannot be stored), or None."""
    record = record_dimension(source["dims"], source["vars"])
    empty = [name for name, length, _ in source["dims"] if length == 0 and name != record]
    return "dimension %s has length 0 and is not the record dimension" % empty[0] if empty else None


def classic_view(source):
    """What the classic view of a file described as `source` must read as."""
    shown = dict(source["vars"])
    record = record_dimension(source["dims"], shown)
    return {"dims": [(name, length, name == record) for name, length, _ in source["dims"]],
            "attrs": source["attrs"], "vars": shown, "non_classic": [], "groups": []}


if __name__ == "__main__":
    if sys.argv[1] == "--each":
        source = sys.argv[3] == "--source"
        describe_each(sys.argv[4:] if source else sys.argv[3:], source, sys.argv[2])
    else:
        sys.stdout.buffer.write(pickle.dumps(describe(sys.argv[1], "--source" in sys.argv[2:])))
