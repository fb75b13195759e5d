"""Builds learn/score splits of METRICS.md text files to measure personal
learning (`ksr.py run --learn`): text the training corpus never fetched,
earlier writing of one source learnt, later writing of the same source scored.

    python3 benches/learn_split.py OUT_DIR [--dev]
    # writes OUT_DIR/{prose,code,python,lua,manual}-{learn,score}.txt

Held-out (the figures reported):
prose: git's release notes (/usr/share/doc/git/RelNotes, git documentation
is reserved for evaluation): notes of 2.20-2.34 learnt, 2.35 onwards scored.
code: two crates of the local cargo registry that the corpus does not fetch
(tokio-util, mio): two of every three source files learnt, the third scored.
python: the Google Cloud SDK's googlecloudsdk/core package (not in the
corpus), two of every three files learnt, the third scored.
lua: the Neovim completion plugins nvim-cmp and blink.cmp (../shared/vendor,
not in the corpus), two of every three Lua files learnt, the third scored
(the two plugins' scored files taking turns);
added after the learning's constants were chosen, as a check on a language
and kind of project they were not chosen on (skipped where ../shared/vendor
is absent; its --dev counterpart, awesome's Lua, came later).
manual: the GnuCash manuals (the Debian package gnucash-docs, English
DocBook chapters as plain text; not in the corpus), two of every three
chapters learnt, the third scored. A second prose source, of another kind
(a user manual, not release notes), added after the constants were chosen
(no --dev counterpart). The package is fetched once with `apt-get download`
into ~/.cache/laya-bench (LAYA_BENCH_CACHE); skipped where that fails.

--dev writes other documents of the same kinds of sources, to choose the
learning's constants on (never the held-out ones above): release notes
1.5-1.9 learnt and 2.0-2.19 scored; the crates h2 and hyper-util; the
googlecloudsdk/calliope package; the awesome window manager's Lua library
(fetched like the manual)."""

import glob
import gzip
import html
import itertools
import os
import re
import subprocess
import sys
import textwrap

import debs

SCORE_BYTES = 70_000


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    return text if text.endswith("\n") else text + "\n"


def version(path):
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", os.path.basename(path))
    return tuple(int(x) for x in m.groups()) if m else None


DEV = "--dev" in sys.argv


def prose():
    notes = [p for p in glob.glob("/usr/share/doc/git/RelNotes/*") if version(p)]
    notes = sorted((p for p in notes if version(p)[2] == 0), key=version)
    if DEV:
        learn = [read(p) for p in notes if version(p)[:2] < (2, 0)]
        score = [read(p) for p in notes if (2, 0) <= version(p)[:2] < (2, 20)]
    else:
        learn = [read(p) for p in notes if (2, 20) <= version(p)[:2] < (2, 35)]
        score = [read(p) for p in notes if version(p)[:2] >= (2, 35)]
    return learn, score


def thirds(files):
    learn, score = [], []
    files = [f for f in files if 1500 < os.path.getsize(f) < 40_000]
    for i, f in enumerate(files):
        (score if i % 3 == 2 else learn).append(read(f))
    return learn, score


def python():
    package = "calliope" if DEV else "core"
    root = f"/usr/lib/google-cloud-sdk/lib/googlecloudsdk/{package}"
    files = sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True))
    if not files:
        sys.exit(f"no {root}")
    return thirds(files)


def code():
    learn, score = [], []
    for name in ("h2-0.4", "hyper-util-0.1") if DEV else ("tokio-util-0.7", "mio-1."):
        roots = sorted(glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{name}*")))
        if not roots:
            sys.exit(f"no {name}* crate in the cargo registry")
        files = sorted(glob.glob(os.path.join(roots[-1], "src", "**", "*.rs"), recursive=True))
        a, b = thirds(files)
        learn += a
        score += b
    return learn, score


def lua():
    if DEV:
        return awesome_lua()
    vendor = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "vendor")
    learn, scores = [], []
    for plugin in ("nvim-cmp", "blink.cmp"):
        files = sorted(glob.glob(os.path.join(vendor, plugin, "lua", "**", "*.lua"), recursive=True))
        a, b = thirds(files)
        learn += a
        scores.append(b)
    # The plugins' scored files take turns, so that the size cap keeps both.
    score = [d for pair in itertools.zip_longest(*scores) for d in pair if d is not None]
    return learn, score


