"""Reading a `trainbench export` folder, and writing parameter files, for the PyTorch
peer (pytorch_train.py).

The formats are harness/export.h's: workload.json (the configuration), data.bin
(X, then targets or labels), orders.bin (each epoch's row order; only with
--shuffle) and params.bin (harness/params_file.h's TBPARAM1, also what
--save-params writes). Every binary file is little-endian; data.bin and
orders.bin start with a 64-byte header (magic, version, int64 fields).

BadInput is the error every unusable export or results file raises; the peer
prints its str() as its one stderr line and exits 2.
"""

import json
import os
import struct

import numpy as np

EXPORT_VERSION = 1
DATA_MAGIC = b"TBDATA\0\0"
ORDER_MAGIC = b"TBORDER\0"
PARAM_MAGIC = b"TBPARAM1"
HEADER_BYTES = 64


class BadInput(Exception):
    """Unusable export or results file; str() is the one line printed."""


# ---- reading an export (formats: harness/export.h) -----------------------------------

def _header(path, magic):
    with open(path, "rb") as f:
        head = f.read(HEADER_BYTES)
    if len(head) < HEADER_BYTES or head[:8] != magic:
        name = magic.rstrip(b"\0").decode()
        raise BadInput(f"{path}: not a {name} file (bad magic)")
    fields = struct.unpack("<7q", head[8:])
    if fields[0] != EXPORT_VERSION:
        raise BadInput(f"{path}: version {fields[0]}, this script reads version {EXPORT_VERSION}")
    return fields


def read_data(path, shared=False):
    """data.bin -> (task, X n x d float32, Y n x o float32 or labels n int32).
    shared: map the file copy-on-write instead of reading it, so that the ranks of
    a DDP run on one machine share one copy of the data in the page cache."""
    _, task, n, d, o, _, _ = _header(path, DATA_MAGIC)
    want = HEADER_BYTES + 4 * n * d + 4 * (n if task == 1 else n * o)
    if os.path.getsize(path) != want:
        raise BadInput(f"{path}: {os.path.getsize(path)} bytes, expected {want} for n={n} d={d} o={o}")

    def load(dtype, count, offset, shape):
        if shared and count:
            return np.memmap(path, dtype, mode="c", offset=offset, shape=shape)
        return np.fromfile(path, dtype, count=count, offset=offset).reshape(shape)
    x = load("<f4", n * d, HEADER_BYTES, (n, d))
    if task == 1:
        y = load("<i4", n, HEADER_BYTES + 4 * n * d, (n,))
    else:
        y = load("<f4", n * o, HEADER_BYTES + 4 * n * d, (n, o))
    return ("classification" if task == 1 else "regression"), x, y


def read_orders(path, n):
    _, epochs, rows, *_ = _header(path, ORDER_MAGIC)
    if rows != n or os.path.getsize(path) != HEADER_BYTES + 8 * epochs * n:
        raise BadInput(f"{path}: shape {epochs} x {rows} does not match the data's {n} rows")
    return np.fromfile(path, "<i8", offset=HEADER_BYTES).reshape(epochs, n)


def read_params(path):
    with open(path, "rb") as f:
        head = f.read(16)
    if len(head) < 16 or head[:8] != PARAM_MAGIC:
        raise BadInput(f"{path}: not a TBPARAM1 file")
    (count,) = struct.unpack("<q", head[8:])
    if os.path.getsize(path) != 16 + 4 * count:
        raise BadInput(f"{path}: size does not match its count {count}")
    return np.fromfile(path, "<f4", offset=16)


def write_params(path, flat):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(PARAM_MAGIC + struct.pack("<q", flat.size) + flat.astype("<f4").tobytes())
    os.replace(tmp, path)


def load_export(folder):
    try:
        with open(os.path.join(folder, "workload.json"), encoding="utf-8") as f:
            w = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise BadInput(f"{folder}/workload.json: {e}") from e
    if w.get("format") != "trainbench-export" or w.get("version") != EXPORT_VERSION:
        raise BadInput(f"{folder}/workload.json: not a version-{EXPORT_VERSION} trainbench export")
    return w
