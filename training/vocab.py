"""The vocabulary: token counts over the training split, the vocabulary file
(FORMAT.md: <unk>, <s>, <nl>, then by descending frequency), its hash, and
text -> id encoding."""

import hashlib
from collections import Counter

from .tokenizer import BOS, NL, SPECIALS, UNK, tokenize, vocab_form


def count_tokens(texts):
    counts = Counter()
    for text in texts:
        counts.update(tokenize(text))
    return counts


def choose(counts, size):
    """The `size` tokens of the vocabulary, in file order. Ties are broken by
    the token itself so the file is deterministic."""
    ordinary = [(n, t) for t, n in counts.items() if t != "\n" and not any(c.isspace() for c in t)]
    ordinary.sort(key=lambda nt: (-nt[0], nt[1]))
    return list(SPECIALS) + [t for _, t in ordinary[: size - len(SPECIALS)]]


def write(tokens, path):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(t + "\n" for t in tokens))


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Vocab:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.tokens = f.read().split("\n")[:-1]
        if self.tokens[:3] != list(SPECIALS):
            raise ValueError(f"{path}: the first three lines must be {SPECIALS}, found {self.tokens[:3]}")
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.path = path
        self.sha256 = sha256(path)

    def __len__(self):
        return len(self.tokens)

    def id(self, token):
        return self.index.get(vocab_form(token), self.index[UNK])

    def encode(self, text, bos=True):
        """Token ids of a document, starting with <s>."""
        unk = self.index[UNK]
        ids = [self.index[BOS]] if bos else []
        ids.extend(self.index.get(NL if t == "\n" else t, unk) for t in tokenize(text))
        return ids


def coverage(vocab, texts):
    """Fraction of running tokens (and of word tokens) that are in the vocabulary."""
    tok = known = words = known_words = 0
    for text in texts:
        for t in tokenize(text):
            inv = vocab_form(t) in vocab.index
            tok += 1
            known += inv
            if t[0].isascii() and (t[0].isalnum() or t[0] == "_"):
                words += 1
                known_words += inv
    return {"tokens": tok, "coverage": known / max(tok, 1), "word_coverage": known_words / max(words, 1)}
