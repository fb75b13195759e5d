"""4-bit weights for the MLX backend, trained with the quantization in the
loop (issue 16): a copy of a shipped model (the student) learns to give the
shipped model's (the teacher's) next-token distributions while every one of
its weight matrices runs through MLX's own 4-bit affine quantization.

Why not round the teacher's weights: rounded to nearest (the q4 mode MLX has
at load) its top-1 agrees with f32 85-89 % of the time, and integers chosen
GPTQ-style 90-93 % (BENCHMARKS.md); rounding errors that cancel on what the
model meets are what a few minutes of training find.

What the student trains on: text the teacher writes itself (sampled at
temperature 1, rows restarted from `<s>` now and then as documents are), so
no corpus is needed and none of the texts the model is measured on can leak
in; or, with `--text`, windows of a training token stream (real text, which
the agreement is measured on: each row reads on through its own stretch of
the stream, teacher and student carrying their states as in training). The
loss is the KL divergence from the teacher's distribution at every
position.

With `--joint MUTUAL` the full-precision weights are trained too, as a
new model: they keep learning the teacher, while their own 4-bit rounding
learns both the teacher and them (`joint_loss`). The aim is a model whose
4-bit variant ranks like its own full-precision weights, which rounding a
model trained without the quantization in mind does not give
(BENCHMARKS.md, "4-bit trained"). The new model is its weights' bf16
values (`full_precision`: what OUT.safetensors holds, so nothing is lost
in the file that comes back); `python -m training export --from-shards
OUT.safetensors` makes its int8, bf16 and f32 files, and it is judged like
any new model (per-language KSR on the development split) before shipping.

What it exports: OUT.safetensors, the student's tensors in bfloat16 (the
forward pass sees exactly those, quantized as MLX quantizes at load:
`mlx_affine` below is MLX 0.32's affine quantize and dequantize, op for op),
and OUT.json, the run's figures. `install` makes it a model file: bf16 with
`quant_bits` / `quant_group` in its metadata (models/FORMAT.md), which every
backend runs through that quantization, exactly the model trained here; a
student trained with `--embed-bits 8` is installed with `--embed-bits 8`
too, which writes `quant_bits.embed`.

    python3 -m training.qat --model models/laya-default-bf16.safetensors \\
        --group 32 --minutes 4 --out OUT/q4
    python3 -m training.qat install OUT/q4.safetensors \\
        --out models/laya-default-q4.safetensors   # bits and group from OUT/q4.json

Needs PyTorch and a GPU (the device machine); prints tokens/s and the
top-1 agreement of the quantized student with the teacher on fresh samples."""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

try:  # training needs PyTorch (the device machine); `install` does not
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = F = None

MATRICES = ("embed", "gru.wx", "gru.wh", "proj.w")
BOS = 1  # models/FORMAT.md: <unk>, <s>, <nl>


