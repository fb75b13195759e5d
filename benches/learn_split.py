"""Builds learn/score splits of METRICS.md text files to measure personal
learning (`ksr.py run --learn`): text the training corpus never fetched,
earlier writing of one source learnt, later writing of the same source scored.

    python3 benches/learn_split.py OUT_DIR
    # writes OUT_DIR/{prose,code}-{learn,score}.txt

prose: git's release notes (/usr/share/doc/git/RelNotes, git documentation
is reserved for evaluation): notes of 2.20-2.34 learnt, 2.35 onwards scored.
code: two crates of the local cargo registry that the corpus does not fetch
(tokio-util, mio): two of every three source files learnt, the third scored.
Read the figures, do not tune on them alone."""

import glob
import gzip
import os
import re
import sys

SCORE_BYTES = 70_000


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    return text if text.endswith("\n") else text + "\n"


def version(path):
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", os.path.basename(path))
    return tuple(int(x) for x in m.groups()) if m else None


def prose():
    notes = [p for p in glob.glob("/usr/share/doc/git/RelNotes/*") if version(p)]
    notes = sorted((p for p in notes if version(p)[2] == 0), key=version)
    learn = [read(p) for p in notes if (2, 20) <= version(p)[:2] < (2, 35)]
    score = [read(p) for p in notes if version(p)[:2] >= (2, 35)]
    return learn, score


def code():
    learn, score = [], []
    for name in ("tokio-util-0.7", "mio-1."):
        roots = sorted(glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{name}*")))
        if not roots:
            sys.exit(f"no {name}* crate in the cargo registry")
        files = sorted(glob.glob(os.path.join(roots[-1], "src", "**", "*.rs"), recursive=True))
        files = [f for f in files if 1500 < os.path.getsize(f) < 40_000]
        for i, f in enumerate(files):
            (score if i % 3 == 2 else learn).append(read(f))
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
    for kind, (learn, score) in (("prose", prose()), ("code", code())):
        score = capped(score, SCORE_BYTES)
        for part, docs in (("learn", learn), ("score", score)):
            path = os.path.join(out, f"{kind}-{part}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\f\n".join(docs))
            print(f"{path}: {len(docs)} documents, {sum(map(len, docs))} characters")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/laya-learn")
