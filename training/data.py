"""Token-id streams for training and evaluation: every document of a split
encoded with the vocabulary (starting with <s>) and concatenated into one
uint16 array on disk. The training stream weights sources: editor help and
the editors' Vim script/Lua three times, the language and tool docs of the first corpus
twice (prose is the harder half, and these are what people write about),
other prose one and a half times or less; code by language on top of its
source (Python, Rust and TypeScript up: with C, C++, Go and Java in the
corpus their share fell by half or more and the model lost ground on them), and
the bulky new C, C++, Go and Java sources and their docs, and changelogs, down so
that no one project's identifiers dominate."""

import hashlib
import os
import shutil
from multiprocessing import Pool

import numpy as np

from .corpus.build import read_docs
from .corpus.fetch import WORK
from .vocab import Vocab

DATA = os.path.join(WORK, "data")

WEIGHTS = {"nvim-help": 3, "vim-help": 3, "vim-plugin-help": 3, "nvim-runtime": 3, "vim-runtime": 3,
           "vim-plugins": 3, "lua-debian": 2.5,
           "python-docs": 2, "rust-docs": 2, "node-docs": 2, "sqlite-docs": 2, "django-docs": 2, "cmake-docs": 2,
           "llvm-clang-docs": 2, "pydocs-debian": 2, "debian-policy": 2, "shell-docs": 2,
           "linux-docs": 0.7, "rust-std": 0.6, "crates": 0.6,
           "qt-docs": 0.7, "boost-docs": 0.7, "java-docs": 0.6, "ruby-docs": 1, "info-pages": 1, "perl-docs": 1,
           "pydocs-more": 1, "debian-books": 1, "cargo-book": 1, "package-readmes": 1, "npm-readmes": 1,
           "go-readmes": 1, "changelogs": 0.5,
           "java": 0.45, "glibc": 0.5, "binutils": 0.3, "c-headers": 0.5, "crates-c": 0.6, "cpp-debian": 0.7,
           "go": 0.7}
PROSE_WEIGHT = 1.5  # prose sources not named above
LANG_WEIGHTS = {"python": 1.6, "rust": 2.0, "typescript": 1.6,  # code: times its source's weight
                "shell": 2.0}  # round 5: under the bar of 33 (Ruby was 1.5 until its sources tripled)

_vocab = None


def _init(path):
    global _vocab
    _vocab = Vocab(path)


def _encode(text):
    return np.asarray(_vocab.encode(text), dtype=np.uint16)


def copies(rec):
    """How many times a training document enters the stream (weights below 1 keep a
    stable, hash-chosen fraction of the source's documents)."""
    w = WEIGHTS.get(rec["src"], PROSE_WEIGHT if rec.get("kind") == "prose" else 1.0)
    if rec.get("kind") == "code":
        w *= LANG_WEIGHTS.get(rec.get("lang"), 1.0)
    return int(w) + (1 if stable_fraction(rec["text"]) < w - int(w) else 0)


def stable_fraction(text):
    """A number in [0, 1] fixed by a document's text: which documents a
    fractional weight or share keeps, the same in every build."""
    return int(hashlib.sha1(text[:2000].encode()).hexdigest()[:6], 16) / 0xFFFFFF


def encode_split(vocab_path, split, kind=None, weighted=False, workers=2, lang=None):
    texts, times = [], []
    for rec in read_docs(split, kind):
        if lang is None or rec.get("lang") == lang:
            n = copies(rec) if weighted else 1
            if n:
                texts.append(rec["text"])
                times.append(n)
    with Pool(workers, initializer=_init, initargs=(vocab_path,)) as pool:
        parts = pool.map(_encode, texts, chunksize=16)
    parts = [np.tile(ids, n) for ids, n in zip(parts, times)]  # a document's copies side by side, encoded once
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)


def path(name):
    return os.path.join(DATA, f"{name}.u16")


def code_languages(split="test"):
    """The languages of a split's code documents, most bytes first."""
    size = {}
    for rec in read_docs(split, "code"):
        size[rec["lang"]] = size.get(rec["lang"], 0) + len(rec["text"])
    return sorted(size, key=lambda lang: (-size[lang], lang))


