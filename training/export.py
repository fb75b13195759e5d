"""Export to the engine's file format (models/FORMAT.md) in f32, bf16 or int8,
and the loader that checks a file against that format (names, dtypes, shapes,
metadata, vocabulary hash) before handing back f32 weights."""

import os

import mlx.core as mx

from .model import LayaLM
from .tokenizer import NAME as TOKENIZER
from .vocab import sha256

FORMAT = "1"
ARCH = "gru-tied"
DTYPES = ("f32", "bf16", "int8")


def shapes(v, e, h):
    """FORMAT.md's tensor table."""
    return {"embed": (v, e), "gru.wx": (3 * h, e), "gru.wh": (3 * h, h), "gru.b": (3 * h,),
            "gru.bhn": (h,), "proj.w": (e, h), "proj.b": (e,), "out.b": (v,)}


def tensors(model):
    """The model's weights under the file's names, f32."""
    return {"embed": model.embed.weight, "gru.wx": model.gru.Wx, "gru.wh": model.gru.Wh, "gru.b": model.gru.b,
            "gru.bhn": model.gru.bhn, "proj.w": model.proj.weight, "proj.b": model.proj.bias,
            "out.b": model.out_b}


def quantize_rows(w):
    """Symmetric per-row int8: w[i, j] ~ q[i, j] * scale[i]."""
    scale = mx.max(mx.abs(w), axis=1) / 127.0
    scale = mx.where(scale == 0, mx.ones_like(scale), scale)
    q = mx.clip(mx.round(w / scale[:, None]), -127, 127).astype(mx.int8)
    return q, scale.astype(mx.float32)


def export(model, vocab_path, path, dtype="f32"):
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
    v, e, h = model.sizes
    arrays = {}
    for name, w in tensors(model).items():
        w = w.astype(mx.float32)
        if dtype == "bf16":
            arrays[name] = w.astype(mx.bfloat16)
        elif dtype == "int8" and w.ndim == 2:
            arrays[name], arrays[name + ".scale"] = quantize_rows(w)
        else:
            arrays[name] = w
    meta = {"laya.format": FORMAT, "arch": ARCH, "tokenizer": TOKENIZER, "vocab_size": str(v),
            "embed_dim": str(e), "hidden_dim": str(h), "vocab_sha256": sha256(vocab_path), "dtype": dtype}
    mx.eval(arrays)
    mx.save_safetensors(path, arrays, metadata=meta)
    return path


class FormatError(ValueError):
    pass


_MX_DTYPE = {"f32": mx.float32, "bf16": mx.bfloat16}


def load(path, vocab_path=None):
    """Reads and checks a model file; returns (LayaLM with f32 weights, metadata).
    The vocabulary defaults to <stem>.vocab.txt beside the file (FORMAT.md)."""
    if vocab_path is None:
        vocab_path = default_vocab_path(path)
    arrays, meta = mx.load(path, return_metadata=True)
    want = {"laya.format": FORMAT, "arch": ARCH, "tokenizer": TOKENIZER}
    for key, value in want.items():
        if meta.get(key) != value:
            raise FormatError(f"{path}: metadata {key} is {meta.get(key)!r}, expected {value!r}")
    dtype = meta.get("dtype")
    if dtype not in DTYPES:
        raise FormatError(f"{path}: metadata dtype is {dtype!r}, expected one of {DTYPES}")
    try:
        v, e, h = (int(meta[k]) for k in ("vocab_size", "embed_dim", "hidden_dim"))
    except (KeyError, ValueError):
        raise FormatError(f"{path}: metadata vocab_size/embed_dim/hidden_dim missing or not integers") from None
    if not os.path.exists(vocab_path):
        raise FormatError(f"{path}: vocabulary file {vocab_path} not found")
    if sha256(vocab_path) != meta.get("vocab_sha256"):
        raise FormatError(f"{path}: vocabulary {vocab_path} has SHA-256 {sha256(vocab_path)}, "
                          f"the model expects {meta.get('vocab_sha256')}")
    with open(vocab_path, "rb") as f:
        lines = f.read().count(b"\n")
    if lines != v:
        raise FormatError(f"{path}: vocabulary {vocab_path} has {lines} tokens, metadata vocab_size is {v}")
    expected = {}
    for name, shape in shapes(v, e, h).items():
        if dtype == "int8" and len(shape) == 2:
            expected[name] = (shape, mx.int8)
            expected[name + ".scale"] = (shape[:1], mx.float32)
        else:
            expected[name] = (shape, mx.float32 if dtype == "int8" else _MX_DTYPE[dtype])
    extra = sorted(set(arrays) - set(expected))
    if extra:
        raise FormatError(f"{path}: unexpected tensor(s) {extra}")
    for name, (shape, dt) in expected.items():
        if name not in arrays:
            raise FormatError(f"{path}: tensor `{name}` is missing (expected {dt} {list(shape)})")
        a = arrays[name]
        if tuple(a.shape) != tuple(shape) or a.dtype != dt:
            raise FormatError(f"{path}: tensor `{name}` is {a.dtype} {list(a.shape)}, expected {dt} {list(shape)}")
    f32 = {}
    for name in shapes(v, e, h):
        a = arrays[name]
        f32[name] = a.astype(mx.float32) * arrays[name + ".scale"][:, None] if name + ".scale" in arrays \
            else a.astype(mx.float32)
    return from_tensors(f32), meta


def from_tensors(t):
    """A LayaLM from tensors under the file's names (f32, any array type)."""
    t = {k: mx.array(v).astype(mx.float32) for k, v in t.items()}
    v, e = t["embed"].shape
    model = LayaLM(v, e, t["gru.wh"].shape[1])
    model.embed.weight, model.gru.Wx, model.gru.Wh = t["embed"], t["gru.wx"], t["gru.wh"]
    model.gru.b, model.gru.bhn = t["gru.b"], t["gru.bhn"]
    model.proj.weight, model.proj.bias, model.out_b = t["proj.w"], t["proj.b"], t["out.b"]
    return model


DTYPE_SUFFIXES = ("-bf16", "-int8", "-f32")


def lists_stem(name):
    """The stem whose vocabulary and word list go with model `name`: a dtype
    variant (<stem>-bf16) shares its base model's (FORMAT.md)."""
    for suffix in DTYPE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def default_vocab_path(path):
    """FORMAT.md: the vocabulary of <stem>.safetensors is <stem>.vocab.txt, or
    for a dtype variant without its own, its base model's."""
    stem = path[: -len(".safetensors")] if path.endswith(".safetensors") else path
    own = stem + ".vocab.txt"
    base = os.path.join(os.path.dirname(stem), lists_stem(os.path.basename(stem))) + ".vocab.txt"
    return own if os.path.exists(own) or not os.path.exists(base) else base
