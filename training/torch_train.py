"""PyTorch fallback for the GPU run, used only if MLX cannot run on the CUDA
machine: the same model, data order, schedule and optimizer as train.py, and
the weights written under models/FORMAT.md's names (f32 shards, see shards.py).
PyTorch's GRU has the same gate order (r, z, n); its two input-side biases
fold into one: b = b_ih + [b_hr, b_hz, 0], bhn = b_hn."""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data, shards
from .config import config
from .tokenizer import SPECIALS, is_word


class LayaTorch(nn.Module):
    def __init__(self, v, e, h, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(v, e)
        self.drop = nn.Dropout(dropout)  # as model.LayaLM: embeddings in, states out
        self.gru = nn.GRU(e, h, batch_first=True)
        self.proj = nn.Linear(h, e)
        self.out_b = nn.Parameter(torch.zeros(v))

    def forward(self, x, hidden=None):
        states, last = self.gru(self.drop(self.embed(x)), hidden)
        return self.proj(self.drop(states)) @ self.embed.weight.T + self.out_b, last

    def format_tensors(self):
        g, h = self.gru, self.gru.hidden_size
        b = g.bias_ih_l0 + torch.cat([g.bias_hh_l0[: 2 * h], torch.zeros_like(g.bias_hh_l0[2 * h :])])
        t = {"embed": self.embed.weight, "gru.wx": g.weight_ih_l0, "gru.wh": g.weight_hh_l0, "gru.b": b,
             "gru.bhn": g.bias_hh_l0[2 * h :], "proj.w": self.proj.weight, "proj.b": self.proj.bias,
             "out.b": self.out_b}
        return {k: v.detach().float().cpu().numpy() for k, v in t.items()}


def lr_at(cfg, step, progress):
    """Warm-up over cfg.warmup steps, then cosine decay over `progress` (0..1: the
    fraction of the time budget used), as train.schedule does over steps."""
    if step < cfg.warmup:
        return cfg.lr / cfg.warmup + (cfg.lr - cfg.lr / cfg.warmup) * step / cfg.warmup
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(progress, 1.0)))


@torch.no_grad()
def evaluate(model, ids, vocab_tokens, tokens, dev, rows=64, window=512):
    words = torch.tensor([t not in SPECIALS and is_word(t) for t in vocab_tokens], device=dev)
    ids = ids[: tokens + 1]
    n = (len(ids) - 1) // rows * rows
    x = torch.tensor(ids[:n].astype(np.int64), device=dev).view(rows, -1)
    y = torch.tensor(ids[1 : n + 1].astype(np.int64), device=dev).view(rows, -1)
    nll = top1 = top3 = 0.0
    hidden = None
    target_word = words[y] | (y == 0)
    for s in range(0, x.shape[1], window):
        logits, hidden = model(x[:, s : s + window], hidden)
        yb = y[:, s : s + window]
        nll += F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="sum").item()
        wl = logits.masked_fill(~words, -float("inf"))
        best = wl.topk(3, dim=-1).indices
        m = target_word[:, s : s + window]
        top1 += ((best[..., 0] == yb) & m).sum().item()
        top3 += ((best == yb[..., None]).any(-1) & m).sum().item()
    nw = max(int(target_word.sum().item()), 1)
    return {"tokens": int(y.numel()), "perplexity": math.exp(nll / y.numel()),
            "unk_rate": float((y == 0).float().mean().item()), "words": nw,
            "next_word_top1": top1 / nw, "next_word_top3": top3 / nw}


def speed(shapes, v=16384, e=256, h=768, steps=10):
    """Tokens/s of this model's training step under PyTorch (cuDNN's fused GRU,
    bfloat16 autocast) for (batch, window) shapes, on random ids: a reference
    point for the MLX trainer on the same GPU."""
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True
    model = LayaTorch(v, e, h).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for b, t in shapes:
        x = torch.randint(0, v, (b, t + 1), device=dev)
        times = []
        for i in range(3 + steps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits, _ = model(x[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), x[:, 1:].flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            torch.cuda.synchronize()
            if i >= 3:
                times.append(time.perf_counter() - t0)
        sec = float(np.median(times))
        print(f"torch {torch.__version__} cuDNN GRU bf16 autocast B={b} T={t}: {sec * 1e3:.1f} ms/step, "
              f"{b * t / sec:,.0f} tokens/s, peak {torch.cuda.max_memory_allocated() / 1e9:.1f} GB", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--speed", nargs="*", help="only measure throughput for BxT shapes, e.g. 1024x32 2048x64")
    p.add_argument("--config", default="gpu")
    p.add_argument("--minutes", type=float, help="training time budget")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--vocab")
    p.add_argument("--out", help="stem of the f32 shards")
    p.add_argument("--eval-tokens", type=int, default=1_000_000)
    a = p.parse_args(argv)
    if a.speed is not None:
        return speed([tuple(int(n) for n in s.split("x")) for s in a.speed])
    if not (a.minutes and a.vocab and a.out):
        p.error("--minutes, --vocab and --out are required to train")
    cfg = config(a.config, batch_size=a.batch_size, seq_len=a.seq_len, lr=a.lr)
    torch.manual_seed(cfg.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = "cuda"
    vocab_tokens = open(a.vocab, encoding="utf-8").read().split("\n")[:-1]
    v = len(vocab_tokens)
    model = LayaTorch(v, cfg.embed_dim, cfg.hidden_dim, cfg.dropout).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    train_ids = data.load("train")
    print(f"torch {torch.__version__}: V={v} E={cfg.embed_dim} H={cfg.hidden_dim}, "
          f"{sum(p.numel() for p in model.parameters()):,d} parameters, {len(train_ids):,d} tokens", flush=True)
    t0, avg, budget, step = time.time(), None, a.minutes * 60, 0
    while True:
        progress = (time.time() - t0) / budget
        if progress >= 1:
            break
        x, y = data.windows(train_ids, cfg, step)
        x, y = torch.from_numpy(x).long().to(dev, non_blocking=True), torch.from_numpy(y).long().to(dev)
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step, progress)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        step += 1
        if step % 50 == 0:
            avg = loss.item() if avg is None else 0.8 * avg + 0.2 * loss.item()
        if step % 500 == 0:
            print(f"step {step} loss {avg:.3f} {time.time() - t0:.0f}s", flush=True)
    seconds = time.time() - t0
    model.eval()
    results = {"framework": f"torch {torch.__version__}", "train_seconds": round(seconds, 1), "steps": step,
               "config": vars(cfg)}
    for kind in ("prose", "code"):
        for split in ("valid", "test"):
            results[f"{split}.{kind}"] = evaluate(model, data.load(f"{split}.{kind}"), vocab_tokens,
                                                  a.eval_tokens, dev)
            print(split, kind, json.dumps(results[f"{split}.{kind}"]), flush=True)
    shards.save(model.format_tensors(), a.out)
    with open(a.out + ".json", "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
