"""Where each word of a model is written (models/FORMAT.md `<stem>.kinds.txt`):
how often every word of the vocabulary and the word list occurs in the prose
documents of the training split, in the comments and strings of its code
documents, and in the rest of the code (identifiers, keywords). The engine
prefers words of prose in prose, comments and strings from it.

Comments and strings are found by one regular expression per language
(`notes`): good enough for counting words, and for marking the kind of text
at a position of a held-out file (`kind_at_end`, benches/with_syntax.py).
"""

import re
from collections import Counter

from .tokenizer import UNK, is_word

_WORD = re.compile(r"[A-Za-z0-9_]+")

# Columns of the file after the word, in order.
CLASSES = ("prose", "note", "code")

_DQ = r'"(?:\\.|[^"\\\n])*"?'
_SQ = r"'(?:\\.|[^'\\\n])*'?"
_SLASH = r"//[^\n]*"
_BLOCK = r"/\*(?:.|\n)*?(?:\*/|\Z)"
_HASH = r"#[^\n]*"
_BACKTICK = r"`[^`]*`?"
_TRIPLE = r'"""(?:.|\n)*?(?:"""|\Z)' + r"|'''(?:.|\n)*?(?:'''|\Z)"
_LUA_LONG = r"(?:--)?\[(=*)\[(?:.|\n)*?(?:\]\1\]|\Z)"

# Comments and strings of each language, first alternative first: a comment
# opener inside a string is part of the string and the other way round.
_C_LIKE = "|".join((_SLASH, _BLOCK, _DQ, _SQ))
_NOTES = {
    "c": _C_LIKE, "cpp": _C_LIKE, "java": _C_LIKE, "csharp": _C_LIKE, "kotlin": _C_LIKE,
    "javascript": "|".join((_SLASH, _BLOCK, _DQ, _SQ, _BACKTICK)),
    "typescript": "|".join((_SLASH, _BLOCK, _DQ, _SQ, _BACKTICK)),
    "go": "|".join((_SLASH, _BLOCK, _DQ, _BACKTICK, _SQ)),
    # A quote in Rust is a lifetime ('a) as often as a character.
    "rust": "|".join((_SLASH, _BLOCK, _DQ, r"'(?:\\.|[^'\\\n])'")),
    "python": "|".join((_HASH, _TRIPLE, _DQ, _SQ)),
    "shell": "|".join((_HASH, _DQ, _SQ)), "ruby": "|".join((_HASH, _DQ, _SQ)),
    "cmake": "|".join((_HASH, _DQ)), "make": _HASH, "yaml": "|".join((_HASH, _DQ, _SQ)),
    "toml": "|".join((_HASH, _DQ, _SQ)),
    "lua": "|".join((_LUA_LONG, r"--[^\n]*", _DQ, _SQ)),
    # Vim script: a line whose first character is a double quote is a comment.
    "vim": "|".join((r'(?m:^[ \t:]*"[^\n]*)', _SQ, _DQ)),
    "sql": "|".join((r"--[^\n]*", _BLOCK, _SQ)),
}
_NOTE_RE = {lang: re.compile(p) for lang, p in _NOTES.items()}
# Alternatives that end at the line's end (comments): open until a newline.
_LINE_OPENERS = ("//", "#", "--", '"')


def notes(text, lang):
    """(start, end) of each comment and string of `text` written in `lang`;
    none for a language without a rule."""
    r = _NOTE_RE.get(lang)
    return [m.span() for m in r.finditer(text)] if r else []


def kind_at_end(text, lang):
    """The kind of text at the end of `text` (a document up to the cursor):
    "comment", "string" or "code"."""
    return KindAtEnd(lang).feed(text)


class KindAtEnd:
    """`kind_at_end` of a document typed on: each `feed` adds text and
    reads only what follows the last place known to be code."""

    def __init__(self, lang):
        self.re = _NOTE_RE.get(lang)
        self.lang = lang
        self.text = ""
        self.start = 0

    def feed(self, new):
        self.text += new
        n = len(self.text)
        if self.re is None:
            return "code"
        last, safe = None, self.start
        for m in self.re.finditer(self.text, self.start):
            last = m
            # A few more characters could still change where a match ends
            # (a string's last character an escaping backslash).
            if m.end() < n - 8:
                safe = m.end()
        if last is None or last.end() < n:
            # Code up to the end: the current line's start is code too
            # when no comment or string reaches into the line.
            line = self.text.rfind("\n", 0, n) + 1
            self.start = max(safe, line) if last is None or last.end() <= line else safe
            return "code"
        self.start = last.start()
        return _open_kind(last.group(0), self.lang)


