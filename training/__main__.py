"""`python -m training <step>`: corpus, vocab, kinds, encode, train, export,
eval, heldout, or all of them in order. Outputs go to training/work (corpus, token
streams) and training/out (vocabulary, checkpoint, model files, metrics)."""

import argparse
import json
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import replace
from multiprocessing import Pool

ROOT = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(ROOT, "out")
MODELS = os.path.join(os.path.dirname(ROOT), "models")
HELDOUT = os.path.join(os.path.dirname(ROOT), "tests", "data")
STEM = "laya-default"


def log(msg):
    print(msg, flush=True)


def cmd_corpus(a):
    from .corpus.build import build, fetch_all
    if a.fetch_only:
        fetch_all("small" if a.small else "full", log=log)
        return
    build("small" if a.small else "full", log=log, workers=a.workers)


def _count(text):
    from .vocab import count_tokens
    return count_tokens([text])


def cmd_vocab(a):
    from .corpus.build import read_docs
    from .data import copies
    from .vocab import Vocab, choose, coverage, oov_words, words_path, write, write_words
    os.makedirs(OUT, exist_ok=True)
    counts = Counter()
    with Pool(a.workers) as pool:
        recs = list(read_docs("train"))
        for rec, c in zip(recs, pool.imap(_count, (r["text"] for r in recs), chunksize=16)):
            for _ in range(copies(rec)):
                counts.update(c)
    path = os.path.join(OUT, f"{STEM}.vocab.txt")
    write(choose(counts, a.size), path)
    vocab = Vocab(path)
    oov_total, listed = oov_words(counts, vocab.tokens)
    write_words(oov_total, listed, words_path(path))
    stats = {"size": len(vocab), "train_types": len(counts), "train_tokens": sum(counts.values()),
             "oov_word_tokens": oov_total, "words_listed": len(listed),
             "words_listed_tokens": sum(n for _, n in listed)}
    for kind in ("prose", "code"):
        stats[f"test_{kind}"] = coverage(vocab, (r["text"] for r in read_docs("test", kind)))
    with open(os.path.join(OUT, "vocab-stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    log(f"vocabulary {path}: {len(vocab)} tokens of {len(counts):,d} types; " + "; ".join(
        f"test {k}: {stats[f'test_{k}']['coverage']:.1%} of tokens, {stats[f'test_{k}']['word_coverage']:.1%} of words"
        for k in ("prose", "code")))
    log(f"word list {words_path(path)}: {len(listed):,d} out-of-vocabulary words, "
        f"{stats['words_listed_tokens'] / max(oov_total, 1):.1%} of the {oov_total:,d} out-of-vocabulary word tokens")


def cmd_encode(a):
    from . import data
    vocab = os.path.join(OUT, f"{STEM}.vocab.txt")
    if a.focus:
        out = os.path.join(data.WORK, "data-" + a.focus.replace(",", "-"))
        data.build_focus(vocab, a.focus.split(","), a.general, out, log=log, workers=a.workers)
        return
    data.build(vocab, log=log, workers=a.workers, train_kind=a.train_kind)


def _config(a):
    from .train import config
    return config(a.config, steps=a.steps, batch_size=a.batch_size, seq_len=a.seq_len, lr=a.lr, warmup=a.warmup,
                  eval_tokens=a.eval_tokens)


