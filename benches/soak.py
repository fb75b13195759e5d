#!/usr/bin/env python3
"""Soak: types 100k+ keystrokes of real text (held-out prose and code, and
non-ASCII prose) through a real headless Neovim with Laya and the real host,
with jumps, undo/redo, large pastes, buffer switches and a 50 MB buffer
(benches/soak/driver.lua does the typing), then prints tables: latency and
memory per block of keys, lost keystrokes, errors, panics, host restarts.

  benches/soak.py [--keys 100000] [--rate 12] [--big-mb 50] [--paste-every 4000]
                  [--paste-kb 256] [--block 10000] [--seed 1] [--nice 10] [--out DIR]

Needs `cargo build --release` (or SOAK_HOST=path/to/laya) and nvim (>= 0.10) on PATH or in .venv/bin.
Not a test: 100k keys at 12 ms take about 25 minutes.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_nvim():
    nvim = shutil.which("nvim")
    if not nvim and os.access(os.path.join(ROOT, ".venv/bin/nvim"), os.X_OK):
        nvim = os.path.join(ROOT, ".venv/bin/nvim")
    if not nvim:
        sys.exit("soak: nvim not found (scripts/install-test-deps.sh)")
    return nvim


def host_binary():
    """The host to run: $SOAK_HOST, else this checkout's release build."""
    return os.path.abspath(os.environ.get("SOAK_HOST") or os.path.join(ROOT, "target/release/laya"))


