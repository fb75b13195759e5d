"""The vocabulary: token counts over the training split, the vocabulary file
(FORMAT.md: <unk>, <s>, <nl>, then by descending frequency), its hash, and
text -> id encoding; and the word list beside it (FORMAT.md `<stem>.words.txt`):
the frequent words the vocabulary leaves out, which the engine completes
from a typed prefix."""

import hashlib
from collections import Counter

from .tokenizer import BOS, NL, SPECIALS, UNK, is_word, tokenize, vocab_form

# The word list (FORMAT.md): out-of-vocabulary words this long and this
# frequent, at most this many. Shorter words save little when completed after
# two typed characters; words seen once are mostly typos and one-off names.
WORDS_MIN_LEN = 4
WORDS_MIN_COUNT = 2
WORDS_MAX = 100_000


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


def words_path(vocab_path):
    """FORMAT.md: the word list of <stem>.vocab.txt is <stem>.words.txt."""
    stem = vocab_path[: -len(".vocab.txt")] if vocab_path.endswith(".vocab.txt") else vocab_path
    return stem + ".words.txt"


def oov_words(counts, vocab_tokens, min_len=WORDS_MIN_LEN, min_count=WORDS_MIN_COUNT, limit=WORDS_MAX):
    """(total count of out-of-vocabulary word tokens, the listed words as
    (word, count), most frequent first, ties by text)."""
    known = set(vocab_tokens)
    oov = [(t, n) for t, n in counts.items() if is_word(t) and t not in known]
    total = sum(n for _, n in oov)
    listed = [(t, n) for t, n in oov if len(t) >= min_len and n >= min_count]
    listed.sort(key=lambda tn: (-tn[1], tn[0]))
    return total, listed[:limit]


def write_words(total, listed, path):
    """`<unk>\t<total>`, then `word\tcount` per line."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"{UNK}\t{total}\n")
        f.write("".join(f"{t}\t{n}\n" for t, n in listed))


def read_words(path):
    """(total, [(word, count), ...]) of a word-list file; ValueError names the
    file and line when it is not FORMAT.md's."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines[-1] != "":
        raise ValueError(f"{path}: does not end with a newline")
    rows = [line.split("\t") for line in lines[:-1]]
    if not rows or len(rows[0]) != 2 or rows[0][0] != UNK or not rows[0][1].isdigit():
        raise ValueError(f"{path}: line 1 must be {UNK}<TAB><count>")
    listed = []
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != 2 or not is_word(row[0]) or not row[1].isdigit() or int(row[1]) < 1:
            raise ValueError(f"{path}: line {i}: expected word<TAB>count, found {lines[i - 1]!r}")
        listed.append((row[0], int(row[1])))
    return int(rows[0][1]), listed


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
