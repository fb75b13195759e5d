"""Export to the engine's file format (models/FORMAT.md) in f32, bf16 or int8,
and the loader that checks a file against that format (names, dtypes, shapes,
metadata, vocabulary hash) before handing back f32 weights. The int8 file's
integers are rounded to nearest, or calibrated on validation text (GPTQ-style,
below) in the same per-row format."""

import os

import mlx.core as mx
import numpy as np

from .model import LayaLM
from .tokenizer import NAME as TOKENIZER
from .vocab import sha256

FORMAT = "1"
ARCH = "gru-tied"
DTYPES = ("f32", "bf16", "int8")
MATRICES = ("embed", "gru.wx", "gru.wh", "proj.w")  # FORMAT.md's 2-D tensors


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


# Calibrated int8 rounding (GPTQ-style, in the file's own per-row format).
#
# A weight W [rows, cols] meets input vectors x (cols,) and gives W x; on
# calibration text the error of a quantized W' over all those inputs is
#     sum_x |(W - W') x|^2 = sum_i (w_i - w'_i)^T H (w_i - w'_i),   H = sum_x x x^T,
# one independent quadratic per row i with the same H. Round-to-nearest
# minimises each entry's error alone; here the columns are quantized one at a
# time and each column's rounding error is pushed onto the columns not yet
# quantized, weighted by how the inputs correlate (the optimal compensation
# under H, read off the Cholesky factor of H^-1), so that the row's errors
# cancel on the inputs the weight actually sees. The per-row scale stays
# symmetric (q in [-127, 127], w ~ q * scale): the file format is unchanged;
# only which integers are stored, and the scale (a few clip ratios below the
# row maximum are tried), are chosen by the calibrated error.
#
# The embedding is both the output layer (its inputs: proj.w h_t + proj.b, an
# H shared by all rows) and the input table (row v enters the GRU as x when
# token v is read: an error d costs |gru.wx d|^2 each time). quantize_embed
# weighs both: rows are grouped by their token's calibration frequency f, and
# a group's H adds EMBED_INPUT * f * G to the output-layer H, G = gru.wx^T
# gru.wx scaled to the same trace. Calibrating on the output role alone gained
# there and lost in the input role (model-level agreement on validation text).

CLIPS = (1.0, 0.95, 0.9, 0.85, 0.8)  # scale = ratio * max|w_i| / 127, chosen per row
DAMP = 0.01  # added to H's diagonal, as a fraction of its mean: keeps H^-1 well conditioned
CALIBRATE = 32_768  # default tokens of each validation stream (prose, code) run for the inputs
EMBED_INPUT = 100.0  # weight of the embedding's input role (chosen on validation text, 30..3000 tried)


def row_errors(w, wq, hess):
    """Per-row calibrated error (w_i - wq_i)^T H (w_i - wq_i)."""
    d = np.asarray(w, np.float64) - np.asarray(wq, np.float64)
    return np.einsum("ij,ij->i", d @ hess, d)


def _gptq(w, scale, u, block=128):
    """Integers for w [rows, cols] at fixed per-row `scale`, column by column
    in the order of u's rows, each column's error propagated through u, the
    upper Cholesky factor of the (damped) inverse Hessian."""
    w = w.copy()
    rows, cols = w.shape
    q = np.zeros((rows, cols), np.float64)
    inv = 1.0 / scale[:, None]
    for b0 in range(0, cols, block):
        b1 = min(b0 + block, cols)
        wb = w[:, b0:b1]
        err = np.zeros((rows, b1 - b0))
        for j in range(b1 - b0):
            col = wb[:, j]
            qj = np.clip(np.round(col * inv[:, 0]), -127, 127)
            q[:, b0 + j] = qj
            e = (col - qj * scale) / u[b0 + j, b0 + j]
            wb[:, j + 1 :] -= np.outer(e, u[b0 + j, b0 + j + 1 : b1])
            err[:, j] = e
        w[:, b1:] -= err @ u[b0:b1, b1:]
    return q