def _open_kind(s, lang):
    """The kind of text at the end of the comment or string `s` that
    reaches the cursor: "code" when `s` is closed."""
    line_comment = lang == "vim" and s.lstrip(" \t:").startswith('"')
    line_comment = line_comment or (s.startswith(("//", "#", "--")) and not s.startswith(("--[", "#{")))
    if line_comment:
        return "comment"
    block = s.startswith(("/*", "--["))
    closers = {"/*": "*/", '"""': '"""', "'''": "'''", '"': '"', "'": "'", "`": "`"}
    opener = next((o for o in ('"""', "'''", "/*", '"', "'", "`") if s.startswith(o)), None)
    if opener and len(s) >= 2 * len(opener) and s.endswith(closers[opener]):
        return "code"
    if s.startswith("[") or s.startswith("--["):
        if re.search(r"\](=*)\]\Z", s):
            return "code"
    return "comment" if block else "string"


def used_as_code(text, s, e):
    """Is the word text[s:e] of prose or of a comment named as code: a call
    (`isprint(`), a quoted name (`'iskeyword'`, `` `printf` ``), a member
    (`os.path`, `p->next`, `std::vector`)?"""
    after = text[e:e + 1]
    if after == "(":
        return True
    before = text[s - 1:s] if s else ""
    if before and before == after and before in "`'\"":
        return True
    two = text[max(s - 2, 0):s]
    return two in ("->", "::") or (before == "." and len(two) == 2 and (two[0].isalnum() or two[0] == "_"))


def count_words(rec, words):
    """Counter of (word, class) over one corpus document, for the words of
    `words` (a set) only, and the total word tokens of each class. A word
    of prose or of a comment or string named as code counts as code."""
    found, totals = Counter(), Counter()

    def add(text, cls):
        for m in _WORD.finditer(text):
            s, e = m.span()
            c = "code" if cls != "code" and used_as_code(text, s, e) else cls
            totals[c] += 1
            t = m.group(0)
            if t in words:
                found[(t, c)] += 1

    text = rec["text"]
    if rec.get("kind") != "code":
        add(text, "prose")
        return found, totals
    at = 0
    for s, e in notes(text, rec.get("lang")):
        add(text[at:s], "code")
        add(text[s:e], "note")
        at = e
    add(text[at:], "code")
    return found, totals


def model_words(vocab_path, words_path):
    """The words of a vocabulary file and of its word list (if there is one)."""
    with open(vocab_path, encoding="utf-8") as f:
        words = {t for t in f.read().split("\n") if is_word(t)}
    try:
        with open(words_path, encoding="utf-8") as f:
            lines = f.read().split("\n")[1:]
    except FileNotFoundError:
        lines = []
    words.update(line.split("\t")[0] for line in lines if line)
    return words


def write(path, totals, found):
    """FORMAT.md: `<unk>` and the total word tokens of each class, then
    `word<TAB>prose<TAB>note<TAB>code` for each word seen, by descending
    total count, ties by text."""
    rows = {}
    for (w, cls), n in found.items():
        rows.setdefault(w, [0, 0, 0])[CLASSES.index(cls)] += n
    order = sorted(rows.items(), key=lambda wr: (-sum(wr[1]), wr[0]))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(UNK + "".join(f"\t{totals[c]}" for c in CLASSES) + "\n")
        f.write("".join(f"{w}\t{r[0]}\t{r[1]}\t{r[2]}\n" for w, r in order))
    return len(order)


def read(path):
    """(totals, {word: (prose, note, code)}) of a kinds file; ValueError
    names the line that is not FORMAT.md's."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines[-1] != "":
        raise ValueError(f"{path}: does not end with a newline")
    head = lines[0].split("\t")
    if len(head) != 4 or head[0] != UNK or not all(x.isdigit() for x in head[1:]):
        raise ValueError(f"{path}: line 1 must be {UNK} and three counts")
    rows = {}
    for i, line in enumerate(lines[1:-1], start=2):
        row = line.split("\t")
        if len(row) != 4 or not is_word(row[0]) or not all(x.isdigit() for x in row[1:]) or row[0] in rows:
            raise ValueError(f"{path}: line {i}: expected word and three counts, found {line!r}")
        rows[row[0]] = tuple(int(x) for x in row[1:])
    return tuple(int(x) for x in head[1:]), rows
