"""The laya-tok-1 tokenizer (models/FORMAT.md): text -> word, newline and
single-character tokens. The Rust engine implements the same spec; both are
checked against tests/data/tokenizer_vectors.json."""

import re

NAME = "laya-tok-1"
UNK, BOS, NL = "<unk>", "<s>", "<nl>"
SPECIALS = (UNK, BOS, NL)  # ids 0, 1, 2 in every vocabulary

# One alternative per rule of the spec, in order: a word (maximal ASCII run,
# identifiers and numbers alike), a newline, skipped blanks, any other code point.
_TOKEN = re.compile(r"([A-Za-z0-9_]+)|(\n)|[ \t\r\v\f]+|(.)", re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9_]+")


def tokenize(text):
    """Tokens of `text` as strings; the newline token is "\\n"."""
    out = []
    for m in _TOKEN.finditer(text):
        word, newline, other = m.groups()
        tok = word or newline or other
        if tok is not None:
            out.append(tok)
    return out


def is_word(token):
    return _WORD.fullmatch(token) is not None


def vocab_form(token):
    """How a token is written in the vocabulary file ("\\n" is <nl>)."""
    return NL if token == "\n" else token
