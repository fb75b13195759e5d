"""The GPU trainer under PyTorch (cuDNN's fused GRU): the same model and
equations as model.py, written under models/FORMAT.md's names (f32 shards,
see shards.py). PyTorch's GRU has the same gate order (r, z, n); its two
input-side biases fold into one: b = b_ih + [b_hr, b_hz, 0], bhn = b_hn.

Truncated BPTT as train.py (`data.stream_windows`: each batch row reads on
through its own stretch of the stream and carries its state), bfloat16
autocast for the matrix products (float32 weights, optimizer and loss),
AdamW with warm-up and cosine decay over a step count sized from a measured
step time, gradient clipping. Checkpoints (model, optimizer, carried state,
history) every `ckpt_every` steps and when stopped; a second run with the
same --ckpt resumes the same run. Prints tokens/s of training alone."""

import argparse
import glob
import json
import math
import os
import sys
import time
from dataclasses import asdict, replace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data, shards
from .config import Config, config, parse_variant
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

    @torch.no_grad()
    def load_format_tensors(self, t):
        """The inverse of format_tensors: a models/FORMAT.md file's tensors
        (f32 or bf16, as torch tensors) into this model."""
        g, h = self.gru, self.gru.hidden_size
        self.embed.weight.copy_(t["embed"])
        g.weight_ih_l0.copy_(t["gru.wx"])
        g.weight_hh_l0.copy_(t["gru.wh"])
        g.bias_ih_l0.copy_(t["gru.b"])
        g.bias_hh_l0.copy_(torch.cat([torch.zeros(2 * h), t["gru.bhn"].float()]))
        self.proj.weight.copy_(t["proj.w"])
        self.proj.bias.copy_(t["proj.b"])
        self.out_b.copy_(t["out.b"])


def lr_at(cfg, step):
    """Linear warm-up over cfg.warmup steps, then cosine decay to min_lr at cfg.steps (train.schedule)."""
    if step < cfg.warmup:
        return cfg.lr / cfg.warmup + (cfg.lr - cfg.lr / cfg.warmup) * step / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))


def within_vocab(ids, v):
    """A stream encoded with a larger vocabulary read with its first `v` tokens
    (vocab.choose orders by frequency: the smaller vocabulary is a prefix of
    the larger), the rest <unk> (id 0)."""
    return ids if int(ids.max(initial=0)) < v else np.where(ids < v, ids, 0).astype(ids.dtype)


@torch.no_grad()
def evaluate(model, ids, vocab_tokens, tokens, dev, rows=64, window=512):
    """Perplexity and next-word top-1/top-3 (evaluate.py's measures) of a stream
    read as `rows` contiguous rows with the state carried across windows."""
    words = torch.tensor([t not in SPECIALS and is_word(t) for t in vocab_tokens], device=dev)
    ids = ids[: tokens + 1]
    n = (len(ids) - 1) // rows * rows
    if n < rows:
        return None
    x = torch.tensor(ids[:n].astype(np.int64), device=dev).view(rows, -1)
    y = torch.tensor(ids[1 : n + 1].astype(np.int64), device=dev).view(rows, -1)
    nll = top1 = top3 = 0.0
    hidden = None
    target_word = words[y] | (y == 0)
    was_training = model.training
    model.eval()
    for s in range(0, x.shape[1], window):
        logits, hidden = model(x[:, s : s + window], hidden)
        yb = y[:, s : s + window]
        nll += F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="sum").item()
        wl = logits.masked_fill(~words, -float("inf"))
        best = wl.topk(3, dim=-1).indices
        m = target_word[:, s : s + window]
        top1 += ((best[..., 0] == yb) & m).sum().item()
        top3 += ((best == yb[..., None]).any(-1) & m).sum().item()
    model.train(was_training)
    nw = max(int(target_word.sum().item()), 1)
    return {"tokens": int(y.numel()), "loss": nll / y.numel(), "perplexity": math.exp(nll / y.numel()),
            "unk_rate": float((y == 0).float().mean().item()), "words": nw,
            "next_word_top1": top1 / nw, "next_word_top3": top3 / nw}


