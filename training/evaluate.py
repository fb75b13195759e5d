"""Model-only evaluation on a token stream: perplexity, and next-word accuracy
(top-1 / top-3 among the vocabulary's words) at every position whose target is
a word. <unk> targets count as words the model missed (most of them are rare
identifiers; the engine's cache model is what predicts those)."""

import math

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from .tokenizer import SPECIALS, is_word


def word_mask(vocab_tokens):
    return np.array([t not in SPECIALS and is_word(t) for t in vocab_tokens])


def evaluate(model, ids, vocab_tokens, tokens=None, batch_rows=32, window=256):
    """Reads the stream as `batch_rows` contiguous rows, state carried across windows."""
    ids = ids if tokens is None else ids[: tokens + 1]
    n = (len(ids) - 1) // batch_rows * batch_rows
    x = np.asarray(ids[:n], dtype=np.int32).reshape(batch_rows, -1)
    y = np.asarray(ids[1 : n + 1], dtype=np.int32).reshape(batch_rows, -1)
    words = word_mask(vocab_tokens)
    words_mx = mx.array(words)
    is_target_word = words[y] | (y == 0)
    nll = top1 = top3 = 0.0
    hidden = None
    for s in range(0, x.shape[1], window):
        xb, yb = mx.array(x[:, s : s + window]), mx.array(y[:, s : s + window])
        logits, hidden = model(xb, hidden)
        nll += nn.losses.cross_entropy(logits, yb, reduction="sum").item()
        wl = mx.where(words_mx, logits, -mx.inf)  # next word: candidates are words only
        best3 = mx.argpartition(-wl, kth=2, axis=-1)[..., :3]
        best1 = mx.argmax(wl, axis=-1)
        hit1 = np.array(best1 == yb)
        hit3 = np.array(mx.any(best3 == yb[..., None], axis=-1))
        mask = is_target_word[:, s : s + window]
        top1 += float((hit1 & mask).sum())
        top3 += float((hit3 & mask).sum())
    nw = max(int(is_target_word.sum()), 1)
    return {"tokens": int(y.size), "perplexity": math.exp(nll / y.size), "unk_rate": float((y == 0).mean()),
            "words": nw, "next_word_top1": top1 / nw, "next_word_top3": top3 / nw}
