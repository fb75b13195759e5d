#!/usr/bin/env python3
"""`laya protocol`'s own time per kind of request, without the harness's
pipe round trips: records the requests ksr.py sends on TEXT (once, with the
first binary), then feeds the file to each binary in turn, RUNS times
alternating, and prints the median `us` by the length of the typed prefix
(0 = a word start) and overall, per run. Answers must be identical: it
checks that every binary gives the same candidates.

  benches/protocol_replay.py TEXT BIN [BIN...] [--runs N] [--flags=--no-think-ahead] [--differ-ok]

--differ-ok: for a deliberate change of answers, count the requests whose
candidates differ from the first binary's instead of stopping.

Without pipe round trips the helper thread (think ahead) rarely has time
between requests: pass --flags=--no-think-ahead to time the request path
alone.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KSR = os.environ.get("LAYA_KSR", os.path.join(HERE, "..", "..", "shared", "eval", "ksr.py"))
if not os.path.exists(KSR):
    KSR = os.path.join(HERE, "..", "tests", "support", "ksr.py")
PREFIX = re.compile(r"[A-Za-z0-9_]*\Z")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("bins", nargs="+")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--flags", default="")
    ap.add_argument("--differ-ok", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        req = os.path.join(tmp, "requests.jsonl")
        cmd = f"sh -c 'tee {req} | {os.path.abspath(a.bins[0])} protocol {a.flags}'"
        subprocess.run([sys.executable, KSR, "run", "--quiet", "--text", a.text, "--cmd", cmd,
                        "--out", os.path.join(tmp, "ksr.json")], check=True,
                       stderr=subprocess.DEVNULL)
        lines = open(req).read().splitlines()
        kinds = [min(len(PREFIX.search(json.loads(l).get("context", "")).group(0)), 4)
                 for l in lines[1:]]
        answers = {}
        print(f"{len(kinds)} requests; median us by typed prefix length (4 = 4 or more)")
        print("| binary | run | 0 | 1 | 2 | 3 | 4 | all | mean |")
        print("|---|---|---|---|---|---|---|---|---|")
        for run in range(1, a.runs + 1):
            for b in a.bins:
                with open(req) as f:
                    out = subprocess.run([b, "protocol", *a.flags.split()], stdin=f,
                                         capture_output=True, text=True, check=True).stdout
                resp = [json.loads(l) for l in out.splitlines()[1:]]
                cands = [r.get("candidates") for r in resp]
                if answers.setdefault(b, cands) != cands:
                    sys.exit(f"{b}: answers differ between its own runs")
                if cands != answers[a.bins[0]]:
                    n = sum(x != y for x, y in zip(cands, answers[a.bins[0]]))
                    if not a.differ_ok:
                        sys.exit(f"{b}: answers differ from {a.bins[0]}'s ({n} requests)")
                    if run == 1:
                        print(f"{b}: {n} of {len(cands)} answers differ from {a.bins[0]}'s")
                us = [r.get("us", 0.0) for r in resp]
                by = {}
                for k, u in zip(kinds, us):
                    by.setdefault(k, []).append(u)
                cols = [f"{statistics.median(by[k]):.1f}" if k in by else "-" for k in range(5)]
                print(f"| {b} | {run} | " + " | ".join(cols)
                      + f" | {statistics.median(us):.1f} | {statistics.mean(us):.1f} |")


if __name__ == "__main__":
    main()