def mlx_affine(w, group, bits):
    """MLX's affine quantize then dequantize of w [rows, cols] along cols, in
    f32: per group, the extremum of larger magnitude ('edge') is the bias and
    is hit exactly (the scale is adjusted so that edge / scale is whole)."""
    rows, cols = w.shape
    n = float(2**bits - 1)
    wg = w.float().reshape(rows, cols // group, group)
    wmax, wmin = wg.amax(-1, keepdim=True), wg.amin(-1, keepdim=True)
    mask = wmin.abs() > wmax.abs()
    scales = torch.clamp((wmax - wmin) / n, min=1e-7)
    scales = torch.where(mask, scales, -scales)
    edge = torch.where(mask, wmin, wmax)
    q0 = torch.round(edge / scales)
    scales = torch.where(q0 != 0, edge / q0, scales)
    biases = torch.where(q0 == 0, torch.zeros_like(edge), edge)
    q = torch.clamp(torch.round((wg - biases) / scales), 0, n)
    return (q * scales + biases).reshape(rows, cols)


def bf16(w):
    return w.to(torch.bfloat16).float()


def through(w, f):
    """f(w) forward, identity backward (the straight-through estimator)."""
    return w + (f(w) - w).detach()


def read_model(path, dev):
    """A models/FORMAT.md file's tensors as f32 on `dev`."""
    from safetensors.torch import load_file

    return {k: v.float().to(dev) for k, v in load_file(path).items()}


class Gru:
    """The model of FORMAT.md on given tensors (cuDNN's GRU through the same
    call nn.GRU makes): b = b_ih with b_hh = [0, 0, bhn]."""

    @staticmethod
    def run(t, x, h):
        hid = t["gru.wh"].shape[1]
        emb = F.embedding(x, t["embed"])
        b_hh = torch.cat([torch.zeros(2 * hid, device=x.device), t["gru.bhn"]])
        weights = [t["gru.wx"], t["gru.wh"], t["gru.b"], b_hh]
        training = torch.is_grad_enabled()  # cuDNN keeps what backward needs only in training mode
        states, last = torch._VF.gru(emb, h, weights, True, 1, 0.0, training, False, True)
        logits = (states @ t["proj.w"].T + t["proj.b"]) @ t["embed"].T + t["out.b"]
        return logits, last


def quantized(params, group, bits, embed_bits=None):
    """What the MLX backend computes with: every tensor as bf16 (the file),
    the four matrices then through MLX's quantization (the embedding with
    `embed_bits` when given)."""
    out = {}
    for k, w in params.items():
        w = through(w, bf16)
        b = embed_bits if k == "embed" and embed_bits else bits
        out[k] = through(w, lambda v: mlx_affine(v, group, b)) if k in MATRICES else w
    return out


def full_precision(params):
    """What --joint's new model is: its weights' bf16 values (its bf16
    file; the f32 file exported from it holds the same numbers)."""
    return {k: through(w, bf16) for k, w in params.items()}


def sample(teacher, x0, h, steps, restart, temperature=1.0):
    """The teacher writes `steps` tokens after x0 (B,) from state h: the
    tokens (B, steps + 1, first x0), its logits after each of the first
    `steps` (f32), which rows restarted, and the state after them. A row
    restarts from <s> and a zero state with probability `restart` at each
    segment's start. Below temperature 1 the text is closer to what people
    write (fewer unlikely tokens); the logits returned stay the teacher's."""
    with torch.no_grad():
        return _sample(teacher, x0, h, steps, restart, temperature)


def _sample(teacher, x0, h, steps, restart, temperature):
    b = x0.shape[0]
    fresh = torch.rand(b, device=x0.device) < restart
    x0 = torch.where(fresh, torch.full_like(x0, BOS), x0)
    h = torch.where(fresh[None, :, None], torch.zeros_like(h), h)
    toks, logits = [x0], []
    x = x0
    for _ in range(steps):
        lg, h = Gru.run(teacher, x[:, None], h)
        lg = lg[:, 0]
        logits.append(lg)
        x = torch.multinomial(F.softmax(lg / temperature, -1), 1)[:, 0]
        toks.append(x)
    return torch.stack(toks, 1), torch.stack(logits, 1), fresh, h


def text_window(ids, b, t, step):
    """Row r's next window of t + 1 tokens (int64, b × (t + 1)) from the r-th
    of b equal stretches of `ids`, each window starting on the last token of
    the one before, and whether this step starts a pass over the stretches
    again (the carried states start afresh): a function of the step alone."""
    span = (len(ids) - 1) // b
    per = max(1, (span - 1) // t)
    starts = np.arange(b, dtype=np.int64) * span + (step % per) * t
    return ids[starts[:, None] + np.arange(t + 1)].astype(np.int64), step % per == 0


def distill_loss(ls, lt, hard=0.0, soft=0.0):
    """KL divergence of the student's logits `ls` from the teacher's `lt`
    (per position, averaged), plus `hard` times the student's cross-entropy
    on the teacher's top token. The KL weighs the whole distribution alike;
    what `laya agree` and the ghost text see is the top of it, which the
    second term pulls toward the teacher's choice; `soft` > 0 adds
    `soft_kl` at that temperature. Returns the loss and the KL alone (what
    the log reports)."""
    lsm, ltm = F.log_softmax(ls.float(), -1).flatten(0, -2), F.log_softmax(lt.float(), -1).flatten(0, -2)
    kl = F.kl_div(lsm, ltm, log_target=True, reduction="batchmean")
    loss = kl + hard * F.nll_loss(lsm, ltm.argmax(-1)) if hard else kl
    if soft:
        loss = loss + soft_kl(ls, lt, soft)
    return loss, kl


def soft_kl(ls, lt, temperature):
    """The KL of the two distributions both softened by `temperature`,
    times its square (so its gradients keep their scale): it weighs the
    order of the less likely tokens more than the KL at 1 does, and those
    are what the engine ranks inside a word (the candidates that match the
    typed letters) and at a word start (likelihood times length)."""
    lsm = F.log_softmax(ls.float() / temperature, -1).flatten(0, -2)
    ltm = F.log_softmax(lt.float() / temperature, -1).flatten(0, -2)
    return temperature**2 * F.kl_div(lsm, ltm, log_target=True, reduction="batchmean")


def joint_loss(lf, lq, lt, mutual):
    """The loss of `--joint`: the full-precision weights' logits `lf` and the
    same weights quantized, `lq`, both learn the teacher's `lt`, and
    `mutual` times the KL of lq from lf pulls the two toward each other
    (through both: the weights are shared, so the full-precision model
    also moves toward what its 4-bit rounding can say). Returns the loss
    and its three KLs (teacher to f32, teacher to quantized, f32 to
    quantized)."""
    lfm = F.log_softmax(lf.float(), -1).flatten(0, -2)
    lqm = F.log_softmax(lq.float(), -1).flatten(0, -2)
    ltm = F.log_softmax(lt.float(), -1).flatten(0, -2)
    kf = F.kl_div(lfm, ltm, log_target=True, reduction="batchmean")
    kq = F.kl_div(lqm, ltm, log_target=True, reduction="batchmean")
    kfq = F.kl_div(lqm, lfm, log_target=True, reduction="batchmean")
    return kf + kq + mutual * kfq, (kf, kq, kfq)


def lr_at(step, steps, lr, warmup=100, floor=0.02):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, steps - warmup))
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * p)))


