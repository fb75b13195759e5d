"""A held-out shell text from the scripts installed on this machine, for a
second look at shell KSR beside tests/data/heldout-shell.txt (10 KB).

    python3 benches/installed_shell.py [OUT]     # default /tmp/heldout-shell-installed.txt
    target/release/laya eval OUT --json

Takes every file under /usr/bin, /usr/sbin, /usr/lib/*/ and /usr/share/*/
whose first line runs sh, bash, dash or zsh, 800 B to 40 KB, and drops:
files of Debian packages any code source of the corpus fetched
(training/corpus-manifest.json), of glibc's packages (libc-bin,
libc-devtools: the corpus trains glibc's source, scripts included) and of
google-cloud-cli; files whose lines are over 80 % another kept file's (the
-sysv / -tcp and -w variants of one script). What it holds depends on the
packages installed: compare figures from one machine only."""

import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHEBANG = re.compile(rb"^#!.*\b(ba|da|z)?sh\b")
SKIP = {"libc-bin", "libc-devtools", "google-cloud-cli"}


def corpus_code_packages():
    with open(os.path.join(ROOT, "training", "corpus-manifest.json")) as f:
        m = json.load(f)
    code = {s["name"] for s in m["sources"] if s["kind"] == "code"}
    return {p["name"] for p in m["packages"] if p["source"] in code}


def packages_of(path):
    out = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True).stdout
    if not out or out.startswith("diversion"):
        return set()
    return {p.strip() for p in out.split(":")[0].split(",")}


def main(out):
    skip = corpus_code_packages() | SKIP
    paths = set()
    for pattern in ("/usr/bin/*", "/usr/sbin/*", "/usr/lib/*/*.sh", "/usr/share/*/*.sh"):
        for p in glob.glob(pattern):
            real = os.path.realpath(p)
            if os.path.isfile(real) and 800 < os.path.getsize(real) < 40_000:
                with open(real, "rb") as f:
                    if SHEBANG.match(f.readline(128)):
                        paths.add(real)
    docs = []
    for p in sorted(paths):
        pkgs = packages_of(p)
        if not pkgs or pkgs & skip:
            continue
        with open(p, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = set(text.splitlines())
        if any(len(lines & set(d.splitlines())) > 0.8 * len(lines) for d in docs):
            continue
        docs.append(text if text.endswith("\n") else text + "\n")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\f\n".join(docs))
    print(f"{out}: {len(docs)} scripts, {sum(map(len, docs))} characters")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/heldout-shell-installed.txt")
