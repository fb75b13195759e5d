"""What the far edit's bounded re-read costs the model: the state after
reading only the last N tokens from `<s>` (as `engine::context` does after a
jump, N = `Tuning::reread`, 64 by default) against longer reads, at 1,500
random word positions at least 260 tokens into held-out documents.

    .venv/bin/python benches/reread_length.py [--model M] FILE...

Prints per N: next-word top-1 (the model alone, over vocabulary words), how
often its top word is the one after 256 tokens and after 64, and the mean
negative log-likelihood of the next token. numpy on the bf16 file's numbers
(mlx only reads the file)."""

import argparse
import os
import sys
import time

import mlx.core as mx
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from training.tokenizer import SPECIALS, is_word, tokenize, vocab_form  # noqa: E402

LENGTHS = (256, 128, 64, 48, 32, 24, 16)


def weights(path):
    return {k: np.array(v.astype(mx.float32)) for k, v in mx.load(path).items()}


def last_states(w, x):
    """The GRU (models/FORMAT.md) over x [B, T] from a zero state: h after the last token."""
    hidden = w["gru.wh"].shape[1]
    gx = w["embed"][x] @ w["gru.wx"].T + w["gru.b"]
    h = np.zeros((x.shape[0], hidden), np.float32)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(x.shape[1]):
        gh = h @ w["gru.wh"].T
        g = gx[:, t]
        rz = sigmoid(g[:, : 2 * hidden] + gh[:, : 2 * hidden])
        r, z = rz[:, :hidden], rz[:, hidden:]
        n = np.tanh(g[:, 2 * hidden :] + r * (gh[:, 2 * hidden :] + w["gru.bhn"]))
        h = n + z * (h - n)
    return h


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default=os.path.join(ROOT, "models", "laya-default-bf16.safetensors"))
    p.add_argument("--vocab", default=os.path.join(ROOT, "models", "laya-default.vocab.txt"))
    p.add_argument("--positions", type=int, default=1500)
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    w = weights(a.model)
    vocab = [line.rstrip("\n") for line in open(a.vocab, encoding="utf-8")]
    ids_of = {t: i for i, t in enumerate(vocab)}
    words = np.array([is_word(t) and t not in SPECIALS for t in vocab])
    rng = np.random.default_rng(1)
    for f in a.files:
        streams, positions = [], []
        for doc in open(f, encoding="utf-8").read().split("\f\n"):
            ids = [ids_of.get(vocab_form(t), 0) for t in tokenize(doc)]
            positions += [(len(streams), t) for t in range(max(LENGTHS) + 4, len(ids)) if words[ids[t]]]
            streams.append(ids)
        chosen = [positions[i] for i in rng.choice(len(positions), min(a.positions, len(positions)), replace=False)]
        target = np.array([streams[d][t] for d, t in chosen])
        top = {}
        for n in LENGTHS:
            t0 = time.time()
            x = np.array([[1] + streams[d][t - n : t] for d, t in chosen])
            logits = (last_states(w, x) @ w["proj.w"].T + w["proj.b"]) @ w["embed"].T + w["out.b"]
            top[n] = np.where(words, logits, -np.inf).argmax(-1)
            m = logits.max(-1, keepdims=True)
            logp = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
            nll = -logp[np.arange(len(target)), target].mean()
            print(f"{os.path.basename(f)} N={n}: next-word top-1 {np.mean(top[n] == target) * 100:.2f} %, "
                  f"same top word as N=256 {np.mean(top[n] == top[256]) * 100:.2f} % / as N=64 "
                  f"{np.mean(top[n] == top.get(64, top[n])) * 100:.2f} %, nll {nll:.4f} ({time.time() - t0:.0f} s)",
                  flush=True)


if __name__ == "__main__":
    main()
