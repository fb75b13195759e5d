"""The training loop: random windows of the token stream, full-softmax
cross-entropy, AdamW with warm-up and cosine decay, gradient clipping.
Seeded; checkpoints every `ckpt_every` steps and resumes from the last one."""

import json
import os
import sys
import time
from dataclasses import asdict

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from mlx.utils import tree_flatten, tree_unflatten

from .data import windows
from .config import CONFIGS, Config, config  # noqa: F401 (re-exported)
from .model import LayaLM, loss_fn


def schedule(cfg):
    """Linear warm-up, then cosine decay to min_lr (driven by the optimizer's own step count)."""
    warm = optim.linear_schedule(cfg.lr / cfg.warmup, cfg.lr, cfg.warmup)
    decay = optim.cosine_decay(cfg.lr, max(1, cfg.steps - cfg.warmup), cfg.min_lr)
    return optim.join_schedules([warm, decay], [cfg.warmup])


def batch(ids, cfg, step):
    x, y = windows(ids, cfg, step)
    return mx.array(x), mx.array(y)


def stream_loss(model, ids, tokens, batch_rows=16, window=256):
    """Mean cross-entropy over the first `tokens` tokens of a stream, read as
    `batch_rows` contiguous rows with the state carried across windows."""
    n = min(len(ids) - 1, tokens) // batch_rows * batch_rows
    if n < batch_rows:
        return float("nan")
    x = np.asarray(ids[:n], dtype=np.int32).reshape(batch_rows, -1)
    y = np.asarray(ids[1 : n + 1], dtype=np.int32).reshape(batch_rows, -1)
    total, count, hidden = 0.0, 0, None
    was_training = model.training
    model.eval()
    for s in range(0, x.shape[1], window):
        logits, hidden = model(mx.array(x[:, s : s + window]), hidden)
        ce = nn.losses.cross_entropy(logits, mx.array(y[:, s : s + window]), reduction="sum")
        total += ce.item()
        count += y[:, s : s + window].size
    model.train(was_training)
    return total / count


class Progress:
    """A progress bar on stderr: redrawn in place on a terminal, a line every 5% otherwise."""

    def __init__(self, total, start=0):
        self.total, self.t0, self.start = total, time.time(), start
        self.tty = sys.stderr.isatty()

    def show(self, step, text):
        done = (step + 1) / self.total
        rate = (step + 1 - self.start) / max(time.time() - self.t0, 1e-9)
        eta = (self.total - step - 1) / max(rate, 1e-9)
        line = f"[{'#' * int(30 * done):30s}] {step + 1}/{self.total} {text} {rate:.1f} it/s eta {eta:.0f}s"
        if self.tty:
            sys.stderr.write("\r" + line + " ")
        elif (step + 1) % max(1, self.total // 20) == 0:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def save_checkpoint(ckpt_dir, model, optimizer, cfg, step, history):
    os.makedirs(ckpt_dir, exist_ok=True)
    model.save_weights(os.path.join(ckpt_dir, "model.safetensors"))
    mx.save_safetensors(os.path.join(ckpt_dir, "optimizer.safetensors"), dict(tree_flatten(optimizer.state)))
    with open(os.path.join(ckpt_dir, "state.json.tmp"), "w") as f:
        json.dump({"step": step, "config": asdict(cfg), "history": history}, f, indent=1)
    os.replace(os.path.join(ckpt_dir, "state.json.tmp"), os.path.join(ckpt_dir, "state.json"))


def setup(vocab_size, cfg):
    """Model, optimizer and the compiled training step for a configuration."""
    mx.random.seed(cfg.seed)
    model = LayaLM(vocab_size, cfg.embed_dim, cfg.hidden_dim, cfg.dropout)
    optimizer = optim.AdamW(learning_rate=schedule(cfg), weight_decay=cfg.weight_decay)
    optimizer.init(model.trainable_parameters())
    # the random state too: dropout draws from it inside the compiled step
    state = [model.state, optimizer.state, mx.random.state]

    @partial_compile(state)
    def step_fn(inputs, targets):
        loss, grads = nn.value_and_grad(model, loss_fn)(model, inputs, targets)
        grads, norm = optim.clip_grad_norm(grads, cfg.clip)
        optimizer.update(model, grads)
        return loss, norm

    return model, optimizer, step_fn, state


def seconds_per_step(train_ids, vocab_size, cfg, warm=5, timed=20):
    """Measured time of one training step (after compilation), to size a run to a time budget."""
    _, _, step_fn, state = setup(vocab_size, cfg)
    for step in range(warm + timed):
        if step == warm:
            t0 = time.time()
        loss, _ = step_fn(*batch(train_ids, cfg, step))
        mx.eval(state, loss)
    return (time.time() - t0) / timed


def train(train_ids, valid, vocab_size, cfg, ckpt_dir, resume=True, log=print, until=None, stop_after=None):
    """Trains (or resumes) a model; `valid` maps a name to a token stream.
    Returns the model and the history of evaluations. `until` stops early (at
    that step, with a checkpoint) as an interruption would; so does
    `stop_after` seconds of training (a run split over several sessions)."""
    model, optimizer, step_fn, state = setup(vocab_size, cfg)
    start, history = 0, []
    state_file = os.path.join(ckpt_dir, "state.json")
    if resume and os.path.exists(state_file):
        with open(state_file) as f:
            st = json.load(f)
        model.load_weights(os.path.join(ckpt_dir, "model.safetensors"))
        # in place: the compiled step holds this very dict
        optimizer.state.update(tree_unflatten(list(mx.load(os.path.join(ckpt_dir, "optimizer.safetensors")).items())))
        start, history = st["step"], st["history"]
        log(f"resumed from {ckpt_dir} at step {start}")
    mx.eval(model.parameters(), optimizer.state)
    n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
    log(f"model: V={vocab_size} E={cfg.embed_dim} H={cfg.hidden_dim}, {n_params:,d} parameters; "
        f"{len(train_ids):,d} training tokens; device {mx.default_device()}")

    bar = Progress(cfg.steps, start)
    t0, avg = time.time(), None
    end = cfg.steps if until is None else min(until, cfg.steps)
    model.train()
    for step in range(start, end):
        mx.random.seed(cfg.seed * 1_000_003 + step)  # dropout masks depend on the step alone: resumable
        loss, norm = step_fn(*batch(train_ids, cfg, step))
        mx.eval(state, loss)
        avg = loss.item() if avg is None else 0.98 * avg + 0.02 * loss.item()
        bar.show(step, f"loss {avg:.3f}")
        timed_out = stop_after is not None and time.time() - t0 > stop_after
        last = step + 1 == end or timed_out
        if (step + 1) % cfg.eval_every == 0 or last:
            ev = {"step": step + 1, "train_loss": round(avg, 4), "seconds": round(time.time() - t0, 1)}
            for name, ids in valid.items():
                ev[f"{name}_loss"] = round(stream_loss(model, ids, cfg.eval_tokens), 4)
            history.append(ev)
            if bar.tty:
                sys.stderr.write("\n")
            log(" ".join(f"{k}={v}" for k, v in ev.items()))
        if (step + 1) % cfg.ckpt_every == 0 or last:
            save_checkpoint(ckpt_dir, model, optimizer, cfg, step + 1, history)
        if timed_out:
            log(f"stopped after {stop_after:.0f}s at step {step + 1} of {cfg.steps}; run again to resume")
            break
    model.eval()
    return model, history


def partial_compile(state):
    """mx.compile with the model and optimizer state as implicit inputs/outputs."""
    def wrap(fn):
        return mx.compile(fn, inputs=state, outputs=state)
    return wrap
