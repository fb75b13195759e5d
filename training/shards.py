"""Splits a dict of f32 arrays into safetensors files of at most `limit` bytes
(the device returns files of at most 16 MiB) and joins them back. Large
tensors are cut along their first axis; piece names are `name@index`. Also
a model file's int8 tensors back as floats (`dequantized`, numpy or PyTorch)."""

import glob
import json
import os

import numpy as np


def _save(path, arrays):
    """A minimal safetensors writer (numpy only: usable where MLX is not)."""
    header, offset, blobs = {}, 0, []
    for name, a in arrays.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for b in blobs:
            f.write(b)


def _load(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        s, e = h["data_offsets"]
        out[name] = np.frombuffer(data[s:e], dtype=np.float32).reshape(h["shape"])
    return out


def save(arrays, stem, limit=15 * 2**20):
    pieces = []
    for name, a in arrays.items():
        a = np.asarray(a, dtype=np.float32)
        rows = max(1, (limit - 4096) // max(1, a[0].nbytes if a.ndim > 1 else 4)) if a.ndim > 1 else len(a)
        if a.ndim > 1 and a.nbytes > limit - 4096:
            for i, s in enumerate(range(0, a.shape[0], rows)):
                pieces.append((f"{name}@{i}", a[s : s + rows]))
        else:
            pieces.append((name, a))
    files, cur, size = [], {}, 0
    for name, a in pieces:
        if cur and size + a.nbytes > limit - 4096:
            files.append(cur)
            cur, size = {}, 0
        cur[name] = a
        size += a.nbytes
    if cur:
        files.append(cur)
    # A trainer saves once, at the end of its run: a missing folder must not
    # lose the run there.
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    paths = []
    for i, f in enumerate(files):
        paths.append(f"{stem}.{i}.safetensors")
        _save(paths[-1], f)
    return paths


def load(stem):
    parts = {}
    for path in sorted(glob.glob(f"{stem}.*.safetensors")):
        parts.update(_load(path))
    out, cut = {}, {}
    for name, a in parts.items():
        if "@" in name:
            base, i = name.rsplit("@", 1)
            cut.setdefault(base, {})[int(i)] = a
        else:
            out[name] = a
    for base, d in cut.items():
        out[base] = np.concatenate([d[i] for i in sorted(d)])
    return out


def dequantized(tensors, to_float):
    """A models/FORMAT.md file's tensors as floats: an int8 matrix `W` with
    its per-row `W.scale` becomes W * scale (row by row), the other tensors
    `to_float` of themselves. `to_float` turns one array into floats (numpy's
    or PyTorch's), so that the GPU trainer's --init takes the int8 file,
    half the bf16 file's bytes, where a call carries little."""
    return {k: to_float(v) * to_float(tensors[k + ".scale"])[:, None] if k + ".scale" in tensors else to_float(v)
            for k, v in tensors.items() if not k.endswith(".scale")}
