#!/usr/bin/env python3
"""Runs a `laya protocol` command with every prediction request marked with
the kind of text at the cursor (`prose`, `comment`, `string` or `code`), as
the editor marks each keystroke's request: the held-out files carry no
filetype, so this is how `ksr.py` measures the effect of that context.

The first argument is one kind for every request (a prose file), or
`lang:LANGUAGE` (c, python, rust, lua, vim, ...): each request is marked
comment, string or code by where the cursor is in the document typed so far
(comments and strings found as `python -m training kinds` finds them,
training/kinds.py). At the end it says on stderr how many requests were
marked with each kind.

  python3 /work/shared/eval/ksr.py run --text tests/data/heldout-prose.txt \\
      --cmd "python3 benches/with_syntax.py prose target/release/laya protocol"
  python3 /work/shared/eval/ksr.py run --text tests/data/heldout-c.txt \\
      --cmd "python3 benches/with_syntax.py lang:c target/release/laya protocol"
"""
import json
import os
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from training.kinds import KindAtEnd  # noqa: E402


def main():
    kind, cmd = sys.argv[1], sys.argv[2:]
    lang = kind[len("lang:"):] if kind.startswith("lang:") else None
    doc, marked = None, Counter()
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    for line in sys.stdin.buffer:
        req = json.loads(line)
        if "context" in req and "syntax" not in req:
            if lang is not None:
                # ksr.py sends each document's text once, in order: `new`
                # since the last request, `reset` at a document's start.
                if req.get("reset") or doc is None:
                    doc = KindAtEnd(lang)
                req["syntax"] = doc.feed(req.get("new", ""))
            else:
                req["syntax"] = kind
            marked[req["syntax"]] += 1
        child.stdin.write((json.dumps(req) + "\n").encode())
        answer = child.stdout.readline()
        if not answer:
            break
        sys.stdout.buffer.write(answer)
        sys.stdout.buffer.flush()
    child.stdin.close()
    print("with_syntax: requests marked " + ", ".join(f"{k} {n}" for k, n in sorted(marked.items())), file=sys.stderr)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
