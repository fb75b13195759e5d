"""Where the gain of personal learning comes from, word by word: the KSR@1
user of METRICS.md types a score file with and without the user's history
(`laya eval --trace`), and ksr.py's buffer-words predictor types it the same
way; the keystrokes each word cost are compared.

    python3 benches/learn_gain.py SPLIT_DIR KIND [--laya BIN] [--ksr KSR_PY] [--tune K=V]
    # e.g. python3 benches/learn_gain.py /tmp/laya-dev code

SPLIT_DIR/KIND-{learn,score}.txt come from benches/learn_split.py. Prints
(1) the keystrokes the history saves the engine, by kind of word: in the
model's vocabulary or not (V / O), the word's first occurrence in its
document or a repeat, in the history or not (H / -), with what remains
above one keystroke a word; (2) where the buffer-words predictor's own
gain from the history lies: on words the engine types as cheaply without
any history, on words the engine's history gets too, or on words the
engine misses (and by how many keystrokes)."""

import argparse
import collections
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

WORD = re.compile(r"[A-Za-z0-9_]+")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_ksr(path):
    spec = importlib.util.spec_from_file_location("ksr", path)
    ksr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ksr)
    return ksr


def engine_costs(laya, score, learn, tune):
    """Keystrokes per word, {(doc, word start): (word, keystrokes)}, of the
    engine's KSR@1 user (`laya eval --trace`)."""
    with tempfile.NamedTemporaryFile("r", suffix=".tsv") as trace:
        cmd = [laya, "eval", "--json", "--trace", trace.name, score]
        if learn:
            cmd += ["--learn", learn]
        if tune:
            cmd += ["--tune", tune]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        costs = {}
        for line in trace:
            doc, start, _pos, word, _ghost, _ok = line.rstrip("\n").split("\t")
            key = (int(doc), int(start))
            costs[key] = (word, costs.get(key, (word, 0))[1] + 1)
        return costs


def buffer_costs(ksr, score, learn):
    """The same for ksr.py's buffer-words predictor, its KSR@1 user played
    by ksr.py's rules (blocks of 1000 characters, every block scored)."""
    p = ksr.BufferPredictor()
    if learn:
        for doc in ksr.load_docs(learn)[1]:
            p.learn(doc)
    costs = {}
    for d, doc in enumerate(ksr.load_docs(score)[1]):
        seen, reset = 0, True
        for bs, be in ksr.blocks_of(doc, 1000):
            p_at = bs
            while p_at < be:
                m = WORD.match(doc, p_at)
                if not m:
                    p_at += 1
                    continue
                start = p_at
                while start > 0 and WORD.match(doc[start - 1]):
                    start -= 1
                target = doc[p_at:m.end()]
                top = p.predict({"reset": reset, "new": doc[seen:p_at], "k": 3})[:1]
                reset, seen = False, p_at
                key = (d, start)
                costs[key] = (m.group(0), costs.get(key, ("", 0))[1] + 1)
                ok = top == [target] and len(target) > 1
                p_at = m.end() if ok else p_at + 1
    return costs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("split_dir")
    ap.add_argument("kind", help="prose, code or python")
    ap.add_argument("--laya", default=os.path.join(ROOT, "target/release/laya"))
    ap.add_argument("--ksr", default=os.path.join(ROOT, "../shared/eval/ksr.py"))
    ap.add_argument("--vocab", default=os.path.join(ROOT, "models/laya-default.vocab.txt"))
    ap.add_argument("--tune", default="")
    a = ap.parse_args()
    learn = os.path.join(a.split_dir, f"{a.kind}-learn.txt")
    score = os.path.join(a.split_dir, f"{a.kind}-score.txt")
    ksr = load_ksr(a.ksr)
    vocab = set(line.rstrip("\n") for line in open(a.vocab, encoding="utf-8"))
    history = collections.Counter()
    for doc in ksr.load_docs(learn)[1]:
        history.update(WORD.findall(doc))
    chars = sum(len(doc) for doc in ksr.load_docs(score)[1])
    pt = lambda keys: f"{keys:6d} keys ({100 * keys / chars:+.2f} pt)"

    without = engine_costs(a.laya, score, None, a.tune)
    with_h = engine_costs(a.laya, score, learn, a.tune)
    saved, words, above = collections.Counter(), collections.Counter(), collections.Counter()
    firsts = collections.defaultdict(set)
    for key in sorted(set(without) & set(with_h)):
        word = without[key][0]
        first = word not in firsts[key[0]]
        firsts[key[0]].add(word)
        kind = ("V" if word in vocab else "O") + (" first " if first else " repeat ")
        kind += "H" if history[word] else "-"
        saved[kind] += without[key][1] - with_h[key][1]
        words[kind] += 1
        above[kind] += with_h[key][1] - 1
    print(f"{score}: {chars} characters; the engine's KSR@1 keystrokes saved by the history")
    print(f"{'words':>16} {'n':>6}   saved by the history          left above 1 key a word")
    for kind in sorted(saved):
        print(f"{kind:>16} {words[kind]:6d}   {pt(saved[kind])}   {pt(above[kind])}")
    print(f"{'all':>16} {sum(words.values()):6d}   {pt(sum(saved.values()))}")

    buf0 = buffer_costs(ksr, score, None)
    buf1 = buffer_costs(ksr, score, learn)
    share = collections.Counter()
    behind = 0
    for key, (word, before) in buf0.items():
        gain = before - buf1[key][1]
        if gain <= 0 or key not in without:
            share["no gain"] += gain
        elif without[key][1] <= buf1[key][1]:
            share["engine as cheap without history"] += gain
        elif with_h.get(key, (word, 1 << 30))[1] <= buf1[key][1]:
            share["engine as cheap with history"] += gain
        else:
            share["engine dearer with history"] += gain
            behind += with_h[key][1] - buf1[key][1]
    total = sum(c for _, c in buf0.values()) - sum(c for _, c in buf1.values())
    print(f"\nbuffer-words predictor: the history saves it {pt(total)}, on words that")
    for what in ("engine as cheap without history", "engine as cheap with history",
                 "engine dearer with history", "no gain"):
        print(f"  {what:>34}: {pt(share[what])}")
    print(f"  the engine with history types those last words {pt(behind)} more than it")


if __name__ == "__main__":
    sys.exit(main())
