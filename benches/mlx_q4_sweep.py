"""4-bit weight configurations of the default model on MLX, against f32 (issue 16).

Runs the model of models/FORMAT.md with MLX ops (the kernels the bridge calls:
quantize, quantized_matmul, dequantize for the embedding lookup) over the
first N tokens of held-out texts, teacher-forced like benches/mlx_bench.rs,
and prints each configuration's top-1 / top-3 (same set) agreement with the
same weights in f32 and the bytes its four weight matrices take in memory.

Configurations: MLX's own round-to-nearest (what the q4 mode does at load),
group 64 or 32, some matrices kept at 8 bits; and integers chosen offline
GPTQ-style (each column's rounding error compensated on the columns still to
come, through the inverse Hessian of the matrix's calibration inputs) on a
per-group affine grid, packed into MLX's format. Calibration text is this
repository's own Rust sources and documentation, never the measured texts.

    PATH=.venv/bin:$PATH python benches/mlx_q4_sweep.py \\
        --model models/laya-default-bf16.safetensors --steps 1500 \\
        tests/data/heldout-prose.txt tests/data/heldout-code.txt

A measurement tool, not part of the engine: bench output goes to
benches/mlx-results/ and BENCHMARKS.md.
"""

import argparse
import glob
import os
import re

import mlx.core as mx
import numpy as np

MATRICES = ("embed", "gru.wx", "gru.wh", "proj.w")
GRU = MATRICES[1:]


def tokenize(text, vocab, vocab_size):
    """laya-tok-1 (models/FORMAT.md) as mlx_bench's: <s>, then words,
    newlines and single characters; ids past the model's vocabulary dropped."""
    out = [1]
    for m in re.finditer(r"([A-Za-z0-9_]+)|(\n)|[ \t\r\v\f]+|(.)", text, re.S):
        word, newline, other = m.groups()
        tok = word or ("<nl>" if newline else other)
        if tok:
            out.append(vocab.get(tok, 0))
    return [t for t in out if t < vocab_size]


class Linear:
    """One weight matrix W [out, in] as the bridge holds it: f32, or MLX
    affine-quantized (w packed, scales, biases, group, bits)."""

    def __init__(self, w, quant=None):
        self.w, self.quant = w, quant

    @classmethod
    def rounded(cls, w, bits, group):
        """MLX's round-to-nearest, what the q8/q4 modes do at load."""
        return cls(None, (*mx.quantize(w, group, bits), group, bits))

    def nbytes(self):
        if self.quant is None:
            return self.w.nbytes
        return sum(a.nbytes for a in self.quant[:3])

    def apply(self, x):
        if self.quant is None:
            return x @ self.w.T
        w, s, b, group, bits = self.quant
        return mx.quantized_matmul(x, w, s, b, True, group, bits)

    def row(self, tok):
        if self.quant is None:
            return self.w[tok]
        w, s, b, group, bits = self.quant
        return mx.dequantize(w[tok], s[tok], b[tok], group, bits)


def top3_stream(weights, layers, toks):
    """The top-3 ids after each token of `toks`, from a zero state."""
    hid = weights["gru.wh"].shape[1]
    b, bhn = weights["gru.b"][None], weights["gru.bhn"][None]
    pb, ob = weights["proj.b"][None], weights["out.b"][None]
    emb, wx, wh, proj = (layers[k] for k in MATRICES)

    def step(h, tok):
        gx = wx.apply(emb.row(tok)) + b
        gh = wh.apply(h)
        r = mx.sigmoid(gx[:, :hid] + gh[:, :hid])
        z = mx.sigmoid(gx[:, hid : 2 * hid] + gh[:, hid : 2 * hid])
        n = mx.tanh(gx[:, 2 * hid :] + r * (gh[:, 2 * hid :] + bhn))
        h = n + z * (h - n)
        return h, emb.apply(proj.apply(h) + pb) + ob

    step = mx.compile(step)
    h = mx.zeros((1, hid))
    tops = []
    for t in toks:
        h, logits = step(h, mx.array([t]))
        tops.append(np.argsort(-np.array(logits[0]), kind="stable")[:3])
    return np.array(tops)


def agreement(tops, ref):
    top1 = np.mean(tops[:, 0] == ref[:, 0])
    top3 = np.mean([set(a) == set(b) for a, b in zip(tops, ref)])
    return 100 * top1, 100 * top3