def awesome_lua():
    """The dev counterpart of the Lua split: the awesome window manager's
    Lua library (the Debian package awesome; not in the corpus), two of every
    three files learnt, the third scored."""
    try:
        root = debs.unpacked(["awesome"], "awesome")
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"lua: awesome not available ({e})")
        return [], []
    files = sorted(glob.glob(os.path.join(root, "usr", "share", "awesome", "lib", "**", "*.lua"), recursive=True))
    return thirds(files)


def gnucash_chapters():
    """The English chapters of the GnuCash guide and help, fetched once."""
    try:
        root = debs.unpacked(["gnucash-docs"], "gnucash-docs")
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"manual: gnucash-docs not available ({e})")
        return []
    files = sorted(glob.glob(os.path.join(root, "usr", "share", "help", "C", "gnucash-*", "*.xml")))
    return [f for f in files if "fdl" not in os.path.basename(f) and "legal" not in os.path.basename(f)]


def docbook_text(path):
    """A DocBook chapter as plain paragraphs wrapped at 76 columns: block
    elements become paragraph breaks, other tags and figures go, entities
    are resolved (`&app;` is the application's name)."""
    with open(path, encoding="utf-8") as f:
        s = f.read()
    s = re.sub(r"<!--.*?-->|<\?.*?\?>|<!DOCTYPE.*?\]>|<!DOCTYPE.*?>", "", s, flags=re.S)
    s = re.sub(r"<(indexterm|figure|screenshot|mediaobject|inlinemediaobject|info|bookinfo|articleinfo)\b.*?</\1>",
               "", s, flags=re.S)
    blocks = r"para|title|simpara|listitem|entry|term|member|screen|programlisting|note|tip|warning|row|step"
    s = re.sub(r"</?(" + blocks + r")\b[^>]*>", "\n\n", s)
    s = re.sub(r"<[^>]+>", "", s)

    def entity(m):
        e = m.group(0)
        return "GnuCash" if e == "&app;" else html.unescape(e) if html.unescape(e) != e else ""

    s = re.sub(r"&[a-zA-Z][a-zA-Z0-9.-]*;", entity, s)
    paras = (" ".join(p.split()) for p in re.split(r"\n\s*\n", s))
    return "\n\n".join(textwrap.fill(p, 76) for p in paras if p) + "\n"


def manual():
    learn, score = [], []
    for i, f in enumerate(gnucash_chapters()):
        text = docbook_text(f)
        if len(text) >= 1500:
            (score if i % 3 == 2 else learn).append(text)
    return learn, score


def capped(docs, limit):
    out, size = [], 0
    for d in docs:
        if size >= limit:
            break
        out.append(d)
        size += len(d)
    return out


def main(out):
    os.makedirs(out, exist_ok=True)
    kinds = [("prose", prose()), ("code", code()), ("python", python()), ("lua", lua())]
    if not DEV:
        kinds.append(("manual", manual()))
    for kind, (learn, score) in kinds:
        if not score:
            print(f"{kind}: no documents (skipped)")
            continue
        score = capped(score, SCORE_BYTES)
        for part, docs in (("learn", learn), ("score", score)):
            path = os.path.join(out, f"{kind}-{part}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\f\n".join(docs))
            print(f"{path}: {len(docs)} documents, {sum(map(len, docs))} characters")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--dev"]
    main(args[0] if args else "/tmp/laya-learn")