def nvim_env(out, extra):
    env = dict(os.environ)
    env.update(
        {
            "XDG_STATE_HOME": os.path.join(out, "state"),
            "XDG_DATA_HOME": os.path.join(out, "data"),
            "XDG_CONFIG_HOME": os.path.join(out, "config"),
            "LAYA_HOST": host_binary(),
            "LAYA_LOG_LEVEL": "info",
        }
    )
    env.pop("LAYA_TEST_DELAY_MS", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_driver(out, extra, nice):
    """Starts Neovim running the driver; stderr goes to out/nvim.stderr."""
    os.makedirs(out, exist_ok=True)
    host = host_binary()
    if not os.access(host, os.X_OK):
        sys.exit(f"soak: {host} not found (cargo build --release)")
    cmd = [
        find_nvim(),
        "--headless",
        "--clean",
        "-u",
        os.path.join(ROOT, "scripts/minimal_init.lua"),
        "-c",
        "luafile " + os.path.join(ROOT, "benches/soak/driver.lua"),
    ]
    if nice:
        cmd = ["nice", "-n", str(nice)] + cmd
    err = open(os.path.join(out, "nvim.stderr"), "wb")
    return subprocess.Popen(
        cmd, cwd=ROOT, env=nvim_env(out, extra), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
    )


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def pct(xs, p):
    """The p-th percentile (nearest rank) of a list, or None."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))]


def ms(us):
    return "-" if us is None else f"{us / 1000:.2f}"


def mb(kb):
    return "-" if kb is None else f"{kb / 1024:.1f}"


def table(headers, rows):
    """A Markdown table, columns padded."""
    rows = [[str(c) for c in r] for r in rows]
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(cells)) + " |"
    out = [line(headers), "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def log_counts(out):
    """Lines of the host's log by level, and panic lines."""
    path = os.path.join(out, "state/nvim/laya.log")
    counts = {"ERROR": 0, "WARN": 0, "panic": 0}
    examples = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                for k in ("ERROR", "WARN"):
                    if f" {k} " in line:
                        counts[k] += 1
                        if len(examples) < 5:
                            examples.append(line.strip()[:240])
                if "panic" in line:
                    counts["panic"] += 1
    except FileNotFoundError:
        pass
    return counts, examples


def stderr_errors(out):
    """Lines Neovim wrote to stderr other than its mode messages."""
    try:
        with open(os.path.join(out, "nvim.stderr"), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    text = text.replace("-- INSERT --", "\n")
    return [line.strip() for line in text.splitlines() if line.strip()]


def sample_at(samples, keys):
    """The first memory sample taken at or after `keys` keys."""
    for s in samples:
        if s["keys"] >= keys:
            return s
    return samples[-1] if samples else None


def mem_mb(sample, part, key):
    """A byte count of the host's `status.memory.<part>` in MB, or '-'."""
    v = ((sample or {}).get("memory") or {}).get(part) or {}
    return "-" if v.get(key) is None else f"{v[key] / 1048576:.1f}"


def cache_rows(samples, warm_keys):
    """Per engine cache: entries and estimated MB after warm-up and at the end."""
    first = next((s for s in samples if s["keys"] >= warm_keys and (s.get("memory") or {}).get("engine")), None)
    last = samples[-1] if samples and (samples[-1].get("memory") or {}).get("engine") else None
    if not first or not last:
        return []
    rows = []
    for name in ("tokens", "seen_lines", "buffer_words", "buffer_pairs", "user_words", "user_pairs"):
        a, b = first["memory"]["engine"][name], last["memory"]["engine"][name]
        rows.append(
            [name, f"{a['entries']} -> {b['entries']}", f"{a['bytes'] / 1048576:.2f} -> {b['bytes'] / 1048576:.2f}"]
        )
    return rows


def block_rows(r, block):
    lat = r["lat_us"]
    samples = r["samples"]
    rows = []
    prev = samples[0] if samples else None
    for start in range(0, len(lat), block):
        end = min(len(lat), start + block)
        got = [x for x in lat[start:end] if x >= 0]
        s = sample_at(samples, end)
        wall = s["t_s"] - prev["t_s"] if s and prev else None
        panics = (s.get("counters") or {}).get("engine_panics", "-") if s else "-"
        rows.append(
            [
                f"{start + 1}-{end}",
                "-" if wall is None else f"{wall:.0f}",
                "-" if not wall else f"{(end - start) / wall:.1f}",
                f"{100 * len(got) / (end - start):.1f}",
                ms(pct(got, 50)),
                ms(pct(got, 99)),
                ms(max(got) if got else None),
                mb(s and s.get("host_rss_kb")),
                mem_mb(s, "malloc", "in_use"),
                mem_mb(s, "engine", "estimated_bytes"),
                mb(s and s.get("nvim_rss_kb")),
                panics,
            ]
        )
        prev = s
    return rows


def growth(samples, warm_keys, key):
    """(first, last, max - min) of `key` over samples after warm-up."""
    xs = [s[key] for s in samples if s["keys"] >= warm_keys and s.get(key)]
    if not xs:
        return None
    return xs[0], xs[-1], max(xs) - min(xs)


def report(r, out, block, warm_keys, loads):
    lines = []
    cfg = r["config"]
    lines.append(
        f"Soak: {r['typed']} keys typed at {cfg['rate_ms']} ms/key (plan {cfg['plan']}, seed {cfg['seed']}), "
        f"typing {r.get('typing_s', 0):.0f} s; machine {r['machine']['cpu']}, {r['machine']['nproc']} cores; "
        f"load average (1 min) during the run min/mean/max "
        f"{min(loads):.2f}/{sum(loads) / len(loads):.2f}/{max(loads):.2f}"
    )
    if r.get("aborted"):
        lines.append(f"ABORTED: {r['aborted']}")
    lines.append("")
    lines.append("Latency (key fed -> its answer's ghost text set, ms) and memory per block of keys")
    lines.append("")
    lines.append(
        table(
            [
                "keys",
                "wall s",
                "keys/s",
                "answered %",
                "p50",
                "p99",
                "max",
                "host RSS MB",
                "host malloc in use MB",
                "engine caches MB",
                "nvim RSS MB",
                "panics",
            ],
            block_rows(r, block),
        )
    )
    lines.append("")
    samples = r["samples"]
    lines.append(f"Memory every {cfg['sample_every']} keys (MB): keys host/nvim")
    lines.append(
        "  "
        + "  ".join(f"{s['keys']}:{mb(s.get('host_rss_kb'))}/{mb(s.get('nvim_rss_kb'))}" for s in samples)
    )
    lines.append("")
    h = growth(samples, warm_keys, "host_rss_kb")
    n = growth(samples, warm_keys, "nvim_rss_kb")
    logc, examples = log_counts(out)
    errs = stderr_errors(out)
    msgs = [m for m in (r.get("messages") or "").splitlines() if m.strip()]
    st = (r.get("status_end") or {}).get("counters") or {}
    ls = r.get("lua_stats") or {}
    lost = "0" if not r["mismatches"] else f"{len(r['mismatches'])} mismatches (see soak.json)"
    rows = [
        ["keys typed", r["typed"]],
        ["keys with their answer shown", f"{r['answered']} ({100 * r['answered'] / max(1, r['typed']):.1f}%)"],
        [
            "host: predict received / answered / superseded",
            f"{st.get('predict_received', '-')} / {st.get('predict_answered', '-')} / {st.get('predict_superseded', '-')}",
        ],
        ["segments / jumps / buffer switches", f"{r['segments']} / {r['jumps']} / {r['switches']}"],
        ["undo + redo", f"{r['undos']} + {r['redos']}"],
        [
            "large pastes (Insert mode, nvim_paste); ticks waited for the typeahead",
            f"{r['pastes']} ({r['pasted_bytes'] / 1e6:.1f} MB); {r.get('paste_waits', '-')}",
        ],
        [
            "50 MB buffer",
            f"{r.get('big_lines', 0)} lines, loaded in {r.get('big_load_s', 0):.2f} s" if r.get("big_lines") else "none",
        ],
        ["lost keystrokes (buffers vs expected text)", lost],
        [
            f"host RSS after warm-up ({warm_keys} keys): first -> last (max-min)",
            "-" if not h else f"{mb(h[0])} -> {mb(h[1])} MB ({mb(h[2])})",
        ],
        [
            f"nvim RSS after warm-up: first -> last (max-min)",
            "-" if not n else f"{mb(n[0])} -> {mb(n[1])} MB ({mb(n[2])})",
        ],
        ["host log ERROR / WARN lines", f"{logc['ERROR']} / {logc['WARN']}"],
        ["engine panics (host counter) / panic lines in log", f"{st.get('engine_panics', '-')} / {logc['panic']}"],
        ["Lua errors (stderr lines, :messages lines)", f"{len(errs)}, {len(msgs)}"],
        [
            "host starts / exits (restarts), pids",
            f"{ls.get('starts', '-')} / {ls.get('exits', '-')}, {r.get('host_pids')}",
        ],
    ]
    lines.append(table(["what", "result"], rows))
    caches = cache_rows(samples, warm_keys)
    if caches:
        lines.append("")
        lines.append(f"Engine caches (host `status`), after warm-up ({warm_keys} keys) -> end")
        lines.append("")
        lines.append(table(["cache", "entries", "estimated MB"], caches))
    for e in examples:
        lines.append("  log: " + e)
    for e in (errs + msgs)[:5]:
        lines.append("  nvim: " + e[:240])
    for m in r["mismatches"][:5]:
        lines.append("  mismatch: " + json.dumps(m, ensure_ascii=False)[:400])
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--rate", type=int, default=12, help="ms between keys")
    ap.add_argument("--big-mb", type=int, default=50)
    ap.add_argument("--paste-every", type=int, default=4000, help="keys between large pastes (0: none)")
    ap.add_argument("--paste-kb", type=int, default=256)
    ap.add_argument("--block", type=int, default=10000, help="keys per table row")
    ap.add_argument("--warmup", type=int, default=None, help="keys before memory must be flat (default: one block)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = os.path.abspath(a.out or tempfile.mkdtemp(prefix="laya-soak."))
    res = os.path.join(out, "soak.json")
    extra = {
        "SOAK_OUT": res,
        "SOAK_KEYS": a.keys,
        "SOAK_RATE_MS": a.rate,
        "SOAK_BIG_MB": a.big_mb,
        "SOAK_PASTE_EVERY": a.paste_every,
        "SOAK_PASTE_KB": a.paste_kb,
        "SOAK_SEED": a.seed,
        "SOAK_SAMPLE_EVERY": max(100, a.block // 10),
        "SOAK_PROGRESS": os.path.join(out, "progress"),
    }
    print(f"soak: {a.keys} keys at {a.rate} ms/key, results in {out} (progress: {out}/progress)", file=sys.stderr)
    p = start_driver(out, extra, a.nice)
    loads = [loadavg()[0]]
    while p.poll() is None:
        time.sleep(5)
        loads.append(loadavg()[0])
    if not os.path.exists(res):
        sys.exit(f"soak: Neovim exited ({p.returncode}) without results; see {out}/nvim.stderr")
    with open(res) as f:
        r = json.load(f)
    text = report(r, out, a.block, a.warmup if a.warmup is not None else min(a.block, a.keys // 2), loads)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