# ---- offline (GPTQ-style) 4-bit integers -------------------------------------


def calibration_text(root):
    """Our own sources and docs: real code and prose the model never saw as
    held-out text (the validation split is not on every machine)."""
    code = sorted(glob.glob(os.path.join(root, "src/**/*.rs"), recursive=True))
    prose = [os.path.join(root, p) for p in ("doc/laya.txt", "README.md", "BENCHMARKS.md",
                                              "models/README.md", "training/README.md")]
    read = lambda paths: "\n".join(open(p, encoding="utf-8").read() for p in paths)
    return [read(code), read(prose)]


def hessians(w, streams):
    """Sum of x x^T over each matrix's inputs (f32 model, numpy): the
    embedding as output layer sees proj.w h + proj.b, gru.wx the embedded
    token, gru.wh the previous state, proj.w the new state."""
    f = {k: np.array(v, np.float64) for k, v in w.items()}
    hid = f["gru.wh"].shape[1]
    sig = lambda v: 0.5 * (1 + np.tanh(0.5 * v))
    acc = {k: 0.0 for k in MATRICES}
    for toks in streams:
        x = f["embed"][np.array(toks)]
        gx = x @ f["gru.wx"].T + f["gru.b"]
        h = np.zeros(hid)
        prev, new = [], []
        for t in range(len(toks)):
            gh = f["gru.wh"] @ h
            r, z = sig(gx[t, :hid] + gh[:hid]), sig(gx[t, hid : 2 * hid] + gh[hid : 2 * hid])
            n = np.tanh(gx[t, 2 * hid :] + r * (gh[2 * hid :] + f["gru.bhn"]))
            prev.append(h)
            h = n + z * (h - n)
            new.append(h)
        prev, new = np.array(prev), np.array(new)
        e = new @ f["proj.w"].T + f["proj.b"]
        for k, inp in (("embed", e), ("gru.wx", x), ("gru.wh", prev), ("proj.w", new)):
            acc[k] = acc[k] + inp.T @ inp
    return acc


