"""Cleaners: turn each source format (Vim help, reST, Markdown, HTML, man pages,
source code) into plain text, and the filters every document passes (length,
English, generated or minified code, licence headers)."""

import gzip
import html
import re
import subprocess
from html.parser import HTMLParser

URL = re.compile(r"(?:https?|ftp)://\S+|www\.\S+")
MIN_CHARS = 200


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def normalise(text):
    """Common tidy-up: LF line ends, no form feeds (they separate documents in
    the held-out files), no trailing blanks, at most two blank lines in a row,
    ends with one newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "").replace("\v", "")
    text = text.replace("\ufffd", "").replace("\x00", "")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{4,}", "\n\n\n", text)
    return text.strip("\n") + "\n"


# --- prose formats ---------------------------------------------------------

def vimhelp(text):
    out = []
    for line in text.split("\n"):
        if re.match(r"^\s*vim:", line) or re.match(r"^[=\-]{5,}\s*$", line):
            continue
        line = re.sub(r"\*[^*\s]+\*", "", line)  # *tag* anchors
        line = re.sub(r"\|([^|\s]+)\|", r"\1", line)  # |link| -> link
        line = re.sub(r"(\s)>[a-z]*$|^>[a-z]*$", r"\1", line)  # code-block start marker (">vim")
        line = re.sub(r"^\s*<\s*$", "", line)  # code-block end marker
        line = re.sub(r"\s~$", "", line)  # heading marker
        out.append(URL.sub("", line.rstrip()))
    return "\n".join(out)


_ROLE = re.compile(r":[\w:.+-]+:`([^`<]*?)(?:\s*<[^>`]*>)?`")
_REF = re.compile(r"`([^`<]+?)(?:\s*<[^>`]*>)?`_{1,2}")
_ADORN = re.compile(r"^([=\-~^*+#\"'`:.<>_])\1{2,}\s*$")


def rst(text):
    out, comment = [], False
    for line in text.split("\n"):
        s = line.strip()
        if comment:  # the indented body of a ".. comment" is dropped with it
            if not s or line[:1] in " \t":
                continue
            comment = False
        if s.startswith("..") and not re.match(r"^\.\. [\w:-]+::", s) and not s.startswith(".. _"):
            comment = True
            continue
        if _ADORN.match(s) or s.startswith(".. _") or s.startswith(".. |") or s == "..":
            continue
        if re.match(r"^\.\. [\w:-]+::", s):  # directive line; its indented body stays
            arg = s.split("::", 1)[1].strip()
            if re.match(r"^\.\. (note|warning|seealso|versionadded|versionchanged|deprecated)", s) and arg:
                out.append(arg)
            continue
        if re.match(r"^\s*:[\w -]+:\s*", line) and not line.startswith(" " * 8):  # field lists / options
            line = re.sub(r"^(\s*):[\w -]+:\s*", r"\1", line)
        if re.match(r"^\s*[+|]?[=+\-]{3,}[+=\-| ]*$", line):  # table rules
            continue
        line = _ROLE.sub(r"\1", line)
        line = _REF.sub(r"\1", line)
        line = line.replace("``", "").replace("**", "")
        out.append(URL.sub("", line))
    return "\n".join(out)


def markdown(text):
    out, fence = [], False
    for line in text.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            fence = not fence
            continue
        if not fence:
            if re.match(r"^\s*\|?\s*:?-{3,}", line):
                continue
            line = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", line)
            line = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line)
            line = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", line)
            if re.match(r"^\s*\[[^\]]+\]:\s", line):
                continue
            line = re.sub(r"</?[A-Za-z][^>]*>", "", line)
            line = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", line)
            line = re.sub(r"^#{1,6}\s+", "", line)
            line = URL.sub("", line)
        out.append(line)
    return "\n".join(out)


class _HtmlText(HTMLParser):
    SKIP = {"script", "style", "nav", "head", "noscript"}
    SKIP_CLASS = re.compile(r"sidebar|toc|menu|footer|headerlink|related|breadcrumb|nav", re.I)
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "pre",
             "table", "ul", "ol", "dl", "blockquote", "section", "hr"}
    VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.stack, self.skip_depth, self.pre = [], [], 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            if tag in self.BLOCK and not self.skip_depth:
                self.parts.append("\n")
            return
        a = dict(attrs)
        skip = tag in self.SKIP or bool(self.SKIP_CLASS.search(f"{a.get('class', '')} {a.get('id', '')}"))
        self.stack.append((tag, skip))
        if skip:
            self.skip_depth += 1
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCK and not self.skip_depth:
            self.parts.append("\n\n" if tag in ("p", "pre", "h1", "h2", "h3", "h4", "table") else "\n")

    def handle_endtag(self, tag):
        while self.stack:
            t, skip = self.stack.pop()
            if skip:
                self.skip_depth -= 1
            if t == "pre":
                self.pre -= 1
            if t == tag:
                break
        if tag in self.BLOCK and not self.skip_depth:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.skip_depth:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_text(text):
    p = _HtmlText()
    p.feed(text)
    p.close()
    out = "".join(p.parts)
    # collapsed text leaves at most one leading space; <pre> keeps its indentation
    out = "\n".join(l[1:].rstrip() if l.startswith(" ") and not l.startswith("  ") else l.rstrip()
                    for l in out.split("\n"))
    return URL.sub("", html.unescape(out))


def man(path):
    """A man page (roff source) rendered by groff to plain text."""
    src = read_text(path)
    if src.lstrip().startswith(".so "):
        return ""  # alias of another page
    r = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=80n", "-rHY=0", "-dAD=l", "-Wall"],
                       input=src.encode("utf-8"), capture_output=True, timeout=60)
    text = r.stdout.decode("utf-8", errors="replace")
    text = re.sub(r".\x08", "", text)
    lines = text.split("\n")
    # groff's page header and footer lines: NAME(1) ... NAME(1)
    if lines and re.match(r"^\S+\(\w+\)\s+.*\S+\(\w+\)\s*$", lines[0]):
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and re.search(r"\S+\(\w+\)\s*$", lines[-1]):
        lines = lines[:-1]
    return URL.sub("", "\n".join(lines))


_EMAIL = re.compile(r"<?[\w.+-]+@[\w-]+(\.[\w-]+)+>?")


def plain(text):
    """Plain text (NEWS files, upstream changelogs): URLs and e-mail addresses removed."""
    return _EMAIL.sub("", URL.sub("", text))


def info(text):
    """A GNU Info file: nodes (separated by \\x1f) without their header lines,
    menus and the tag table; the prose and examples stay."""
    out = []
    for node in text.split("\x1f"):
        lines = node.strip("\n").split("\n")
        if not lines or lines[0].startswith(("Tag Table:", "End Tag Table", "Indirect:")):
            continue
        if lines[0].startswith("File:"):
            lines = lines[1:]
        menu = False
        for line in lines:
            if line.startswith("* Menu:"):
                menu = True
                continue
            if menu and (line.startswith("* ") or not line.strip() or line.startswith(" ")):
                continue
            menu = False
            if re.match(r"^[*=.-]{4,}\s*$", line):  # heading underlines
                continue
            out.append(URL.sub("", line.replace("\x7f", "")))
        out.append("")
    return "\n".join(out)


# --- code ------------------------------------------------------------------

_LICENCE_WORDS = re.compile(r"licen[cs]e|copyright|spdx|warranty|\(c\) \d{4}", re.I)
_GENERATED = re.compile(r"do not edit|auto-?generated|@generated|generated by|automatically generated|"
                        r"this file (is|was) generated|a bison parser, made by|produced by gnu bison|"
                        r"generated from .* by|the (sqlite )?amalgamation", re.I)
# Generated files known by name: protobuf and gRPC output, tree-sitter parsers
# (parser.c beside tree_sitter/parser.h), lexer/parser tables.
_GENERATED_NAME = re.compile(r"(\.pb\.(go|gw\.go|cc|h|rs)|_pb2(_grpc)?\.pyi?|\.pb\.ts|_pb\.(js|d\.ts)|"
                             r"(^|/)(lex\.yy\.c|y\.tab\.[ch])|amalgamation[^/]*\.[ch]|\.min\.[a-z]+)$", re.I)
AMALGAMATION_CAP = 200_000  # bytes: a single C file larger than this is a bundle of a whole library


def generated(path, text):
    """Whether a source file is generated (not written by a person) or a
    bundle: protobuf output, tree-sitter's parser.c, amalgamations, minified
    or machine-written files (by name or by what their first lines say)."""
    if _GENERATED_NAME.search(path) or _GENERATED.search(text[:1000]):
        return True
    base = path.rsplit("/", 1)[-1]
    if base == "parser.c" and "tree_sitter/parser.h" in text[:5000]:
        return True
    return base.endswith((".c", ".cc", ".cpp")) and len(text.encode("utf-8")) > AMALGAMATION_CAP


def code(text, lang, path=""):
    """Source file with its leading licence comment block and SPDX lines
    removed; "" if it is generated or minified."""
    if generated(path, text):
        return ""
    lines = text.split("\n")
    if lines and len(lines) > 3:
        long_lines = sum(1 for l in lines if len(l) > 300)
        if long_lines > max(3, len(lines) // 50) or max(map(len, lines)) > 2000:
            return ""  # minified or data
    text = _strip_licence_header(text)
    text = "\n".join(l for l in text.split("\n") if "SPDX-License-Identifier" not in l)
    return text


def _strip_licence_header(text):
    # keep a shebang / encoding line, drop the first comment block if it is a licence
    m = re.match(r"(#![^\n]*\n)?(#.*coding[:=][^\n]*\n)?", text)
    head = m.group(0) if m else ""
    rest = text[len(head):]
    block = re.match(r"\s*(/\*.*?\*/|(?:[ \t]*(?://|#|--)[^\n]*\n)+|\"\"\".*?\"\"\"|'''.*?''')", rest, re.S)
    if block and _LICENCE_WORDS.search(block.group(0)):
        rest = rest[block.end():]
    return head + rest.lstrip("\n")


# --- filters ---------------------------------------------------------------

_STOP = set("the a an of to and in is that for it as with be on by this are or not from at which "
            "can if you will an use used when it's its these has have was any all each".split())
_NON_ENGLISH_PATH = re.compile(
    r"(^|/)(translations?|i18n|l10n|locales?|lang)(/|$)|[/._-](zh[_-](cn|tw)|ja[_-]jp|ko[_-]kr|it[_-]it|"
    r"fr[_-]fr|de[_-]de|es[_-]es|pt[_-]br|ru[_-]ru)([/._-]|$)|README\.[a-z]{2}(-[A-Za-z]{2})?\.md$", re.I)


def english_enough(text, kind):
    if not text:
        return False
    letters = sum(1 for c in text if c.isalpha())
    foreign = sum(1 for c in text if c.isalpha() and ord(c) > 0x24F)
    if letters and foreign / letters > (0.03 if kind == "prose" else 0.01):
        return False
    if kind == "prose":
        words = re.findall(r"[A-Za-z']+", text.lower())
        if len(words) > 150 and sum(w in _STOP for w in words) / len(words) < 0.06:
            return False
    return True


def non_english_path(path):
    return bool(_NON_ENGLISH_PATH.search(path))