def quantize_calibrated(w, hess, clips=CLIPS, damp=DAMP, act_order=True):
    """Per-row int8 like quantize_rows (same format: q int8 in [-127, 127], f32
    scale per row, w[i, j] ~ q[i, j] * scale[i]) with integers chosen to
    minimise the error on calibration inputs: `hess` [cols, cols] is sum x x^T
    over the input vectors x of w (w @ x is what the model computes). For each
    clip ratio (scale = ratio * max|w_i| / 127) the columns are quantized in
    turn (largest diag(H) first with `act_order`), each one's rounding error
    compensated on the columns still to come (GPTQ); each row then keeps the
    candidate, among these and plain round-to-nearest, whose calibrated error
    (row_errors) is smallest, so it is never above round-to-nearest's.
    Deterministic. Returns (q int8 mx.array, scale f32 mx.array)."""
    w = np.asarray(w, np.float64)
    h0 = np.asarray(hess, np.float64)
    rows, cols = w.shape
    qr, sr = quantize_rows(mx.array(w.astype(np.float32)))
    best_q, best_s = np.array(qr).astype(np.float64), np.array(sr).astype(np.float64)
    best_e = row_errors(w, best_q * best_s[:, None], h0)
    order = np.argsort(-np.diag(h0), kind="stable") if act_order else np.arange(cols)
    h = h0[np.ix_(order, order)].copy()
    dead = np.diag(h) <= 0  # inputs that never vary: any value costs nothing; keep them finite
    h[dead, dead] = 1.0
    h[np.diag_indices(cols)] += damp * np.mean(np.diag(h))
    u = np.linalg.cholesky(np.linalg.inv(h)).T  # H^-1 = u^T u, u upper triangular
    wp = w[:, order]
    rowmax = np.max(np.abs(w), axis=1)
    for ratio in clips:
        scale = (rowmax * ratio / 127.0).astype(np.float32).astype(np.float64)  # the file's f32 scale
        scale = np.where(scale == 0, 1.0, scale)
        q = np.empty_like(wp)
        q[:, order] = _gptq(wp, scale, u)
        err = row_errors(w, q * scale[:, None], h0)
        better = err < best_e
        best_q[better], best_s[better], best_e[better] = q[better], scale[better], err[better]
    return mx.array(best_q.astype(np.int8)), mx.array(best_s.astype(np.float32))


def quantize_embed(w, hess_out, counts, wx, input_weight=EMBED_INPUT, **kw):
    """The tied embedding w [V, E] quantized for both its roles (see above):
    `hess_out` [E, E] sums the output layer's inputs, `counts` [V] how often
    each token was read in the same text, `wx` [3H, E] the GRU's input
    matrix. Rows are grouped by count (0, 1, 2-3, 4-7, ...), each group
    quantized (quantize_calibrated) with hess_out + input_weight * f * G, f the
    group's mean frequency, G = wx^T wx scaled to hess_out's trace. The
    format is quantize_rows'; deterministic. Returns (q int8, scale f32)."""
    w = np.asarray(w, np.float64)
    counts = np.asarray(counts, np.int64)
    wx = np.asarray(wx, np.float64)
    g = wx.T @ wx
    g *= np.trace(hess_out) / max(np.trace(g), 1e-30)
    total = max(int(counts.sum()), 1)
    group = np.where(counts > 0, np.floor(np.log2(np.maximum(counts, 1))).astype(np.int64) + 1, 0)
    q = np.zeros(w.shape, np.int8)
    scale = np.zeros(w.shape[0], np.float32)
    for k in np.unique(group):
        rows = np.nonzero(group == k)[0]
        f = counts[rows].mean() / total
        qk, sk = quantize_calibrated(w[rows], hess_out + input_weight * f * g, **kw)
        q[rows], scale[rows] = np.array(qk), np.array(sk)
    return mx.array(q), mx.array(scale)


def calibration_streams(n, vocab_size=None, names=("valid.prose", "valid.code")):
    """The first n tokens of each validation stream (training/work/data,
    `python -m training encode`): never the test streams or the held-out texts
    the model is measured on. With vocab_size, checks the ids fit the model."""
    from . import data
    out = []
    for name in names:
        if not os.path.exists(data.path(name)):
            raise FileNotFoundError(f"calibration stream {data.path(name)} not found: run `python -m training "
                                    "encode`, or export with --calibrate 0 (round to nearest)")
        ids = data.load(name)[:n].astype(np.int32)
        if vocab_size is not None and len(ids) and ids.max() >= vocab_size:
            raise ValueError(f"{data.path(name)} has token id {ids.max()}, the model's vocabulary {vocab_size}: "
                             "encoded with another vocabulary")
        out.append(ids)
    return out


