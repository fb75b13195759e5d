#!/usr/bin/env python3
"""Where the KSR@1 user's savings come from, by kind of word: a word of the
model's vocabulary, an out-of-vocabulary word already seen earlier in the
same document (the buffer cache's job), or one seen for the first time.

Simulates METRICS.md's KSR@1 user over whole documents (not blocks: totals
differ from ksr.py's by a few hundredths) through `laya protocol`, and prints
per kind the word count, the characters an oracle would save (len - 1 per
word), the characters saved, and how many letters had been typed when the
ghost text was accepted.

  python3 benches/ksr_by_word_kind.py TEXT [--model STEM] [--laya target/release/laya]

STEM: models/laya-default (the weights are STEM.safetensors, the vocabulary
STEM.vocab.txt).
"""
import argparse
import collections
import json
import re
import subprocess

WORD = re.compile(r"[A-Za-z0-9_]+")
KINDS = ("vocab", "oov-seen", "oov-first")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("--model", default="models/laya-default")
    ap.add_argument("--laya", default="target/release/laya")
    a = ap.parse_args()
    with open(a.model + ".vocab.txt", encoding="utf-8") as f:
        vocab = {line.rstrip("\n") for line in f}
    proc = subprocess.Popen([a.laya, "protocol", "--model", a.model + ".safetensors"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def ask(req):
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    ask({"op": "hello", "protocol": 1})
    with open(a.text, encoding="utf-8") as f:
        docs = f.read().split("\f\n")
    words, oracle, saved = collections.Counter(), collections.Counter(), collections.Counter()
    typed_before_accept = collections.Counter()
    chars = 0
    for d, doc in enumerate(docs):
        chars += len(doc)
        seen, prev, first = set(), 0, True
        for m in WORD.finditer(doc):
            w, start = m.group(), m.start()
            kind = "vocab" if w in vocab else "oov-seen" if w in seen else "oov-first"
            seen.add(w)
            words[kind] += 1
            oracle[kind] += len(w) - 1
            for c in range(len(w) - 1):  # accepting a one-letter rest saves nothing
                pos = start + c
                ans = ask({"op": "predict", "doc": d, "pos": pos, "context": doc[max(0, pos - 1024):pos],
                           "new": doc[prev:pos], "k": 1, "reset": first})
                first, prev = False, pos
                if ans["candidates"] and ans["candidates"][0] == w[c:]:
                    saved[kind] += len(w) - 1 - c
                    typed_before_accept[min(c, 4)] += 1
                    break
    proc.stdin.close()
    proc.wait()
    print(f"{a.text}: {chars} characters, model {a.model}")
    print("| word kind | words | oracle saves (% of chars) | saved (% of chars) | saved / oracle |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for k in KINDS:
        print(f"| {k} | {words[k]} | {100 * oracle[k] / chars:.2f} | {100 * saved[k] / chars:.2f} "
              f"| {100 * saved[k] / max(1, oracle[k]):.0f} % |")
    print(f"| all | {sum(words.values())} | {100 * sum(oracle.values()) / chars:.2f} "
          f"| {100 * sum(saved.values()) / chars:.2f} | |")
    print("accepted after 0 / 1 / 2 / 3 / 4+ letters typed:",
          " / ".join(str(typed_before_accept[c]) for c in range(5)))


if __name__ == "__main__":
    main()
