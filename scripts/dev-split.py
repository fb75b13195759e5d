"""Writes the development split used to tune the engine's ranking constants:
whole *validation* documents of the training corpus (never the test split that
tests/data/heldout-*.txt come from), form-feed separated like METRICS.md §1.

    python3 scripts/dev-split.py training/work/corpus/valid.jsonl OUTDIR
    python3 scripts/dev-split.py training/work/corpus/valid.jsonl OUTDIR --languages

With --languages, one file per code language instead (dev-<language>.txt,
40 KB each, for `benches/with_syntax.py lang:<language>`; `--budget N` for
N bytes each), and prose as without it.
"""
import hashlib
import json
import os
import sys


def main(valid_jsonl, outdir, budget=150_000, max_doc=25_000, languages=False, language_budget=40_000):
    by_kind = {}
    with open(valid_jsonl, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if len(r["text"]) <= max_doc:
                kind = r["kind"]
                if languages and kind == "code":
                    kind = r.get("lang") or "unknown"
                by_kind.setdefault(kind, {}).setdefault(r["src"], []).append(r["text"])
    os.makedirs(outdir, exist_ok=True)
    for kind, by_src in sorted(by_kind.items()):
        for docs in by_src.values():
            docs.sort(key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        chosen, size = [], 0
        limit = budget if kind == "prose" or not languages else language_budget
        # Round-robin over sources so every source is represented.
        while by_src and size < limit:
            for src in sorted(by_src):
                if not by_src[src]:
                    continue
                t = by_src[src].pop(0)
                if size + len(t) > limit:
                    continue
                if not t.endswith("\n"):
                    t += "\n"
                chosen.append(t)
                size += len(t)
            by_src = {s: d for s, d in by_src.items() if d}
        path = os.path.join(outdir, f"dev-{kind}.txt")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("\f\n".join(chosen))
        print(f"{path}: {len(chosen)} documents, {size / 1e3:.0f} KB")


if __name__ == "__main__":
    rest = sys.argv[3:]
    budget = int(rest[rest.index("--budget") + 1]) if "--budget" in rest else 40_000
    main(sys.argv[1], sys.argv[2], languages="--languages" in rest, language_budget=budget)
