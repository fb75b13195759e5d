"""Fits the ghost text's show/hide decision (src/engine/gate.rs) on a
development split and prints its precision/savings curve there.

    python3 scripts/fit-ghost-gate.py target/release/laya DEV.txt [DEV2.txt ...]

DEV files are METRICS.md texts (documents separated by form-feed lines) that
are not the held-out files: `scripts/dev-split.py` writes them from the
corpus' validation documents. Every position with a word to complete is
asked of `laya protocol --explain --never-looks --threshold 0` (the answer
there depends only on the text before it); the label is whether the ghost
text's word is the word typed. A logistic model of the decision's inputs
is fitted at the positions the user asks at (numpy, iteratively reweighted least squares with a little L2),
then both decisions (the old one on the ranking's score, the new one on the
fitted chance) are played offline by METRICS.md's KSR@1 user at several
thresholds (the user who never looks: the answers do not depend on the
decision then).
"""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "ksr", os.path.join(HERE, "..", "tests", "support", "ksr.py"))
ksr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ksr)

DIM = 8


def ghost_word(g):
    return ksr.LEADING_WORD_RE.match(g).group(0)


def collect(laya, path, window=1024):
    """Per document: for each position with a word to complete, (target
    end, label, gate vector or None)."""
    _, docs = ksr.load_docs(path)
    p = subprocess.Popen(
        [laya, "protocol", "--explain", "--never-looks", "--threshold", "0"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, bufsize=1)
    p.stdin.write(json.dumps({"op": "hello", "protocol": 2}) + "\n")
    p.stdout.readline()
    out = []
    for d, doc in enumerate(docs):
        wend = ksr.word_ends(doc)
        rows = {}
        first = True
        for pos in range(len(doc)):
            if wend[pos] == pos:
                continue
            req = {"op": "predict", "doc": d, "pos": pos,
                   "context": doc[max(0, pos - window):pos], "k": 3}
            if first:
                req["reset"] = True
                first = False
            p.stdin.write(json.dumps(req) + "\n")
            a = json.loads(p.stdout.readline())
            target = doc[pos:wend[pos]]
            rows[pos] = (wend[pos], ghost_word(a.get("ghost", "")) == target, a.get("gate"))
        out.append((doc, rows))
    p.stdin.close()
    p.wait()
    return out


def fit(X, y, l2=1e-3, iters=30):
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        z = X @ w
        q = 1 / (1 + np.exp(-z))
        g = X.T @ (q - y) + l2 * w
        H = (X * (q * (1 - q))[:, None]).T @ X + l2 * np.eye(X.shape[1])
        w -= np.linalg.solve(H, g)
    return w


def simulate(data, show, block_chars=1000):
    """KSR@1 and ghost precision of METRICS.md's user when the ghost is
    shown where show(gate vector) is true."""
    keys = chars = shown = correct = 0
    for doc, rows in data:
        for s, e in ksr.blocks_of(doc, block_chars):
            chars += e - s
            p = s
            while p < e:
                r = rows.get(p)
                keys += 1
                if r is None:
                    p += 1
                    continue
                end, right, gate = r
                vis = gate is not None and show(gate)
                shown += vis
                correct += vis and right
                if vis and right and end - p > 1:
                    p = end
                else:
                    p += 1
    return 1 - keys / chars, correct / max(shown, 1)


def visited(data, show, block_chars=1000):
    """(gate vector, right) at the positions the KSR@1 user asks at."""
    rows = []
    for doc, rs in data:
        for s, e in ksr.blocks_of(doc, block_chars):
            p = s
            while p < e:
                r = rs.get(p)
                if r is None:
                    p += 1
                    continue
                end, right, gate = r
                if gate is not None:
                    rows.append((gate, float(right)))
                shown = gate is not None and show(gate)
                p = end if shown and right and end - p > 1 else p + 1
    return rows


def p1(g):
    return 1 / (1 + np.exp(-g[1]))


def main():
    laya, paths = sys.argv[1], sys.argv[2:]
    sets = {path: collect(laya, path) for path in paths}
    # Fitted where the user asks (a user with the score decision at 0.15),
    # not at every position: late in a word nearly every ghost is right.
    rows = [r for data in sets.values() for r in visited(data, lambda g: p1(g) >= 0.15)]
    X = np.array([g for g, _ in rows], dtype=np.float64)
    y = np.array([r for _, r in rows])
    w = fit(X, y)
    print(f"{len(y)} positions asked with a ghost, {y.mean():.3f} right")
    print("weights: [" + ", ".join(f"{v:.4f}" for v in w) + "]")

    def chance(g):
        return 1 / (1 + np.exp(-float(np.dot(w, g))))

    def gain(g):
        return max(np.expm1(g[4]) - 1, 0)

    decisions = [("score", t, lambda g, t=t: p1(g) >= t) for t in (0, 0.1, 0.15, 0.2, 0.3, 0.4)]
    decisions += [("chance", t, lambda g, t=t: chance(g) >= t) for t in (0.2, 0.25, 0.3, 0.35)]
    # The Lagrangian of "most keystrokes saved at a given precision":
    # show when chance * (keystrokes saved + mu) reaches a bound.
    decisions += [("chance x (saved + 8)", t, lambda g, t=t: chance(g) * (gain(g) + 8) >= t)
                  for t in (1.6, 2.0, 2.4, 2.8)]
    print("| split | decision | threshold | KSR@1 | ghost precision |")
    print("|---|---|---|---|---|")
    for path, data in sets.items():
        for name, t, show in decisions:
            k, pr = simulate(data, show)
            print(f"| {os.path.basename(path)} | {name} | {t} | {100 * k:.1f} | {100 * pr:.1f} |")


if __name__ == "__main__":
    main()