def group_grid(w, group, levels, weight, ratios=(1.0, 0.95, 0.9, 0.85, 0.8, 0.75)):
    """Per (row, group) scale and bias of an affine grid over the group's
    range shrunk around its centre, the ratio with the smallest
    `weight`-weighted round-to-nearest error (clipping outliers pays when
    the inputs they meet are small)."""
    rows, cols = w.shape
    best_s = best_b = best_e = None
    for ratio in ratios:
        wg = w.reshape(rows, cols // group, group)
        hi, lo = wg.max(-1), wg.min(-1)
        half = (hi - lo) / 2 * ratio
        s, b = np.maximum(2 * half / levels, 1e-8), (hi + lo) / 2 - half
        sf, bf = np.repeat(s, group, 1), np.repeat(b, group, 1)
        q = np.clip(np.round((w - bf) / sf), 0, levels)
        err = ((q * sf + bf - w) ** 2 * weight).reshape(rows, cols // group, group).sum(-1)
        if best_e is None:
            best_s, best_b, best_e = s, b, err
        else:
            m = err < best_e
            best_s[m], best_b[m], best_e[m] = s[m], b[m], err[m]
    return best_s, best_b


def gptq(w, hess, group, bits=4, damp=0.01, block=128):
    """Integers q [rows, cols] in [0, 2^bits) with w ~ q * scale + bias per
    (row, group): the grid fixed first (group_grid), then columns quantized
    largest diag(H) first, each one's error spread over the rest through the
    upper Cholesky factor of the damped inverse Hessian."""
    w = np.asarray(w, np.float64)
    rows, cols = w.shape
    levels = 2**bits - 1
    diag = np.diag(hess).copy()
    s, b = group_grid(w, group, levels, diag)
    order = np.argsort(-diag, kind="stable")
    h = hess[np.ix_(order, order)].copy()
    dead = np.diag(h) <= 0  # inputs that never vary: any value costs nothing
    h[dead, dead] = 1.0
    h[np.diag_indices(cols)] += damp * np.mean(np.diag(h))
    u = np.linalg.cholesky(np.linalg.inv(h)).T
    wp = w[:, order].copy()
    sp, bp = np.repeat(s, group, 1)[:, order], np.repeat(b, group, 1)[:, order]
    q = np.zeros_like(wp)
    for b0 in range(0, cols, block):
        b1 = min(b0 + block, cols)
        err = np.zeros((rows, b1 - b0))
        for j in range(b0, b1):
            q[:, j] = np.clip(np.round((wp[:, j] - bp[:, j]) / sp[:, j]), 0, levels)
            e = (wp[:, j] - (q[:, j] * sp[:, j] + bp[:, j])) / u[j, j]
            wp[:, j + 1 : b1] -= np.outer(e, u[j, j + 1 : b1])
            err[:, j - b0] = e
        wp[:, b1:] -= err @ u[b0:b1, b1:]
    out = np.empty_like(q)
    out[:, order] = q
    return out.astype(np.uint32), s.astype(np.float32), b.astype(np.float32)


def packed(q, s, b, group, bits=4):
    """Our integers in MLX's packed layout (32 // bits per uint32, lowest
    bits first), checked against MLX's own dequantize."""
    rows, cols = q.shape
    per = 32 // bits
    words = np.zeros((rows, cols // per), np.uint32)
    for i in range(per):
        words |= q[:, i::per] << np.uint32(bits * i)
    lin = Linear(None, (mx.array(words), mx.array(s), mx.array(b), group, bits))
    want = q * np.repeat(s, group, 1) + np.repeat(b, group, 1)
    got = np.array(mx.dequantize(*lin.quant[:3], group, bits))
    assert np.allclose(got, want, atol=1e-5), "packing differs from MLX's layout"
    return lin


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--vocab", default="models/laya-default.vocab.txt")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--calibration-tokens", type=int, default=30000)
    ap.add_argument("texts", nargs="+")
    a = ap.parse_args()
    mx.set_default_device(mx.cpu)
    w = {k: v.astype(mx.float32) for k, v in mx.load(a.model).items()}
    vsize = w["embed"].shape[0]
    vocab = {t: i for i, t in enumerate(open(a.vocab, encoding="utf-8").read().split("\n"))}

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    calib = [tokenize(t, vocab, vsize)[: a.calibration_tokens] for t in calibration_text(root)]
    hess = hessians(w, calib)
    print(f"calibration: {sum(map(len, calib))} tokens of src/**/*.rs and docs", flush=True)
    g = {(k, gs): packed(*gptq(np.array(w[k]), hess[k], gs), gs) for k in MATRICES for gs in (64, 32)}

    f32 = lambda k: Linear(w[k])
    rtn = lambda k, bits, gs: Linear.rounded(w[k], bits, gs)
    configs = {
        "q8 g64 all (today's q8)": {k: rtn(k, 8, 64) for k in MATRICES},
        "q4 g64 all (today's q4)": {k: rtn(k, 4, 64) for k in MATRICES},
        "q4 g32 all": {k: rtn(k, 4, 32) for k in MATRICES},
        "embed q8 g64, GRU+proj q4 g32": {"embed": rtn("embed", 8, 64), **{k: rtn(k, 4, 32) for k in GRU}},
        "GPTQ q4 g64 all": {k: g[k, 64] for k in MATRICES},
        "GPTQ q4 g32 all": {k: g[k, 32] for k in MATRICES},
        "embed q8 g64, GRU+proj GPTQ q4 g32": {"embed": rtn("embed", 8, 64), **{k: g[k, 32] for k in GRU}},
        "embed GPTQ q4 g32, GRU+proj q8 g64": {"embed": g["embed", 32], **{k: rtn(k, 8, 64) for k in GRU}},
    }
    for k in MATRICES:
        configs[f"only {k} GPTQ q4 g32, rest f32"] = {**{m: f32(m) for m in MATRICES}, k: g[k, 32]}

    print("| text | configuration | top-1 | top-3 | matrix bytes |")
    print("| --- | --- | ---: | ---: | ---: |")
    for path in a.texts:
        toks = tokenize(open(path, encoding="utf-8").read(), vocab, vsize)[: a.steps]
        ref = top3_stream(w, {k: f32(k) for k in MATRICES}, toks)
        name = os.path.basename(path)
        for label, layers in configs.items():
            t1, t3 = agreement(top3_stream(w, layers, toks), ref)
            size = sum(layers[k].nbytes() for k in MATRICES)
            print(f"| {name} | {label} | {t1:.2f}% | {t3:.2f}% | {size} |", flush=True)


if __name__ == "__main__":
    main()