def _sigmoid(v):
    return 0.5 * (1.0 + np.tanh(0.5 * v))


def hessians(model, streams, rows=64, chunk=128, embed_out=True):
    """Runs the f32 model over token streams (each cut into `rows` stretches
    read in parallel, the state carried along a stretch from zero, as the
    engine does from a document's start) and sums x x^T over each 2-D
    tensor's input vectors: gru.wx the input embeddings, gru.wh the state
    before the step h_{t-1}, proj.w the state after it h_t, and embed as the
    output layer its inputs proj.w h_t + proj.b (with embed_out), and under
    "embed.count" how often each token was read (quantize_embed). float64
    numpy [cols, cols] per tensor name. The model's equations (model.py) in
    numpy f32: on the CPU several times faster than MLX for this."""
    w = {k: np.asarray(v, np.float32) for k, v in tensors(model).items()}
    v, e, hd = model.sizes
    wxt, wht, pt = w["gru.wx"].T.copy(), w["gru.wh"].T.copy(), w["proj.w"].T.copy()
    acc = {"gru.wx": np.zeros((e, e)), "gru.wh": np.zeros((hd, hd)), "proj.w": np.zeros((hd, hd))}
    if embed_out:
        acc["embed"], acc["embed.count"] = np.zeros((e, e)), np.zeros(v, np.int64)
    for ids in streams:
        length = len(ids) // rows
        if length == 0:
            continue
        grid = np.asarray(ids[: rows * length]).reshape(rows, length)
        if embed_out:
            acc["embed.count"] += np.bincount(grid.ravel(), minlength=v)[:v]
        h = np.zeros((rows, hd), np.float32)
        for t0 in range(0, length, chunk):
            x = w["embed"][grid[:, t0 : t0 + chunk].T]  # [T, rows, e]
            gx = x @ wxt + w["gru.b"]
            before, after = [], []
            for t in range(x.shape[0]):
                before.append(h)
                gh = h @ wht
                rz = _sigmoid(gx[t, :, : 2 * hd] + gh[:, : 2 * hd])
                r, z = rz[:, :hd], rz[:, hd:]
                n = np.tanh(gx[t, :, 2 * hd :] + r * (gh[:, 2 * hd :] + w["gru.bhn"]))
                h = n + z * (h - n)
                after.append(h)
            before, after = np.concatenate(before), np.concatenate(after)
            pairs = [("gru.wx", x.reshape(-1, e)), ("gru.wh", before), ("proj.w", after)]
            if embed_out:
                pairs.append(("embed", after @ pt + w["proj.b"]))
            for name, a in pairs:
                acc[name] += (a.T @ a).astype(np.float64)
    return acc


