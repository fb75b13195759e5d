"""The training loop: random windows of the token stream (or, with `tbptt`,
contiguous windows whose hidden state carries over), full-softmax
cross-entropy, AdamW with warm-up and cosine decay, gradient clipping, one
compiled step. Seeded; checkpoints every `ckpt_every` steps (with the carried
hidden state) and resumes from the last one. Prints its throughput in tokens/s."""

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

from .data import stream_windows, windows
from .config import CONFIGS, Config, config  # noqa: F401 (re-exported)
from .model import LayaLM, loss_and_state


def schedule(cfg):
    """Linear warm-up, then cosine decay to min_lr (driven by the optimizer's own step count)."""
    warm = optim.linear_schedule(cfg.lr / cfg.warmup, cfg.lr, cfg.warmup)
    decay = optim.cosine_decay(cfg.lr, max(1, cfg.steps - cfg.warmup), cfg.min_lr)
    return optim.join_schedules([warm, decay], [cfg.warmup])


def batch(ids, cfg, step):
    """(inputs, targets, fresh): `fresh` when the hidden state starts from zero."""
    if cfg.tbptt:
        x, y, fresh = stream_windows(ids, cfg, step)
    else:
        (x, y), fresh = windows(ids, cfg, step), True
    return mx.array(x), mx.array(y), fresh


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
        self.shown = -1  # the last 5% bucket written (not on a terminal)

    def show(self, step, text):
        done = (step + 1) / self.total
        rate = (step + 1 - self.start) / max(time.time() - self.t0, 1e-9)
        eta = (self.total - step - 1) / max(rate, 1e-9)
        line = f"[{'#' * int(30 * done):30s}] {step + 1}/{self.total} {text} {rate:.1f} it/s eta {eta:.0f}s"
        if self.tty:
            sys.stderr.write("\r" + line + " ")
        elif int(20 * done) > self.shown:
            self.shown = int(20 * done)
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def save_checkpoint(ckpt_dir, model, optimizer, cfg, step, history, hidden=None):
    os.makedirs(ckpt_dir, exist_ok=True)
    model.save_weights(os.path.join(ckpt_dir, "model.safetensors"))
    mx.save_safetensors(os.path.join(ckpt_dir, "optimizer.safetensors"), dict(tree_flatten(optimizer.state)))
    if hidden is not None:  # truncated BPTT: the state the next window starts from
        mx.save_safetensors(os.path.join(ckpt_dir, "hidden.safetensors"), {"hidden": hidden})
    with open(os.path.join(ckpt_dir, "state.json.tmp"), "w") as f:
        json.dump({"step": step, "config": asdict(cfg), "history": history}, f, indent=1)
    os.replace(os.path.join(ckpt_dir, "state.json.tmp"), os.path.join(ckpt_dir, "state.json"))


def setup(vocab_size, cfg):
    """Model, optimizer and the compiled training step for a configuration."""
    mx.random.seed(cfg.seed)
    model = LayaLM(vocab_size, cfg.embed_dim, cfg.hidden_dim, cfg.dropout, getattr(mx, cfg.matmul_dtype))
    optimizer = optim.AdamW(learning_rate=schedule(cfg), weight_decay=cfg.weight_decay)
    optimizer.init(model.trainable_parameters())
    # the random state too: dropout draws from it inside the compiled step
    state = [model.state, optimizer.state, mx.random.state]
    loss_grad = nn.value_and_grad(model, loss_and_state)

    @partial_compile(state)
    def step_fn(inputs, targets, hidden):
        (loss, last), grads = loss_grad(model, inputs, targets, hidden)
        grads, norm = optim.clip_grad_norm(grads, cfg.clip)
        optimizer.update(model, grads)
        return loss, norm, mx.stop_gradient(last)

    return model, optimizer, step_fn, state


def zero_state(cfg):
    return mx.zeros((cfg.batch_size, cfg.hidden_dim), mx.float32)


def seconds_per_step(train_ids, vocab_size, cfg, warm=5, timed=20):
    """Measured time of one training step (after compilation), to size a run
    to a time budget; tokens/s is batch_size * seq_len over it."""
    _, _, step_fn, state = setup(vocab_size, cfg)
    hidden = zero_state(cfg)
    for step in range(warm + timed):
        if step == warm:
            mx.eval(state, hidden)
            t0 = time.time()
        x, y, fresh = batch(train_ids, cfg, step)
        loss, _, hidden = step_fn(x, y, zero_state(cfg) if fresh else hidden)
        mx.async_eval(state, loss, hidden)
    mx.eval(state, loss, hidden)
    return (time.time() - t0) / timed


