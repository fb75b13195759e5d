"""Training throughput, measured: tokens/s of the compiled training step for
a configuration and variants of it (batch, window, matmul dtype, truncated
BPTT, sizes), on the default MLX device, printed as a table.

    python -m training speed --config gpu-fast \
        --variant batch_size=1024 --variant batch_size=2048,seq_len=64

Reads the training stream if it exists, else draws token ids uniformly (the
arithmetic is the same; only the loss differs)."""

import json
import os
import time
from dataclasses import asdict, replace

import mlx.core as mx
import numpy as np

from .train import batch, setup, zero_state


def measure(ids, vocab_size, cfg, warm=3, timed=10):
    """Seconds per step (median of `timed` steps after `warm`), peak memory in GB."""
    _, _, step_fn, state = setup(vocab_size, cfg)
    hidden = zero_state(cfg)
    mx.reset_peak_memory()
    times = []
    for step in range(warm + timed):
        t0 = time.perf_counter()
        x, y, fresh = batch(ids, cfg, step)
        loss, _, hidden = step_fn(x, y, zero_state(cfg) if fresh else hidden)
        mx.eval(state, loss, hidden)
        if step >= warm:
            times.append(time.perf_counter() - t0)
    return float(np.median(times)), mx.get_peak_memory() / 1e9, float(loss.item())


def run(cfg, variants, ids, vocab_size, log=print, json_path=None, timed=10):
    rows = []
    log(f"device {mx.default_device()}, MLX {mx.__version__}, V={vocab_size}, {len(ids):,d} tokens")
    log(f"{'variant':44s} {'B':>5s} {'T':>4s} {'H':>5s} {'dtype':>8s} {'tbptt':>5s} "
        f"{'ms/step':>8s} {'tokens/s':>11s} {'peak GB':>8s}")
    for over in variants:
        c = replace(cfg, **over)
        name = ",".join(f"{k}={v}" for k, v in over.items()) or "(config)"
        try:
            sec, peak, loss = measure(ids, vocab_size, c, timed=timed)
        except Exception as e:  # out of memory, say: the table goes on
            log(f"{name:44s} failed: {str(e)[:120]}")
            continue
        tps = c.batch_size * c.seq_len / sec
        rows.append({"variant": name, "config": asdict(c), "ms_per_step": round(sec * 1e3, 2),
                     "tokens_per_s": round(tps), "peak_gb": round(peak, 2), "loss": round(loss, 3)})
        log(f"{name:44s} {c.batch_size:5d} {c.seq_len:4d} {c.hidden_dim:5d} {c.matmul_dtype[:8]:>8s} "
            f"{str(c.tbptt):>5s} {sec * 1e3:8.1f} {tps:11,.0f} {peak:8.1f}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": str(mx.default_device()), "mlx": mx.__version__, "rows": rows}, f, indent=1)
    return rows


def stream(path, vocab_size, tokens=50_000_000, seed=0):
    if path and os.path.exists(path):
        return np.fromfile(path, dtype=np.uint16)
    return np.random.default_rng(seed).integers(0, vocab_size, size=tokens, dtype=np.uint16)