def export(model, vocab_path, path, dtype="f32", hess=None):
    """Writes `model` to `path` in `dtype` (FORMAT.md). For int8, `hess` (from
    hessians(): calibration inputs per tensor name) selects calibrated rounding
    (quantize_calibrated; the embedding with quantize_embed when hess holds
    "embed.count") for the tensors it names; the others, or all without it,
    are rounded to nearest (quantize_rows). The file's format is the same."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
    v, e, h = model.sizes
    arrays = {}
    for name, w in tensors(model).items():
        w = w.astype(mx.float32)
        if dtype == "bf16":
            arrays[name] = w.astype(mx.bfloat16)
        elif dtype == "int8" and w.ndim == 2:
            if hess is not None and name == "embed" and "embed.count" in hess:
                arrays[name], arrays[name + ".scale"] = quantize_embed(np.array(w), hess[name], hess["embed.count"],
                                                                       np.array(model.gru.Wx))
            elif hess is not None and name in hess:
                arrays[name], arrays[name + ".scale"] = quantize_calibrated(np.array(w), hess[name])
            else:
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
    quant = affine_quant(meta, path, e, h)
    f32 = {}
    for name in shapes(v, e, h):
        a = arrays[name]
        f32[name] = a.astype(mx.float32) * arrays[name + ".scale"][:, None] if name + ".scale" in arrays \
            else a.astype(mx.float32)
        if quant and name in quant[0]:  # what the model computes with (FORMAT.md)
            bits, group = quant[0][name], quant[1]
            f32[name] = mx.dequantize(*mx.quantize(f32[name], group, bits), group, bits)
    return from_tensors(f32), meta


def affine_quant(meta, path, e, h):
    """({matrix: bits}, group) of a file with `quant_bits` / `quant_group`
    (a matrix's own `quant_bits.<matrix>` in place of quant_bits), or None."""
    own = sorted(k for k in meta if k.startswith("quant_bits."))
    for key in own:
        if key[len("quant_bits."):] not in MATRICES:
            raise FormatError(f"{path}: metadata {key}: unknown key (a matrix's own bits go under "
                              + ", ".join(f"quant_bits.{n}" for n in MATRICES) + ")")
    if "quant_bits" not in meta and "quant_group" not in meta:
        if own:
            raise FormatError(f"{path}: metadata {own[0]} needs quant_bits and quant_group beside it")
        return None
    if "quant_bits" not in meta or "quant_group" not in meta:
        raise FormatError(f"{path}: metadata quant_bits and quant_group go together")
    # Exactly the strings the Rust loader takes (no spaces, no signs).
    if meta["quant_bits"] not in ("4", "8") or meta["quant_group"] not in ("32", "64"):
        raise FormatError(f"{path}: quant_bits {meta['quant_bits']!r} / quant_group {meta['quant_group']!r} "
                          "not allowed (FORMAT.md: 4 or 8 / 32 or 64)")
    bits, group = int(meta["quant_bits"]), int(meta["quant_group"])
    if e % group or h % group or meta["dtype"] == "int8":
        raise FormatError(f"{path}: quant_bits {bits} / quant_group {group} not allowed here (FORMAT.md: "
                          "embed and hidden multiples of the group, an f32 or bf16 file)")
    per = {}
    for name in MATRICES:
        key = "quant_bits." + name
        value = meta.get(key, str(bits))
        if value not in ("4", "8"):
            raise FormatError(f"{path}: metadata {key} is {value!r}, expected 4 or 8")
        per[name] = int(value)
    return per, group


def export_quantized(tensors_path, like_path, path, bits, group, matrix_bits=None):
    """Writes `path`: the bf16 tensors of `tensors_path` (a student of
    training/qat.py) as a model file with `like_path`'s metadata (the
    teacher's: same shape and vocabulary) plus quant_bits / quant_group, so
    every backend runs them through that affine quantization (FORMAT.md).
    `matrix_bits` ({matrix: bits}, e.g. {"embed": 8}) gives matrices bits of
    their own: quant_bits.<matrix>, written where they differ from `bits`."""
    matrix_bits = dict(matrix_bits or {})
    unknown = sorted(set(matrix_bits) - set(MATRICES))
    if unknown:
        raise ValueError(f"matrix_bits names {unknown}, not matrices {MATRICES}")
    arrays = mx.load(tensors_path)
    _, meta = mx.load(like_path, return_metadata=True)
    v, e, h = (int(meta[k]) for k in ("vocab_size", "embed_dim", "hidden_dim"))
    for name, shape in shapes(v, e, h).items():
        if name not in arrays or tuple(arrays[name].shape) != tuple(shape):
            raise FormatError(f"{tensors_path}: tensor `{name}` missing or not {list(shape)}")
    out = {name: arrays[name].astype(mx.bfloat16) for name in shapes(v, e, h)}
    meta = {k: val for k, val in meta.items() if not k.startswith("quant_")}  # the teacher's own, if any
    meta = dict(meta, dtype="bf16", quant_bits=str(bits), quant_group=str(group))
    meta.update({f"quant_bits.{n}": str(b) for n, b in matrix_bits.items() if b != bits})
    mx.eval(out)
    mx.save_safetensors(path, out, metadata=meta)
    return path


def from_tensors(t):
    """A LayaLM from tensors under the file's names (f32, any array type)."""
    t = {k: mx.array(v).astype(mx.float32) for k, v in t.items()}
    v, e = t["embed"].shape
    model = LayaLM(v, e, t["gru.wh"].shape[1])
    model.embed.weight, model.gru.Wx, model.gru.Wh = t["embed"], t["gru.wx"], t["gru.wh"]
    model.gru.b, model.gru.bhn = t["gru.b"], t["gru.bhn"]
    model.proj.weight, model.proj.bias, model.out_b = t["proj.w"], t["proj.b"], t["out.b"]
    return model


DTYPE_SUFFIXES = ("-bf16", "-int8", "-f32", "-q4")


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
