#!/usr/bin/env python3
"""Writes a weights file in models/FORMAT.md's layout (f32) filled with
seeded random numbers, for timing runs on machines where the trained default
model is not at hand (latency depends on the shape, not on the values).

    python3 benches/mlx_synth_model.py OUT.safetensors [--vocab 16384 --embed 256 --hidden 512]
"""

import argparse

import mlx.core as mx


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument("--embed", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    mx.random.seed(a.seed)
    V, E, H = a.vocab, a.embed, a.hidden

    def u(shape, scale):
        return mx.random.uniform(-scale, scale, shape)

    w = {
        "embed": u((V, E), 0.5),
        "gru.wx": u((3 * H, E), 4.0 / E**0.5),
        "gru.wh": u((3 * H, H), 2.0 / H**0.5),
        "gru.b": u((3 * H,), 0.1),
        "gru.bhn": u((H,), 0.1),
        "proj.w": u((E, H), 2.0 / H**0.5),
        "proj.b": u((E,), 0.1),
        "out.b": u((V,), 0.5),
    }
    meta = {
        "laya.format": "1",
        "arch": "gru-tied",
        "tokenizer": "laya-tok-1",
        "vocab_size": str(V),
        "embed_dim": str(E),
        "hidden_dim": str(H),
        "vocab_sha256": "synthetic",
        "dtype": "f32",
    }
    mx.save_safetensors(a.out, w, metadata=meta)


if __name__ == "__main__":
    main()