def build(vocab_path, log=print, workers=2, train_kind=None):
    """train.u16 (weighted mixture; of one kind's documents alone with
    `train_kind`, for a model of prose only), valid/test per kind, and
    valid/test per code language (`test.python.u16`, ...: scored one
    language at a time)."""
    os.makedirs(DATA, exist_ok=True)
    jobs = [("train", train_kind, True, None)] + [(s, k, False, None) for s in ("valid", "test") for k in ("prose", "code")]
    jobs += [(s, "code", False, lang) for s in ("valid", "test") for lang in code_languages(s)]
    for split, kind, weighted, lang in jobs:
        name = split if split == "train" else f"{split}.{lang or kind}"
        ids = encode_split(vocab_path, split, kind, weighted, workers, lang)
        ids.tofile(path(name))
        log(f"{name:16s} {len(ids):>11,d} tokens")


FOCUS_DOCS = {"shell": ("shell-docs",), "ruby": ("ruby-docs",)}  # prose sources that go with a language


def in_focus(rec, langs):
    """A training document of one of `langs`: its code, or a prose source
    about it (FOCUS_DOCS)."""
    if rec.get("kind") == "code":
        return rec.get("lang") in langs
    return any(rec["src"] in FOCUS_DOCS.get(lang, ()) for lang in langs)


def build_focus(vocab_path, langs, general, out_dir, log=print, workers=2):
    """The training stream of a model fine-tuned towards a few languages
    (`encode --focus`): every training document of `langs` once and a
    stable, hash-chosen `general` share of all the others (so that the
    model keeps the rest), in a fixed shuffled order of documents; written
    as `out_dir`/train.u16 beside copies of the validation and test
    streams of DATA (encode those first), for pack.sh's DATA."""
    texts, focus = [], []
    for rec in read_docs("train"):
        hit = in_focus(rec, langs)
        if hit or stable_fraction(rec["text"]) < general:
            texts.append(rec["text"])
            focus.append(hit)
    if not any(focus):
        raise SystemExit(f"no training documents of {', '.join(langs)}")
    with Pool(workers, initializer=_init, initargs=(vocab_path,)) as pool:
        parts = pool.map(_encode, texts, chunksize=16)
    order = np.random.default_rng(0).permutation(len(parts))
    os.makedirs(out_dir, exist_ok=True)
    np.concatenate([parts[i] for i in order]).tofile(os.path.join(out_dir, "train.u16"))
    n_focus = sum(len(p) for p, f in zip(parts, focus) if f)
    n_all = sum(len(p) for p in parts)
    log(f"train (focus {'+'.join(langs)}) {n_all:,d} tokens: {n_focus:,d} of the focus, "
        f"{n_all - n_focus:,d} of {general:.0%} of the rest")
    for name in sorted(os.listdir(DATA)):
        if name.startswith(("valid.", "test.")) and name.endswith(".u16"):
            shutil.copyfile(os.path.join(DATA, name), os.path.join(out_dir, name))


def load(name):
    return np.fromfile(path(name), dtype=np.uint16)


def stream_windows(ids, cfg, step):
    """A truncated-BPTT batch: row r reads its own stretch of the stream (the
    r-th of `batch_size` equal parts) `seq_len` tokens further at every step,
    wrapping at the stretch's end. Returns (inputs, targets, fresh): `fresh`
    when this step starts a new pass over the stretches, where the carried
    hidden state must start from zero. A function of the step alone: resumable."""
    span = (len(ids) - 1) // cfg.batch_size
    per_pass = max(1, (span - 1) // cfg.seq_len)
    offset = (step % per_pass) * cfg.seq_len
    starts = np.arange(cfg.batch_size, dtype=np.int64) * span + offset
    win = ids[starts[:, None] + np.arange(cfg.seq_len + 1)].astype(np.int32)
    return win[:, :-1], win[:, 1:], step % per_pass == 0


def windows(ids, cfg, step):
    """A training batch: `batch_size` random windows of `seq_len + 1` tokens as
    (inputs, targets) int32 arrays. The starts depend only on (seed, step), so a
    resumed run, or the PyTorch fallback, sees the same data."""
    rng = np.random.default_rng([cfg.seed, step])
    starts = rng.integers(0, len(ids) - cfg.seq_len - 1, size=cfg.batch_size)
    win = np.stack([ids[s : s + cfg.seq_len + 1] for s in starts]).astype(np.int32)
    return win[:, :-1], win[:, 1:]