def speed(shapes, v=16384, e=256, h=768, steps=10):
    """Tokens/s of this model's training step (cuDNN's fused GRU, bfloat16
    autocast) for (batch, window) shapes, on random ids."""
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


class Trainer:
    """One run: model, optimizer, carried state and history, saved to and
    resumed from `ckpt` (a folder)."""

    def __init__(self, cfg, vocab_tokens, ckpt, dev, resume=True, log=print):
        self.cfg, self.vocab_tokens, self.ckpt, self.dev, self.log = cfg, vocab_tokens, ckpt, dev, log
        self.step, self.history, self.hidden = 0, [], None
        path = os.path.join(ckpt, "state.pt")
        saved = torch.load(path, map_location=dev, weights_only=False) if resume and os.path.exists(path) else None
        if saved:
            self.cfg = cfg = Config(**saved["config"])
        torch.manual_seed(cfg.seed)
        self.model = LayaTorch(len(vocab_tokens), cfg.embed_dim, cfg.hidden_dim, cfg.dropout).to(dev)
        fused = dev == "cuda"
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused)
        if saved:
            self.model.load_state_dict(saved["model"])
            self.opt.load_state_dict(saved["optimizer"])
            self.step, self.history, self.hidden = saved["step"], saved["history"], saved["hidden"]
            log(f"resumed from {ckpt} at step {self.step} of {cfg.steps}")

    def sync(self):
        if self.dev == "cuda":
            torch.cuda.synchronize()

    def save(self):
        os.makedirs(self.ckpt, exist_ok=True)
        tmp = os.path.join(self.ckpt, "state.pt.tmp")
        torch.save({"config": asdict(self.cfg), "step": self.step, "history": self.history, "hidden": self.hidden,
                    "model": self.model.state_dict(), "optimizer": self.opt.state_dict()}, tmp)
        os.replace(tmp, os.path.join(self.ckpt, "state.pt"))
        with open(os.path.join(self.ckpt, "state.json"), "w") as f:
            json.dump({"step": self.step, "config": asdict(self.cfg), "history": self.history}, f, indent=1)

    def train_step(self, ids):
        cfg, dev = self.cfg, self.dev
        x, y, fresh = data.stream_windows(ids, cfg, self.step) if cfg.tbptt else (*data.windows(ids, cfg, self.step), True)
        x = torch.from_numpy(x).to(dev, non_blocking=True).long()
        y = torch.from_numpy(y).to(dev, non_blocking=True).long()
        torch.manual_seed(cfg.seed * 1_000_003 + self.step)  # dropout masks depend on the step alone: resumable
        for g in self.opt.param_groups:
            g["lr"] = lr_at(cfg, self.step)
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=cfg.matmul_dtype == "bfloat16"):
            logits, last = self.model(x, None if fresh else self.hidden)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip)
        self.opt.step()
        self.hidden = last.detach().float() if cfg.tbptt else None
        self.step += 1
        return loss.detach()

    def run(self, ids, valid, stop_after=None):
        """Trains to cfg.steps or until `stop_after` seconds have passed (then saves and returns)."""
        cfg, tokens_per_step = self.cfg, self.cfg.batch_size * self.cfg.seq_len
        self.model.train()
        t0, eval_seconds, start, avg, losses = time.time(), 0.0, self.step, None, []
        while self.step < cfg.steps:
            losses.append(self.train_step(ids))
            timed_out = stop_after is not None and time.time() - t0 > stop_after
            last = self.step == cfg.steps or timed_out
            evaluating = self.step % cfg.eval_every == 0 or last
            if len(losses) == 100 or evaluating:
                for v in torch.stack(losses).tolist():
                    avg = v if avg is None else 0.98 * avg + 0.02 * v
                losses = []
                rate = (self.step - start) * tokens_per_step / max(time.time() - t0 - eval_seconds, 1e-9)
                if self.step % 500 < 100 or last:
                    self.log(f"step {self.step}/{cfg.steps} loss {avg:.3f} lr {lr_at(cfg, self.step):.2e} "
                             f"{rate / 1e6:.3f} M tok/s {time.time() - t0:.0f}s")
            if evaluating:
                self.sync()
                seconds = time.time() - t0
                ev = {"step": self.step, "train_loss": round(avg, 4), "seconds": round(seconds, 1),
                      "tokens_per_s": round((self.step - start) * tokens_per_step / max(seconds - eval_seconds, 1e-9))}
                for name, v_ids in valid.items():
                    r = evaluate(self.model, v_ids, self.vocab_tokens, cfg.eval_tokens, self.dev)
                    ev[f"{name}_loss"] = round(r["loss"], 4) if r else None
                eval_seconds += time.time() - t0 - seconds
                self.history.append(ev)
                self.log(" ".join(f"{k}={v}" for k, v in ev.items()))
            if self.step % cfg.ckpt_every == 0 or last:
                self.save()
            if timed_out:
                self.log(f"stopped after {stop_after:.0f}s at step {self.step} of {cfg.steps}; run again to resume")
                return False
        return True

    def seconds_per_step(self, ids, warm=5, timed=20):
        """Measured time of one training step on a throw-away copy of the state (sizes a run)."""
        saved = ({k: v.clone() for k, v in self.model.state_dict().items()}, self.step, self.hidden)
        for i in range(warm + timed):
            if i == warm:
                self.sync()
                t0 = time.time()
            self.train_step(ids)
        self.sync()
        sec = (time.time() - t0) / timed
        self.model.load_state_dict(saved[0])
        self.step, self.hidden = saved[1], saved[2]
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay,
                                     fused=self.dev == "cuda")
        return sec