def train(a, dev="cuda"):
    torch.manual_seed(a.seed)
    teacher = read_model(a.model, dev)
    start_from = read_model(a.init, dev) if a.init else teacher
    params = {k: torch.nn.Parameter(start_from[k].clone()) for k in teacher}
    opt = torch.optim.Adam(params.values(), lr=a.lr)
    hid = teacher["gru.wh"].shape[1]
    b, t = a.batch, a.window
    x = torch.full((b,), BOS, device=dev)
    h_teacher = torch.zeros(1, b, hid, device=dev)
    h_student = h_teacher.clone()
    h_full = h_teacher.clone()  # --joint: the full-precision weights' own state
    log, agree_avg, kl_avg, own_avg = [], None, None, None
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    def measure(n=8):
        """Top-1 agreement and KL of the quantized student on fresh samples
        from the zero state (the same seed for every call: comparable), and
        with --joint the quantized student's top-1 agreement with its own
        full-precision weights."""
        with torch.random.fork_rng(devices=[] if dev == "cpu" else None):
            torch.manual_seed(12345)
            return sampled_agreement(n)

    def sampled_agreement(n):
        xs, hs = torch.full((b,), BOS, device=dev), torch.zeros(1, b, hid, device=dev)
        hq, hf = hs.clone(), hs.clone()
        hits = total = kl = own = 0.0
        with torch.no_grad():
            q = quantized(params, a.group, a.bits, a.embed_bits)
            for _ in range(n):
                toks, lt, _, hs = sample(teacher, xs, hs, t, 0.0)
                ls, hq = Gru.run(q, toks[:, :-1], hq)
                hits += (ls.argmax(-1) == lt.argmax(-1)).sum().item()
                total += lt.shape[0] * lt.shape[1]
                kl += F.kl_div(F.log_softmax(ls, -1), F.log_softmax(lt, -1), log_target=True,
                               reduction="sum").item()
                if a.joint is not None:
                    lf, hf = Gru.run(full_precision(params), toks[:, :-1], hf)
                    own += (ls.argmax(-1) == lf.argmax(-1)).sum().item()
                xs = toks[:, -1]
        if a.joint is None:
            return 100 * hits / total, kl / total
        return 100 * hits / total, kl / total, 100 * own / total

    text = None
    if a.text:  # a uint16 token stream (training/data.py), read as stretches, one a row
        text = np.fromfile(a.text, dtype=np.uint16)
        print(f"text: {len(text):,d} tokens of {a.text}, {(len(text) - 1) // b // t} windows a row", flush=True)
    start = measure()
    print(f"start: quantized student agrees {start[0]:.2f} % top-1 with the teacher, KL {start[1]:.4f}"
          + (f", {start[2]:.2f} % with its own f32 weights" if a.joint is not None else ""), flush=True)
    steps = a.steps
    t0 = time.time()
    if a.minutes:  # size the run from a measured step time
        steps = None
    step = 0
    while True:
        if steps is None and step == 20:
            sync()
            per = (time.time() - t0) / 20
            steps = max(21, int(a.minutes * 60 / per))
            print(f"{per * 1000:.1f} ms/step -> {steps} steps in {a.minutes} min", flush=True)
        if steps is not None and step >= steps:
            break
        if text is None:
            toks, lt, fresh, h_teacher = sample(teacher, x, h_teacher, t, a.restart, a.temperature)
            x = toks[:, -1]
        else:
            win, wrapped = text_window(text, b, t, step)
            toks, fresh = torch.from_numpy(win).to(dev), torch.full((b,), wrapped, device=dev)
            h_teacher = torch.where(fresh[None, :, None], torch.zeros_like(h_teacher), h_teacher)
            with torch.no_grad():
                lt, h_teacher = Gru.run(teacher, toks[:, :-1], h_teacher)
        h_student = torch.where(fresh[None, :, None], torch.zeros_like(h_student), h_student)
        h_full = torch.where(fresh[None, :, None], torch.zeros_like(h_full), h_full)
        for g_ in opt.param_groups:
            g_["lr"] = lr_at(step, steps or 10**9, a.lr)
        q = quantized(params, a.group, a.bits, a.embed_bits)
        ls, last = Gru.run(q, toks[:, :-1], h_student)
        if a.joint is None:
            loss, kl = distill_loss(ls, lt, a.hard, a.soft)
        else:
            lf, last_full = Gru.run(full_precision(params), toks[:, :-1], h_full)
            loss, (_, kl, _) = joint_loss(lf, ls, lt, a.joint)
            h_full = last_full.detach()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params.values(), 1.0)
        opt.step()
        h_student = last.detach()
        step += 1
        with torch.no_grad():
            agree = (ls.argmax(-1) == lt.argmax(-1)).float().mean().item() * 100
            if a.joint is not None:  # the quantized weights against their own f32
                own = (ls.argmax(-1) == lf.argmax(-1)).float().mean().item() * 100
                own_avg = own if own_avg is None else 0.98 * own_avg + 0.02 * own
        agree_avg = agree if agree_avg is None else 0.98 * agree_avg + 0.02 * agree
        kl_avg = kl.item() if kl_avg is None else 0.98 * kl_avg + 0.02 * kl.item()
        if step % 200 == 0 or step == steps:
            rate = step * b * t / (time.time() - t0)
            own_s = f" with own f32 {own_avg:.2f} %" if own_avg is not None else ""
            print(f"step {step}/{steps} KL {kl_avg:.4f} top-1 agreement {agree_avg:.2f} %{own_s} "
                  f"lr {lr_at(step, steps, a.lr):.1e} {rate / 1e6:.2f} M tok/s {time.time() - t0:.0f}s", flush=True)
            log.append({"step": step, "kl": round(kl_avg, 5), "agree": round(agree_avg, 3),
                        "seconds": round(time.time() - t0, 1)}
                       | ({"own": round(own_avg, 3)} if own_avg is not None else {}))
    sync()
    seconds = time.time() - t0
    end = measure()
    print(f"end: quantized student agrees {end[0]:.2f} % top-1 with the teacher, KL {end[1]:.4f}"
          + (f", {end[2]:.2f} % with its own f32 weights" if a.joint is not None else "")
          + f" ({step} steps, {seconds:.0f} s, {step * b * t / seconds / 1e6:.2f} M tok/s)", flush=True)
    from safetensors.torch import save_file

    # bf16 (what the forward pass rounded to): 13.5 MB for the default shape, one file back from the device
    save_file({k: v.detach().to(torch.bfloat16).cpu().contiguous() for k, v in params.items()}, a.out + ".safetensors")
    summary = {"model": a.model, "group": a.group, "bits": a.bits, "embed_bits": a.embed_bits or a.bits, "lr": a.lr, "hard": a.hard, "soft": a.soft, "joint": a.joint, "batch": b, "window": t,
               "restart": a.restart, "temperature": a.temperature, "text": a.text, "steps": step, "seconds": round(seconds, 1),
               "tokens_per_s": round(step * b * t / seconds), "start": start, "end": end, "log": log,
               "torch": torch.__version__, "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu"}
    with open(a.out + ".json", "w") as f:
        json.dump(summary, f, indent=1)


