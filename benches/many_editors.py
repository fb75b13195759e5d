#!/usr/bin/env python3
"""Many editors: N real headless Neovims (each with Laya and its own host)
type held-out prose at the same time (benches/soak/driver.lua, plan
`type`), started together once every host is ready. Prints one table: each
host's memory split into the part shared with the other hosts (the mmapped
model file: Shared_Clean, and Pss that splits shared pages between their
users) and its private part, each instance's latency (key fed -> its
answer's ghost text set), keys per second, keys answered, lost keys.

  benches/many_editors.py [--instances 10] [--keys 2000] [--rate 12] [--nice 10] [--out DIR]

Needs `cargo build --release` and nvim (>= 0.10) on PATH or in .venv/bin.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import ROOT, loadavg, log_counts, mb, ms, pct, start_driver, stderr_errors, table  # noqa: E402


def smaps(pid, model_path):
    """smaps_rollup fields (kB) of `pid`, and the model file's mapping's."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[-1] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1])
        model = {}
        inside = False
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                first = line.split()[0] if line.split() else ""
                if "-" in first and not first.endswith(":"):
                    inside = line.rstrip().endswith(model_path)
                elif inside:
                    parts = line.split()
                    if len(parts) >= 3 and parts[-1] == "kB":
                        k = parts[0].rstrip(":")
                        model[k] = model.get(k, 0) + int(parts[1])
        out["model"] = model
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=10)
    ap.add_argument("--keys", type=int, default=2000, help="keys each instance types")
    ap.add_argument("--rate", type=int, default=12, help="ms between keys")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = os.path.abspath(a.out or tempfile.mkdtemp(prefix="laya-many."))
    os.makedirs(out, exist_ok=True)
    go = os.path.join(out, "go")
    if os.path.exists(go):
        os.remove(go)
    model = os.path.realpath(os.path.join(ROOT, "models/laya-default.safetensors"))
    procs = []
    for i in range(1, a.instances + 1):
        d = os.path.join(out, str(i))
        os.makedirs(d, exist_ok=True)
        ready = os.path.join(d, "ready")
        if os.path.exists(ready):
            os.remove(ready)
        extra = {
            "SOAK_OUT": os.path.join(d, "soak.json"),
            "SOAK_PLAN": "type",
            "SOAK_KEYS": a.keys,
            "SOAK_RATE_MS": a.rate,
            "SOAK_SEED": i,
            "SOAK_SAMPLE_EVERY": max(100, a.keys // 4),
            "SOAK_READY_FILE": ready,
            "SOAK_GO_FILE": go,
        }
        procs.append((i, d, start_driver(d, extra, a.nice)))
    print(f"many editors: {a.instances} instances x {a.keys} keys at {a.rate} ms/key, in {out}", file=sys.stderr)
    deadline = time.time() + 300
    pids = {}
    while len(pids) < len(procs) and time.time() < deadline:
        for i, d, p in procs:
            f = os.path.join(d, "ready")
            if i not in pids and os.path.exists(f):
                with open(f) as fh:
                    parts = fh.read().split()
                if len(parts) == 2:
                    pids[i] = (int(parts[0]), int(parts[1]))
            if p.poll() is not None and i not in pids:
                sys.exit(f"many editors: instance {i} exited before it was ready; see {d}/nvim.stderr")
        time.sleep(0.2)
    if len(pids) < len(procs):
        sys.exit("many editors: not every host was ready within 300 s")
    with open(go, "w") as f:
        f.write("go\n")
    t0 = time.time()
    loads = [loadavg()[0]]
    # Memory while every instance types: samples every 2 s; the table uses
    # the one in the middle of those taken while all were running.
    snaps = []
    while any(p.poll() is None for _, _, p in procs):
        time.sleep(2)
        loads.append(loadavg()[0])
        if all(p.poll() is None for _, _, p in procs):
            snap = {i: (smaps(h, model), smaps(n, model)) for i, (h, n) in pids.items()}
            if all(v[0] is not None for v in snap.values()):
                snaps.append(snap)
    wall = time.time() - t0
    snap = snaps[len(snaps) // 2] if snaps else {}
    rows = []
    rates, shown_rates, answered_pct, all_ok = [], [], [], True
    sums = {"Rss": 0, "Pss": 0}
    for i, d, p in procs:
        try:
            with open(os.path.join(d, "soak.json")) as f:
                r = json.load(f)
        except FileNotFoundError:
            rows.append([i, "no results"] + [""] * 13)
            all_ok = False
            continue
        lat = [x for x in r["lat_us"] if x >= 0]
        h, n = snap.get(i, (None, None))
        h = h or {}
        n = n or {}
        m = h.get("model", {})
        for k in sums:
            sums[k] += h.get(k, 0)
        st = (r.get("status_end") or {}).get("counters") or {}
        recv = st.get("predict_received", 0)
        handled = st.get("predict_answered", 0) + st.get("predict_superseded", 0)
        rate = r["typed"] / r["typing_s"] if r.get("typing_s") else 0
        rates.append(rate)
        shown_rate = r["answered"] / r["typing_s"] if r.get("typing_s") else 0
        shown_rates.append(shown_rate)
        ans = 100 * r["answered"] / max(1, r["typed"])
        answered_pct.append(ans)
        logc, _ = log_counts(d)
        errs = len(stderr_errors(d)) + len([m_ for m_ in (r.get("messages") or "").splitlines() if m_.strip()])
        lost = len(r["mismatches"])
        ok = not r.get("aborted") and lost == 0 and recv == handled and r["typed"] == a.keys
        all_ok = all_ok and ok
        rows.append(
            [
                i,
                pids[i][0],
                mb(h.get("Rss")),
                mb(h.get("Pss")),
                mb(h.get("Shared_Clean", 0) + h.get("Shared_Dirty", 0)),
                mb(h.get("Private_Clean", 0) + h.get("Private_Dirty", 0)),
                f"{mb(m.get('Rss'))}/{mb(m.get('Pss'))}",
                mb(n.get("Rss")),
                f"{r['typed']}",
                f"{ans:.1f}",
                f"{handled}/{recv}",
                ms(pct(lat, 50)),
                ms(pct(lat, 99)),
                f"{rate:.1f}",
                f"{shown_rate:.1f}",
                f"{lost} / {st.get('engine_panics', '-')} / {logc['ERROR'] + logc['WARN']} / {errs}",
            ]
        )
    lines = []
    lines.append(
        f"{a.instances} Neovim instances, each with its own host, typing held-out prose at {a.rate} ms/key at once; "
        f"wall {wall:.0f} s; load average (1 min) min/mean/max "
        f"{min(loads):.2f}/{sum(loads) / len(loads):.2f}/{max(loads):.2f}; memory sampled while all typed "
        f"({len(snaps)} samples, the middle one)"
    )
    lines.append("")
    lines.append(
        table(
            [
                "#",
                "host pid",
                "host RSS MB",
                "Pss MB",
                "shared MB",
                "private MB",
                "model map RSS/Pss MB",
                "nvim RSS MB",
                "keys",
                "answered %",
                "host answered+superseded/received",
                "p50 ms",
                "p99 ms",
                "keys/s",
                "answers shown/s",
                "lost / panics / log WARN+ERROR / Lua errors",
            ],
            rows,
        )
    )
    lines.append("")
    lines.append(
        f"hosts: sum of RSS {mb(sums['Rss'])} MB, sum of Pss {mb(sums['Pss'])} MB (what they cost together); "
        f"keys/s per instance min/max {min(rates, default=0):.1f}/{max(rates, default=0):.1f}, "
        f"answers shown/s min/max {min(shown_rates, default=0):.1f}/{max(shown_rates, default=0):.1f}; "
        f"keys with their answer shown min {min(answered_pct, default=0):.1f}%; "
        f"every key handled, none lost, no errors: {'yes' if all_ok else 'NO'}"
    )
    text = "\n".join(lines)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