def train(train_ids, valid, vocab_size, cfg, ckpt_dir, resume=True, log=print, until=None, stop_after=None):
    """Trains (or resumes) a model; `valid` maps a name to a token stream.
    Returns the model and the history of evaluations. `until` stops early (at
    that step, with a checkpoint) as an interruption would; so does
    `stop_after` seconds of training (a run split over several sittings)."""
    model, optimizer, step_fn, state = setup(vocab_size, cfg)
    start, history, hidden = 0, [], zero_state(cfg)
    state_file = os.path.join(ckpt_dir, "state.json")
    if resume and os.path.exists(state_file):
        with open(state_file) as f:
            st = json.load(f)
        model.load_weights(os.path.join(ckpt_dir, "model.safetensors"))
        # in place: the compiled step holds this very dict
        optimizer.state.update(tree_unflatten(list(mx.load(os.path.join(ckpt_dir, "optimizer.safetensors")).items())))
        start, history = st["step"], st["history"]
        hidden_file = os.path.join(ckpt_dir, "hidden.safetensors")
        if cfg.tbptt and os.path.exists(hidden_file):
            hidden = mx.load(hidden_file)["hidden"]
        log(f"resumed from {ckpt_dir} at step {start}")
    mx.eval(model.parameters(), optimizer.state)
    n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
    log(f"model: V={vocab_size} E={cfg.embed_dim} H={cfg.hidden_dim}, {n_params:,d} parameters; "
        f"{len(train_ids):,d} training tokens; batch {cfg.batch_size} x {cfg.seq_len}"
        f"{' (truncated BPTT)' if cfg.tbptt else ''}, {cfg.matmul_dtype} matmuls; device {mx.default_device()}")

    bar = Progress(cfg.steps, start)
    t0, avg, pending, eval_seconds = time.time(), None, [], 0.0
    tokens_per_step = cfg.batch_size * cfg.seq_len
    end = cfg.steps if until is None else min(until, cfg.steps)
    model.train()
    for step in range(start, end):
        mx.random.seed(cfg.seed * 1_000_003 + step)  # dropout masks depend on the step alone: resumable
        x, y, fresh = batch(train_ids, cfg, step)
        loss, norm, hidden = step_fn(x, y, zero_state(cfg) if fresh else hidden)
        # queued, not waited for: the next batch is prepared while this step runs
        mx.async_eval(state, loss, hidden)
        pending.append(loss)
        timed_out = stop_after is not None and time.time() - t0 > stop_after
        last = step + 1 == end or timed_out
        if len(pending) == 20 or last or (step + 1) % cfg.eval_every == 0:
            for v in pending:
                avg = v.item() if avg is None else 0.98 * avg + 0.02 * v.item()
            pending = []
            rate = (step + 1 - start) * tokens_per_step / max(time.time() - t0 - eval_seconds, 1e-9)
            bar.show(step, f"loss {avg:.3f} {rate / 1e3:.0f}k tok/s")
        if (step + 1) % cfg.eval_every == 0 or last:
            mx.eval(state)
            seconds = time.time() - t0
            # tokens/s of training alone (evaluations excluded), since this run (re)started
            ev = {"step": step + 1, "train_loss": round(avg, 4), "seconds": round(seconds, 1),
                  "tokens_per_s": round((step + 1 - start) * tokens_per_step / max(seconds - eval_seconds, 1e-9))}
            for name, ids in valid.items():
                ev[f"{name}_loss"] = round(stream_loss(model, ids, cfg.eval_tokens), 4)
            eval_seconds += time.time() - t0 - seconds
            history.append(ev)
            if bar.tty:
                sys.stderr.write("\n")
            log(" ".join(f"{k}={v}" for k, v in ev.items()))
        if (step + 1) % cfg.ckpt_every == 0 or last:
            save_checkpoint(ckpt_dir, model, optimizer, cfg, step + 1, history, hidden if cfg.tbptt else None)
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