def install(argv):
    """`python -m training.qat install STUDENT.safetensors`: the student as
    models/laya-default-q4.safetensors (bf16 with quant_bits / quant_group,
    and quant_bits.embed for a student trained with --embed-bits; the
    teacher's metadata otherwise; FORMAT.md), checked by reading it back.
    The bits and group are the run's (STUDENT.json, written beside it by
    training), so a student runs as it was trained; an option that
    contradicts the run's figures is an error."""
    from .export import export_quantized, load

    p = argparse.ArgumentParser(prog="python -m training.qat install")
    p.add_argument("student")
    p.add_argument("--like", default="models/laya-default-bf16.safetensors", help="the teacher")
    p.add_argument("--bits", type=int, help="the matrices' bits, as trained (default the run's, else 4)")
    p.add_argument("--group", type=int, help="the group size, as trained (default the run's, else 32)")
    p.add_argument("--embed-bits", type=int, help="the embedding's bits, as trained (default the run's, else --bits)")
    p.add_argument("--out", default="models/laya-default-q4.safetensors")
    a = p.parse_args(argv)
    run_json = os.path.splitext(a.student)[0] + ".json"
    run = json.load(open(run_json)) if os.path.exists(run_json) else {}
    for key in ("bits", "group", "embed_bits"):
        given, trained = getattr(a, key), run.get(key)
        if given is not None and trained is not None and given != trained:
            p.error(f"--{key.replace('_', '-')} {given}: {run_json} says the student was trained with {trained}")
        setattr(a, key, given if given is not None else trained)
    a.bits = a.bits or 4
    a.group = a.group or 32
    if a.embed_bits not in (None, 4, 8) or a.bits not in (4, 8):
        p.error("--bits and --embed-bits are 4 or 8 (FORMAT.md)")
    own = {"embed": a.embed_bits} if a.embed_bits and a.embed_bits != a.bits else {}
    export_quantized(a.student, a.like, a.out, a.bits, a.group, own)
    load(a.out)
    print(f"wrote {a.out} ({a.bits}-bit{f', embedding {a.embed_bits}-bit' if own else ''}, group {a.group})")
    return 0


