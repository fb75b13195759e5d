"""An experiment of issue 17, outside the product: the model itself trained on
the user's earlier writing, then scored with and without the history the
engine learns (BENCHMARKS.md, "The model itself trained on the learnt text").

    python benches/learn_finetune.py LEARN.txt OUT_DIR [--params all] [--lr 3e-4] [--epochs 2]
    target/release/laya eval SCORE.txt --model OUT_DIR/laya-default-bf16.safetensors [--learn LEARN.txt]

Needs PyTorch and safetensors (a CPU is enough: two passes over 25,000
tokens take about 25 s of two cores). Starts from models/laya-default-bf16.safetensors,
reads the learn file's documents (form-feed lines between them) as one
token stream in 16 rows of 64-token windows, the state carried, and writes
OUT_DIR/laya-default-bf16.safetensors with the original metadata, beside a
copy of the default's vocabulary, word list and kinds file (a bf16 file
reads its base model's lists, models/FORMAT.md)."""

import argparse
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from training.torch_train import LayaTorch  # noqa: E402
from training.vocab import Vocab  # noqa: E402

MODELS = os.path.join(ROOT, "models")


def trainable(m, which):
    """The parameters each --params choice trains (the rest stay as shipped)."""
    proj = [m.proj.weight, m.proj.bias]
    return {"proj": proj, "projout": proj + [m.out_b], "gru": proj + [m.out_b] + list(m.gru.parameters()),
            "all": list(m.parameters())}[which]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("learn")
    p.add_argument("out_dir")
    p.add_argument("--params", default="all", choices=("proj", "projout", "gru", "all"))
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rows", type=int, default=16)
    p.add_argument("--window", type=int, default=64)
    a = p.parse_args(argv)

    src = os.path.join(MODELS, "laya-default-bf16.safetensors")
    with safe_open(src, "pt") as f:
        meta = f.metadata()
    shipped = load_file(src)
    t = {k: v.float() for k, v in shipped.items()}
    v, e = t["embed"].shape
    m = LayaTorch(v, e, t["gru.wh"].shape[1])
    m.load_format_tensors(t)

    vocab = Vocab(os.path.join(MODELS, "laya-default.vocab.txt"))
    text = open(a.learn, encoding="utf-8").read()
    ids = np.array([i for doc in text.split("\f\n") if doc.strip() for i in vocab.encode(doc)], dtype=np.int64)
    n = (len(ids) - 1) // a.rows * a.rows
    x = torch.tensor(ids[:n]).view(a.rows, -1)
    y = torch.tensor(ids[1 : n + 1]).view(a.rows, -1)
    print(f"{len(ids):,d} tokens", flush=True)

    for w in m.parameters():
        w.requires_grad_(False)
    params = trainable(m, a.params)
    for w in params:
        w.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=a.lr)
    for epoch in range(a.epochs):
        hidden, total = None, 0.0
        for s in range(0, x.shape[1], a.window):
            logits, hidden = m(x[:, s : s + a.window], hidden)
            hidden = hidden.detach()
            loss = F.cross_entropy(logits.flatten(0, 1), y[:, s : s + a.window].flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * y[:, s : s + a.window].numel()
        print(f"pass {epoch + 1}: loss {total / y.numel():.4f}", flush=True)

    os.makedirs(a.out_dir, exist_ok=True)
    out = {k: torch.from_numpy(w).to(torch.bfloat16) for k, w in m.format_tensors().items()}
    save_file(out | {k: w for k, w in shipped.items() if k not in out}, os.path.join(a.out_dir, "laya-default-bf16.safetensors"),
              metadata=meta)
    for ext in ("vocab", "words", "kinds"):
        shutil.copy(os.path.join(MODELS, f"laya-default.{ext}.txt"), a.out_dir)


if __name__ == "__main__":
    main()