def with_steps(cfg, steps):
    """`cfg` sized to `steps`: six evaluations and twelve checkpoints along the run."""
    return replace(cfg, steps=steps, eval_every=max(1, steps // 6), ckpt_every=max(1, steps // 12))


def test_streams():
    """name -> stream of every encoded test stream (test.prose, test.code, test.<language>)."""
    names = sorted(os.path.basename(p)[: -len(".u16")] for p in glob.glob(os.path.join(data.DATA, "test.*.u16")))
    return {n: data.load(n) for n in names}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m training.torch_train", description=__doc__.split("\n\n")[0])
    p.add_argument("--speed", nargs="*", help="only measure throughput for BxT shapes, e.g. 1024x32 2048x64")
    p.add_argument("--config", default="gpu-fast")
    p.add_argument("--vocab", required=False, help="the vocabulary file (its length is the model's V)")
    p.add_argument("--vocab-size", type=int, help="use the first N tokens of --vocab (streams encoded with it)")
    p.add_argument("--embed", type=int, help="E (overrides the config)")
    p.add_argument("--hidden", type=int, help="H (overrides the config)")
    p.add_argument("--set", default="", help="other overrides of the config, e.g. tbptt=true,batch_size=8")
    p.add_argument("--minutes", type=float, help="size a fresh run's step count to this many minutes")
    p.add_argument("--steps", type=int, help="a fresh run's step count; for a resumed run a larger count extends it "
                   "(its cosine decay is stretched to the new end, so the learning rate rises again, to where the "
                   "longer schedule would be, and decays once more: several calls make one longer run)")
    p.add_argument("--stop-after", type=float, help="stop (with a checkpoint) after this many minutes")
    p.add_argument("--ckpt", help="checkpoint folder (resumed from when it holds one)")
    p.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    p.add_argument("--out", help="stem of the f32 shards and the results (.json) written when the run completes")
    p.add_argument("--eval-tokens", type=int, default=2_000_000, help="final evaluation: tokens of each test stream")
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--init", help="a fresh run starts from this model file's weights (models/FORMAT.md, f32, "
                   "bf16 or int8, the same shape and vocabulary): fine-tuning, e.g. on prose alone")
    a = p.parse_args(argv)
    if a.speed is not None:
        return speed([tuple(int(n) for n in s.split("x")) for s in a.speed], v=a.vocab_size or 16384,
                     e=a.embed or 256, h=a.hidden or 768)
    if not (a.vocab and a.ckpt and a.out):
        p.error("--vocab, --ckpt and --out are required to train")
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    dev = "cpu" if a.cpu or not torch.cuda.is_available() else "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    vocab_tokens = open(a.vocab, encoding="utf-8").read().split("\n")[:-1][: a.vocab_size]
    v = len(vocab_tokens)
    cfg = config(a.config, embed_dim=a.embed, hidden_dim=a.hidden, steps=a.steps, **parse_variant(a.set))
    trainer = Trainer(cfg, vocab_tokens, a.ckpt, dev, resume=not a.fresh, log=log)
    train_ids = within_vocab(data.load("train"), v)
    valid = {k: within_vocab(data.load(f"valid.{k}"), v) for k in ("prose", "code")}
    log(f"torch {torch.__version__} on {torch.cuda.get_device_name() if dev == 'cuda' else 'cpu'}: "
        f"V={v} E={trainer.cfg.embed_dim} H={trainer.cfg.hidden_dim}, "
        f"{sum(p.numel() for p in trainer.model.parameters()):,d} parameters; {len(train_ids):,d} training tokens; "
        f"batch {trainer.cfg.batch_size} x {trainer.cfg.seq_len}{' (truncated BPTT)' if trainer.cfg.tbptt else ''}, "
        f"{trainer.cfg.matmul_dtype} matmuls")
    if trainer.step > 0 and a.steps and a.steps > trainer.cfg.steps:
        log(f"extended from {trainer.cfg.steps} to {a.steps} steps")
        trainer.cfg = with_steps(trainer.cfg, a.steps)
    if trainer.step == 0 and a.init:
        from safetensors.torch import load_file

        trainer.model.load_format_tensors(shards.dequantized(load_file(a.init), lambda v: v.float()))
        log(f"weights from {a.init}")
    if trainer.step == 0 and a.minutes:
        per_step = trainer.seconds_per_step(train_ids)
        steps = int(a.minutes * 60 / per_step)
        trainer.cfg = with_steps(trainer.cfg, steps)
        tokens = trainer.cfg.batch_size * trainer.cfg.seq_len
        log(f"{per_step * 1000:.1f} ms/step ({tokens / per_step / 1e6:.2f} M tok/s) -> {steps} steps in "
            f"{a.minutes} min ({steps * tokens / len(train_ids):.2f} passes over the training stream)")
    t0 = time.time()
    done = trainer.run(train_ids, valid, None if a.stop_after is None else a.stop_after * 60)
    log(f"trained {time.time() - t0:.0f}s this call")
    if not done:
        return 0
    results = {"framework": f"torch {torch.__version__}", "steps": trainer.step, "config": asdict(trainer.cfg),
               "vocab_size": v, "history": trainer.history, "test": {}}
    for name, ids in test_streams().items():
        r = evaluate(trainer.model, within_vocab(ids, v), vocab_tokens, a.eval_tokens, dev)
        if r:
            results["test"][name] = r
            log(f"{name:18s} tokens {r['tokens']:>9,d}  ppl {r['perplexity']:7.2f}  unk {r['unk_rate']:.2%}  "
                f"next-word top1 {r['next_word_top1']:.2%}  top3 {r['next_word_top3']:.2%}")
    shards.save(trainer.model.format_tensors(), a.out)
    with open(a.out + ".json", "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