def cmd_train(a):
    import mlx.core as mx
    from . import data
    from .train import train
    if a.cpu:
        mx.set_default_device(mx.cpu)
    from .train import seconds_per_step
    cfg = _config(a)
    vocab_size = sum(1 for _ in open(os.path.join(OUT, f"{STEM}.vocab.txt"), encoding="utf-8"))
    valid = {k: data.load(f"valid.{k}") for k in ("prose", "code")}
    train_ids = data.load("train")
    state_file = os.path.join(OUT, "ckpt", "state.json")
    if not a.fresh and os.path.exists(state_file):  # resuming: the run's own length and schedule
        with open(state_file) as f:
            saved = json.load(f)["config"]
        cfg = replace(cfg, **{k: saved[k] for k in ("steps", "eval_every", "ckpt_every")})
        log(f"resuming a run of {cfg.steps} steps")
    elif a.minutes:  # size the run to a time budget, from a measured step time
        per_step = seconds_per_step(train_ids, vocab_size, cfg)
        steps = int(a.minutes * 60 / per_step)
        epochs = steps * cfg.batch_size * cfg.seq_len / len(train_ids)
        log(f"{per_step * 1000:.1f} ms/step -> {steps} steps in {a.minutes} min ({epochs:.2f} epochs)")
        cfg = replace(cfg, steps=steps, eval_every=max(1, steps // 4), ckpt_every=max(1, steps // 4))
    t0 = time.time()
    _, history = train(train_ids, valid, vocab_size, cfg, os.path.join(OUT, "ckpt"),
                       resume=not a.fresh, log=log, stop_after=a.stop_after and a.stop_after * 60)
    log(f"trained in {time.time() - t0:.0f}s")


def cmd_speed(a):
    """Training throughput (tokens/s) of a configuration and its variants."""
    import mlx.core as mx
    from . import data, speed
    from .config import parse_variant
    from .train import config
    if a.cpu:
        mx.set_default_device(mx.cpu)
    vocab = os.path.join(OUT, f"{STEM}.vocab.txt")
    vocab_size = a.size if not os.path.exists(vocab) else sum(1 for _ in open(vocab, encoding="utf-8"))
    ids = speed.stream(data.path("train"), vocab_size)
    variants = [parse_variant(v) for v in a.variant] or [{}]
    speed.run(config(a.config), variants, ids, vocab_size, log=log, json_path=a.json, timed=a.steps or 10)


def cmd_export(a):
    """f32, bf16 and int8 files of the checkpoint (or --from-shards). The int8
    file's integers are calibrated (export.quantize_calibrated) on the first
    --calibrate tokens of each validation stream (training/work/data
    valid.prose and valid.code, never the test streams or held-out texts);
    --calibrate 0 rounds to nearest instead. Deterministic either way."""
    from .export import CALIBRATE, calibration_streams, export, from_tensors, hessians
    from .model import LayaLM
    from .train import Config
    from .vocab import words_path
    vocab = os.path.join(OUT, f"{STEM}.vocab.txt")
    if a.from_shards and a.from_shards.endswith(".safetensors"):  # one file of the model's tensors (qat --joint)
        import mlx.core as mx
        model = from_tensors(mx.load(a.from_shards))
    elif a.from_shards:  # f32 weights that came back from the GPU machine (see shards.py)
        from . import shards
        model = from_tensors(shards.load(a.from_shards))
    else:
        with open(os.path.join(OUT, "ckpt", "state.json")) as f:
            cfg = Config(**json.load(f)["config"])
        vocab_size = sum(1 for _ in open(vocab, encoding="utf-8"))
        model = LayaLM(vocab_size, cfg.embed_dim, cfg.hidden_dim)
        model.load_weights(os.path.join(OUT, "ckpt", "model.safetensors"))
    # The dtype variants (<stem>-bf16, <stem>-f32) share <stem>.vocab.txt and
    # <stem>.words.txt (FORMAT.md): the lists are stored once.
    words = words_path(vocab)
    if not os.path.exists(words):
        log(f"no word list {words} (run `python -m training vocab`): the models get none")
    hess, n = None, CALIBRATE if a.calibrate is None else a.calibrate
    if n > 0:
        t0 = time.time()
        hess = hessians(model, calibration_streams(n, model.sizes[0]))
        log(f"int8 calibration: inputs of the first {n:,d} tokens of valid.prose and valid.code "
            f"({time.time() - t0:.0f}s)")
    for dtype, name in (("int8", STEM), ("bf16", f"{STEM}-bf16"), ("f32", f"{STEM}-f32")):
        t0 = time.time()
        path = export(model, vocab, os.path.join(OUT, f"{name}.safetensors"), dtype, hess)
        log(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB ({time.time() - t0:.0f}s)")
    if a.install:
        install(OUT, MODELS, [STEM, f"{STEM}-bf16"])
        log(f"installed {STEM} (int8) and {STEM}-bf16 into {MODELS}")


def install(src_dir, dst_dir, names):
    """Copies each name's model file, and its vocabulary and word list (when
    there is one) once per base stem, from src_dir into dst_dir; a word list
    left in dst_dir from before is removed when the new model has none (it
    belongs to another vocabulary), and so are a variant's own lists."""
    from .export import lists_stem
    for name in names:
        shutil.copyfile(os.path.join(src_dir, name + ".safetensors"), os.path.join(dst_dir, name + ".safetensors"))
        base = lists_stem(name)
        for ext in (".vocab.txt", ".words.txt", ".kinds.txt"):
            src, dst = os.path.join(src_dir, base + ext), os.path.join(dst_dir, base + ext)
            if ext == ".vocab.txt" or os.path.exists(src):
                shutil.copyfile(src, dst)
            elif os.path.exists(dst):
                os.remove(dst)
            if base != name and os.path.exists(os.path.join(dst_dir, name + ext)):
                os.remove(os.path.join(dst_dir, name + ext))


def cmd_eval(a):
    import mlx.core as mx
    from . import data
    from .evaluate import evaluate
    from .export import default_vocab_path, load
    if a.cpu:
        mx.set_default_device(mx.cpu)
    results = {}
    names = a.models or [f"{STEM}-f32", f"{STEM}-bf16", STEM]
    for name in names:
        path = name if name.endswith(".safetensors") else os.path.join(OUT, name + ".safetensors")
        model, meta = load(path)
        vocab_tokens = open(default_vocab_path(path), encoding="utf-8").read().split("\n")[:-1]
        for kind in ("prose", "code"):
            r = evaluate(model, data.load(f"test.{kind}"), vocab_tokens, tokens=a.tokens)
            results[f"{os.path.basename(path)} {kind}"] = r
            log(f"{os.path.basename(path):28s} {kind:5s} tokens {r['tokens']:>9,d}  ppl {r['perplexity']:7.2f}  "
                f"unk {r['unk_rate']:.2%}  next-word top1 {r['next_word_top1']:.2%}  top3 {r['next_word_top3']:.2%}")
    with open(os.path.join(OUT, "eval.json"), "w") as f:
        json.dump(results, f, indent=1)


def pick_heldout(docs, budget, max_doc):
    """Whole documents up to `budget` characters, taken round-robin over
    sources in hash order so every source is represented."""
    import hashlib
    by_src = {}
    for r in docs:
        if len(r["text"]) <= max_doc:
            by_src.setdefault(r["src"], []).append(r)
    for group in by_src.values():
        group.sort(key=lambda r: hashlib.sha256(r["text"].encode()).hexdigest())
    chosen, size = [], 0
    while by_src and size < budget:
        for src in sorted(by_src):
            if not by_src[src]:
                continue
            d = by_src[src].pop(0)
            if size + len(d["text"]) > budget:
                continue
            chosen.append(d["text"])
            size += len(d["text"])
        by_src = {s: d for s, d in by_src.items() if d}
    return chosen


def write_heldout(name, chosen, log):
    path = os.path.join(HELDOUT, f"heldout-{name}.txt")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\f\n".join(chosen))
    log(f"{path}: {len(chosen)} documents, {sum(map(len, chosen)) / 1e3:.0f} KB")


def cmd_heldout(a):
    """Whole test-split documents, form-feed separated (METRICS.md §1): ~150 KB
    per kind (heldout-prose/-code.txt), or with --languages ~40 KB per
    language (heldout-english.txt for prose, heldout-<language>.txt for each
    code language whose chosen documents hold at least --min-language characters)."""
    from .corpus.build import read_docs
    if not a.languages:
        for kind in ("prose", "code"):
            write_heldout(kind, pick_heldout(read_docs("test", kind), a.budget, a.max_doc), log)
        return
    groups = {"english": list(read_docs("test", "prose"))}
    for r in read_docs("test", "code"):
        groups.setdefault(r["lang"], []).append(r)
    for name, docs in sorted(groups.items()):
        chosen = pick_heldout(docs, a.budget, a.max_doc)
        if sum(map(len, chosen)) >= a.min_language:
            write_heldout(name, chosen, log)


_KIND_WORDS = None


def _init_kinds(words):
    global _KIND_WORDS
    _KIND_WORDS = words


def _count_kinds(rec):
    from .kinds import count_words
    return count_words(rec, _KIND_WORDS)


def cmd_kinds(a):
    """Where each word of a model is written (FORMAT.md `<stem>.kinds.txt`),
    from the documents of a training split only."""
    from . import kinds
    from .vocab import words_path
    stem = a.stem or os.path.join(MODELS, STEM)
    vocab = stem + ".vocab.txt"
    words = kinds.model_words(vocab, words_path(vocab))
    corpus = a.corpus or os.path.join(ROOT, "work", "corpus", "train.jsonl")
    found, totals = Counter(), Counter()
    docs = 0
    with open(corpus, encoding="utf-8") as f, Pool(a.workers, initializer=_init_kinds, initargs=(words,)) as pool:
        recs = (json.loads(line) for line in f if line.strip())
        for c, t in pool.imap_unordered(_count_kinds, recs, chunksize=8):
            found.update(c)
            totals.update(t)
            docs += 1
    n = kinds.write(stem + ".kinds.txt", totals, found)
    log(f"{stem}.kinds.txt: {n:,d} of {len(words):,d} words seen in {docs:,d} documents of {corpus}; "
        + ", ".join(f"{c} {totals[c]:,d} word tokens" for c in kinds.CLASSES))


def cmd_all(a):
    a.stem = a.stem or os.path.join(OUT, STEM)
    for fn in (cmd_corpus, cmd_vocab, cmd_kinds, cmd_encode, cmd_heldout, cmd_train, cmd_export, cmd_eval):
        log(f"== {fn.__name__[4:]}")
        fn(a)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m training", description=__doc__)
    p.add_argument("step", choices=["corpus", "vocab", "encode", "train", "speed", "export", "eval", "heldout", "kinds",
                                      "all"])
    p.add_argument("--small", action="store_true", help="corpus: the few-MB slice for a first model")
    p.add_argument("--fetch-only", action="store_true", help="corpus: fetch and unpack the packages, build nothing")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--size", type=int, default=16384, help="vocabulary size")
    p.add_argument("--train-kind", choices=["prose", "code"],
                   help="encode: the training stream of this kind's documents alone (a model of prose only)")
    p.add_argument("--focus", help="encode: a fine-tuning stream towards these languages (e.g. shell,ruby: their "
                   "documents and a --general share of the rest) in training/work/data-shell-ruby/; the other streams "
                   "are copied from training/work/data")
    p.add_argument("--general", type=float, default=0.06, help="encode --focus: share of the other documents kept")
    p.add_argument("--out", help="folder of the vocabulary, checkpoint and model files (default training/out)")
    p.add_argument("--config", default="cpu", help="train: tiny | cpu | gpu")
    p.add_argument("--steps", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--warmup", type=int)
    p.add_argument("--eval-tokens", type=int, help="train: tokens of each valid stream per evaluation")
    p.add_argument("--minutes", type=float, help="train: choose the step count to fit this many minutes")
    p.add_argument("--fresh", action="store_true", help="train: ignore an existing checkpoint")
    p.add_argument("--stop-after", type=float,
                   help="train: stop (with a checkpoint) after this many minutes; run again to resume")
    p.add_argument("--cpu", action="store_true", help="force the MLX CPU device")
    p.add_argument("--variant", action="append", default=[],
                   help="speed: overrides of the config, e.g. batch_size=1024,matmul_dtype=bfloat16 (repeatable)")
    p.add_argument("--json", help="speed: also write the table here")
    p.add_argument("--from-shards", help="export: stem of f32 shards (training/shards.py), or one .safetensors file "
                   "of the model's tensors (qat --joint), instead of the checkpoint")
    p.add_argument("--install", action="store_true", help="export: copy the int8 and bf16 files into models/")
    p.add_argument("--calibrate", type=int, default=None, metavar="N",
                   help="export: calibrate the int8 rounding on the first N tokens of each validation stream "
                   "(default export.CALIBRATE, 32768); 0 rounds to nearest")
    p.add_argument("--models", nargs="*", help="eval: model names in training/out or paths")
    p.add_argument("--tokens", type=int, help="eval: first N tokens of each test stream")
    p.add_argument("--budget", type=int, help="heldout: characters per file (150,000; 40,000 with --languages)")
    p.add_argument("--languages", action="store_true", help="heldout: one file per language")
    p.add_argument("--min-language", type=int, default=10_000,
                   help="heldout --languages: fewest characters of a language's test documents for a file")
    p.add_argument("--max-doc", type=int, default=25_000, help="heldout: longest document taken")
    p.add_argument("--corpus", help="kinds: the training split's .jsonl (default training/work/corpus/train.jsonl)")
    p.add_argument("--stem", help="kinds: the model's STEM (reads STEM.vocab.txt and STEM.words.txt, writes "
                   "STEM.kinds.txt; default models/laya-default)")
    a = p.parse_args(argv)
    if a.budget is None:
        a.budget = 40_000 if a.languages else 150_000
    if a.out:
        global OUT
        OUT = os.path.abspath(a.out)
    globals()[f"cmd_{a.step}"](a)


if __name__ == "__main__":
    sys.exit(main())
