"""Builds two METRICS.md text files from crates in the local cargo registry
that the corpus does not fetch (training/corpus/sources.py CRATES): their
README.md files (prose; crate READMEs are no training text) and their
src/*.rs files (code). A check of the quality bar away from the training
distribution: read it, do not tune on it.

    python3 benches/outside_text.py OUT_DIR   # writes OUT_DIR/crates-{prose,code}.txt
    target/release/laya eval OUT_DIR/crates-prose.txt

What it picks depends on what the registry holds (Laya's dependencies after
`cargo build`, plus whatever else the machine fetched); crates are taken in
name order, ~150 KB of each kind."""

import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from training.corpus.sources import CRATES  # noqa: E402

TARGET_BYTES = 150_000


def name_of(path):
    return re.sub(r"-\d+\.\d+.*$", "", os.path.basename(path))


def mostly_ascii(text):
    return sum(c.isascii() for c in text) > 0.98 * len(text)


def pick(crates, files_of, low, high):
    docs, size, seen = [], 0, set()
    for path in crates:
        if size > TARGET_BYTES:
            break
        name = name_of(path)
        if name in seen:
            continue
        for f in files_of(path):
            text = open(f, encoding="utf-8", errors="replace").read()
            if low < len(text) < high and mostly_ascii(text):
                seen.add(name)
                docs.append(text if text.endswith("\n") else text + "\n")
                size += len(text)
    return docs


def main(out):
    fetched = {c.split("@")[0].split("=")[0] for c in CRATES}
    crates = sorted((p for p in glob.glob(os.path.expanduser("~/.cargo/registry/src/*/*"))
                     if name_of(p) not in fetched), key=name_of)
    prose = pick(crates, lambda p: [os.path.join(p, "README.md")] * os.path.exists(os.path.join(p, "README.md")),
                 2000, 20000)
    code = pick(crates[::-1], lambda p: sorted(glob.glob(os.path.join(p, "src", "*.rs")))[:2], 2000, 15000)
    os.makedirs(out, exist_ok=True)
    for kind, docs in (("prose", prose), ("code", code)):
        path = os.path.join(out, f"crates-{kind}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\f\n".join(docs))
        print(f"{path}: {len(docs)} documents, {sum(map(len, docs)) // 1000} KB")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
