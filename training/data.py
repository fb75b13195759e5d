"""Token-id streams for training and evaluation: every document of a split
encoded with the vocabulary (starting with <s>) and concatenated into one
uint16 array on disk. The training stream weights sources (in-domain editor
help and Vim script/Lua count double; the hand-picked language and tool docs
one and a half times, since prose is the harder half; the bulk API references
and READMEs once; bulky Rust, kernel docs, the JDK and the GNU toolchain
sources less, so that no one project's identifiers dominate)."""

import hashlib
import os
from multiprocessing import Pool

import numpy as np

from .corpus.build import read_docs
from .corpus.fetch import WORK
from .vocab import Vocab

DATA = os.path.join(WORK, "data")

WEIGHTS = {"nvim-help": 2, "vim-help": 2, "vim-plugin-help": 2, "nvim-runtime": 2, "vim-runtime": 2,
           "vim-plugins": 2, "lua-debian": 1.5, "linux-docs": 0.7, "rust-std": 0.6, "crates": 0.6,
           "qt-docs": 1, "boost-docs": 1, "java-docs": 1, "ruby-docs": 1, "info-pages": 1, "perl-docs": 1,
           "pydocs-more": 1, "debian-books": 1, "cargo-book": 1, "package-readmes": 1, "npm-readmes": 1,
           "go-readmes": 1, "java": 0.6, "glibc": 0.7, "binutils": 0.5, "c-headers": 0.7}
PROSE_WEIGHT = 1.5  # prose sources not named above

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
    frac = int(hashlib.sha1(rec["text"][:2000].encode()).hexdigest()[:6], 16) / 0xFFFFFF
    return int(w) + (1 if frac < w - int(w) else 0)


def encode_split(vocab_path, split, kind=None, weighted=False, workers=2, lang=None):
    texts = []
    for rec in read_docs(split, kind):
        if lang is None or rec.get("lang") == lang:
            texts.extend([rec["text"]] * (copies(rec) if weighted else 1))
    with Pool(workers, initializer=_init, initargs=(vocab_path,)) as pool:
        parts = pool.map(_encode, texts, chunksize=16)
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)


def path(name):
    return os.path.join(DATA, f"{name}.u16")


def code_languages(split="test"):
    """The languages of a split's code documents, most bytes first."""
    size = {}
    for rec in read_docs(split, "code"):
        size[rec["lang"]] = size.get(rec["lang"], 0) + len(rec["text"])
    return sorted(size, key=lambda lang: (-size[lang], lang))


def build(vocab_path, log=print, workers=2):
    """train.u16 (weighted mixture), valid/test per kind, and valid/test per
    code language (`test.python.u16`, ...: scored one language at a time)."""
    os.makedirs(DATA, exist_ok=True)
    jobs = [("train", None, True, None)] + [(s, k, False, None) for s in ("valid", "test") for k in ("prose", "code")]
    jobs += [(s, "code", False, lang) for s in ("valid", "test") for lang in code_languages(s)]
    for split, kind, weighted, lang in jobs:
        name = split if kind is None else f"{split}.{lang or kind}"
        ids = encode_split(vocab_path, split, kind, weighted, workers, lang)
        ids.tofile(path(name))
        log(f"{name:16s} {len(ids):>11,d} tokens")


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
