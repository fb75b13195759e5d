#!/usr/bin/env python3
"""Runs a `laya protocol` command with every prediction request marked as
one kind of text (`prose`, `comment`, `string` or `code`), as the editor
marks each keystroke's request: the held-out files carry no filetype, so
this is how `ksr.py` measures the effect of that context, one file (one
kind) at a time.

  python3 /work/shared/eval/ksr.py run --text tests/data/heldout-prose.txt \\
      --cmd "python3 benches/with_syntax.py prose target/release/laya protocol"
"""
import json
import subprocess
import sys


def main():
    kind, cmd = sys.argv[1], sys.argv[2:]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    for line in sys.stdin.buffer:
        req = json.loads(line)
        if "context" in req and "syntax" not in req:
            req["syntax"] = kind
        child.stdin.write((json.dumps(req) + "\n").encode())
        answer = child.stdout.readline()
        if not answer:
            break
        sys.stdout.buffer.write(answer)
        sys.stdout.buffer.flush()
    child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
