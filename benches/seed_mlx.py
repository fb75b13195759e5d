#!/usr/bin/env python3
"""Seed-style baseline: the Laya model stepped from Python MLX the way the
original Laya-MLX article measured it (time.perf_counter around the model
call plus mx.eval, one token per step), so BENCHMARKS.md can state the host's
speed as a ratio against it measured in the same run.

    python3 benches/seed_mlx.py models/laya-default.safetensors [--steps 3000]
        [--vocab F.vocab.txt --text F.txt] [--cpu] [--readback] [--json OUT]
"""

import argparse
import json
import random
import sys
import time

import mlx.core as mx
import mlx.nn as nn


class LayaSeed(nn.Module):
    """models/FORMAT.md's GRU with the tied output layer, in mlx.nn parts."""

    def __init__(self, vocab, embed, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.gru = nn.GRU(embed, hidden)
        self.proj = nn.Linear(hidden, embed)
        self.out_b = mx.zeros((vocab,))

    def __call__(self, token, h):
        x = self.embed(token)  # [1, 1, E]
        h = self.gru(x, h)[:, -1, :]  # explicit h: bhn applies from step 1
        logits = self.embed.as_linear(self.proj(h)) + self.out_b
        return logits, h


def load(path):
    """Reads the weights file with mx.load (f32, bf16 or int8) as f32."""
    raw, meta = mx.load(path, return_metadata=True)

    def get(name):
        w = raw[name]
        if w.dtype == mx.int8:
            return w.astype(mx.float32) * raw[name + ".scale"][:, None]
        return w.astype(mx.float32)

    vocab, embed = raw["embed"].shape
    hidden = raw["gru.wh"].shape[1]
    model = LayaSeed(vocab, embed, hidden)
    names = {
        "embed": "embed.weight",
        "gru.wx": "gru.Wx",
        "gru.wh": "gru.Wh",
        "gru.b": "gru.b",
        "gru.bhn": "gru.bhn",
        "proj.w": "proj.weight",
        "proj.b": "proj.bias",
        "out.b": "out_b",
    }
    model.load_weights([(ours, get(theirs)) for theirs, ours in names.items()])
    mx.eval(model.parameters())
    return model, meta


def tokens(args, vocab_size):
    """laya-tok-1 ids of --text, else a reproducible random stream."""
    if args.text and args.vocab:
        with open(args.vocab, encoding="utf-8") as f:
            vocab = {w: i for i, w in enumerate(f.read().split("\n"))}
        with open(args.text, encoding="utf-8") as f:
            text = f.read()
        out, word = [1], []
        for ch in text + " ":
            if ch.isascii() and (ch.isalnum() or ch == "_"):
                word.append(ch)
                continue
            if word:
                out.append(vocab.get("".join(word), 0))
                word = []
            if ch == "\n":
                out.append(vocab.get("<nl>", 0))
            elif ch not in " \t\r\v\f":
                out.append(vocab.get(ch, 0))
        return [t for t in out if t < vocab_size]
    rng = random.Random(7)
    return [1] + [rng.randrange(vocab_size) for _ in range(args.steps + 100)]


def pct(xs, p):
    xs = sorted(xs)
    return xs[round((len(xs) - 1) * p)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--vocab")
    ap.add_argument("--text")
    ap.add_argument("--cpu", action="store_true", help="run on MLX's CPU device")
    ap.add_argument("--json")
    ap.add_argument("--readback", action="store_true", help="also time a run that copies logits to the host")
    args = ap.parse_args()
    if args.cpu:
        mx.set_default_device(mx.cpu)

    t0 = time.perf_counter()
    model, _ = load(args.model)
    load_ms = (time.perf_counter() - t0) * 1e3
    vocab, hidden = model.out_b.shape[0], model.gru.Wh.shape[1]
    stream = tokens(args, vocab)
    steps = min(args.steps, len(stream) - args.warmup)

    def run(readback):
        h = mx.zeros((1, hidden))
        times = []
        for i, t in enumerate(stream[: args.warmup + steps]):
            token = mx.array([[t]])
            start = time.perf_counter()
            logits, h = model(token, h)
            mx.eval(logits, h)
            if readback:  # what a host that ranks words must also do
                memoryview(logits).tobytes()
            elapsed = (time.perf_counter() - start) * 1e6
            if i >= args.warmup:
                times.append(elapsed)
        return {
            "n": len(times),
            "p50_us": pct(times, 0.5),
            "p90_us": pct(times, 0.9),
            "p99_us": pct(times, 0.99),
            "max_us": max(times),
        }

    rows = {
        "python mlx step+logits (perf_counter + mx.eval)": run(False),
    }
    if args.readback:
        rows["same, plus logits copied to the host"] = run(True)
    device = str(mx.default_device())
    print(f"seed-style Python MLX {mx.__version__} on {device}, model {args.model} (load {load_ms:.0f} ms)")
    print("| path | n | p50 us | p90 us | p99 us | max us |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, row in rows.items():
        print(
            f"| {name} | {row['n']} | {row['p50_us']:.1f} "
            f"| {row['p90_us']:.1f} | {row['p99_us']:.1f} | {row['max_us']:.1f} |"
        )
    if args.json:
        out = {"seed_python_mlx": rows["python mlx step+logits (perf_counter + mx.eval)"]}
        if args.readback:
            out["seed_python_mlx_readback"] = rows["same, plus logits copied to the host"]
        out.update(device=device, mlx_version=mx.__version__, load_ms=load_ms)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