def stretches(ids, rows, tokens):
    """`rows` stretches of `tokens` consecutive tokens each, spread evenly over
    the stream `ids` and laid end to end: what `--text` reads, one stretch
    a batch row, small enough to travel to the device beside a model."""
    step = (len(ids) - tokens) // max(1, rows - 1) if rows > 1 else 0
    starts = np.arange(rows, dtype=np.int64) * step
    return ids[starts[:, None] + np.arange(tokens)].reshape(-1)


def text(argv):
    """`python -m training.qat text STREAM --out FILE`: FILE (uint16) holds
    `stretches` of the training stream STREAM."""
    p = argparse.ArgumentParser(prog="python -m training.qat text")
    p.add_argument("stream", help="a uint16 token stream, e.g. training/work/data/train.u16")
    p.add_argument("--rows", type=int, default=1024, help="stretches (the training batch's rows)")
    p.add_argument("--tokens", type=int, default=16000, help="tokens of each stretch")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    ids = np.fromfile(a.stream, dtype=np.uint16)
    if len(ids) < a.rows * a.tokens:
        p.error(f"{a.stream} has {len(ids):,d} tokens, fewer than {a.rows} x {a.tokens}")
    stretches(ids, a.rows, a.tokens).astype(np.uint16).tofile(a.out)
    print(f"wrote {a.out}: {a.rows} stretches of {a.tokens:,d} tokens from {len(ids):,d}")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["install"]:
        return install(argv[1:])
    if argv[:1] == ["text"]:
        return text(argv[1:])
    p = argparse.ArgumentParser(prog="python -m training.qat", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the teacher (and the student's start): a FORMAT.md file")
    p.add_argument("--group", type=int, default=32)
    p.add_argument("--bits", type=int, default=4)
    p.add_argument("--embed-bits", type=int, help="the embedding's bits (default --bits)")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--hard", type=float, default=0.0,
                   help="weight of the cross-entropy on the teacher's top token, added to the KL (distill_loss)")
    p.add_argument("--soft", type=float, default=0.0, metavar="T",
                   help="add the KL of both distributions softened by temperature T (soft_kl)")
    p.add_argument("--joint", type=float, metavar="MUTUAL",
                   help="train the full-precision weights too, as a new model whose quantized variant agrees with it "
                   "(joint_loss; `python -m training export --from-shards OUT.safetensors` makes its files)")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--restart", type=float, default=0.125, help="chance a row restarts at a segment's start")
    p.add_argument("--temperature", type=float, default=1.0, help="the teacher's sampling temperature for the training text")
    p.add_argument("--text", help="train on windows of this token stream (uint16, e.g. training/work/data/"
                   "train.u16) instead of the teacher's samples")
    p.add_argument("--minutes", type=float, help="train this long (steps sized from a measured step)")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--init", help="start the student from this file (an earlier run's) instead of the teacher")
    p.add_argument("--out", required=True, help="stem of the bf16 tensors (.safetensors) and the run's figures (.json)")
    a = p.parse_args(argv)
    if a.joint is not None and (a.soft or a.hard):
        p.error("--soft and --hard shape a student's loss; --joint has its own (joint_loss)")
    # The teacher's distributions as the engine computes them, in f32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    train(a, "cuda" if torch.cuda.is_available() else "cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
