"""A held-out Ruby text from Debian's Ruby packages that the corpus does not
fetch, for a second look at Ruby KSR beside tests/data/heldout-ruby.txt.

    python3 benches/outside_ruby.py [OUT]     # default /tmp/heldout-ruby-outside.txt
    target/release/laya eval OUT --json

The packages (PACKAGES, none in training/corpus-manifest.json) are fetched
once with `apt-get download` into ~/.cache/laya-bench (LAYA_BENCH_CACHE).
Of each gem, every third .rb file of 800 B to 40 KB in path order, until the
gem has given 30 KB. Psych is left out (Ruby's standard library, which the
corpus trains, carries an older copy). Where the corpus is built
(training/work/corpus), a file sharing one of its three longest code lines
with a corpus document is dropped as well."""

import glob
import json
import os
import sys

import debs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = [
    "ruby-aws-sdk-core", "ruby-commander", "ruby-dry-core", "ruby-gettext", "ruby-http",
    "ruby-net-http-persistent", "ruby-rack-protection", "ruby-rspec-support",
    "ruby-rubocop-ast", "ruby-sqlite3", "ruby-tty-command", "ruby-zeitwerk",
]
PER_GEM = 30_000


def gem_of(path):
    """The gem a file belongs to: the folder under vendor_ruby or gems/, or
    for a file right under it (vendor_ruby/gettext.rb) its own stem."""
    parts = path.split(os.sep)
    for i, p in enumerate(parts[:-1]):
        if p == "vendor_ruby" or p.startswith("gems"):
            return os.path.splitext(parts[i + 1])[0]
    return None


def distinctive(text):
    lines = {line.strip() for line in text.splitlines()}
    lines = [line for line in lines if 40 < len(line) < 120 and not line.startswith("#")]
    return sorted(lines, key=len, reverse=True)[:3]


def in_corpus(docs):
    """Indices of docs sharing a distinctive line with a corpus document."""
    splits = sorted(glob.glob(os.path.join(ROOT, "training", "work", "corpus", "*.jsonl")))
    lines = [(i, line) for i, d in enumerate(docs) for line in distinctive(d)]
    hit = set()
    for split in splits:
        with open(split, encoding="utf-8") as f:
            for row in f:
                text = json.loads(row)["text"]
                hit.update(i for i, line in lines if i not in hit and line in text)
    return hit, bool(splits)


def main(out):
    files = sorted(glob.glob(os.path.join(debs.unpacked(PACKAGES, "ruby-outside"), "**", "*.rb"), recursive=True))
    by_gem = {}
    for f in files:
        gem = gem_of(f)
        if gem and "psych" not in gem and 800 < os.path.getsize(f) < 40_000:
            by_gem.setdefault(gem, []).append(f)
    docs = []
    for gem in sorted(by_gem):
        size = 0
        for f in by_gem[gem][::3]:
            if size > PER_GEM:
                break
            with open(f, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            docs.append(text if text.endswith("\n") else text + "\n")
            size += len(text)
    hit, checked = in_corpus(docs)
    docs = [d for i, d in enumerate(docs) if i not in hit]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\f\n".join(docs))
    note = f"{len(hit)} dropped as in the corpus" if checked else "corpus not built: not checked against it"
    print(f"{out}: {len(docs)} files of {len(by_gem)} gems, {sum(map(len, docs))} characters ({note})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/heldout-ruby-outside.txt")
