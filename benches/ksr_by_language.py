#!/usr/bin/env python3
"""KSR@1 / KSR@3 / ghost precision of several models on every held-out file
(tests/data/heldout-*.txt: prose, code, and one per language), side by side:
`laya eval FILE --json --model M` for each, a Markdown table on stdout, every
figure in --json.

    python3 benches/ksr_by_language.py OLD=/path/old.safetensors NEW=training/out/x/laya-default.safetensors
    (a model is NAME=PATH; extra `laya eval` options go after --, e.g. -- --tune typed_past=0)
"""

import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST = ["prose", "code", "english"]  # the main sets first, then the languages by name


def files():
    names = [os.path.basename(p)[len("heldout-") : -len(".txt")] for p in glob.glob(f"{ROOT}/tests/data/heldout-*.txt")]
    return [n for n in FIRST if n in names] + sorted(n for n in names if n not in FIRST)


def main(argv):
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    out_json = None
    if argv and argv[0].startswith("--json="):
        out_json, argv = argv[0][len("--json=") :], argv[1:]
    models = [a.split("=", 1) for a in argv]
    if not models or any(len(m) != 2 for m in models):
        sys.exit(__doc__)
    laya = os.path.join(ROOT, "target", "release", "laya")
    results = {}
    for name in files():
        text = f"{ROOT}/tests/data/heldout-{name}.txt"
        for label, path in models:
            run = subprocess.run([laya, "eval", text, "--json", "--model", path, *extra], capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"laya eval {text} --model {path}: {run.stderr.strip()}")
            results.setdefault(name, {})[label] = json.loads(run.stdout)
    p = lambda x: f"{100 * x:.1f}"  # noqa: E731
    labels = [m[0] for m in models]
    print("| text | chars | " + " | ".join(f"KSR@1 {m}" for m in labels) + " | "
          + " | ".join(f"KSR@3 {m}" for m in labels) + " | " + " | ".join(f"ghost prec. {m}" for m in labels) + " |")
    print("|---|---:|" + "---:|" * 3 * len(labels))
    for name, by in results.items():
        first = by[labels[0]]
        print(f"| {name} | {first['chars']:,d} | " + " | ".join(p(by[m]["KSR@1"]) for m in labels) + " | "
              + " | ".join(p(by[m]["KSR@3"]) for m in labels) + " | "
              + " | ".join(p(by[m]["ghost_precision"]) for m in labels) + " |")
    if out_json:
        with open(out_json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
