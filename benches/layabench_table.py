#!/usr/bin/env python3
"""Prints the results of benches/layabench.sh (a folder of e2e-N.json written by
:LayaBench, and seed-N.json by benches/seed_mlx.py) as Markdown tables for
BENCHMARKS.md: one row per run, then the spread across runs.

    python3 benches/layabench_table.py DIR
"""

import glob
import json
import os
import re
import sys


def load(pattern):
    def run_no(path):
        return int(re.search(r"-(\d+)\.json$", path).group(1))

    return [(run_no(p), json.load(open(p))) for p in sorted(glob.glob(pattern), key=run_no)]


def spread(values):
    return f"{min(values):.0f}–{max(values):.0f}" if values else "-"


def main(folder):
    runs = load(os.path.join(folder, "e2e-*.json"))
    seeds = dict(load(os.path.join(folder, "seed-*.json")))
    if not runs:
        print(f"no e2e-*.json in {folder}", file=sys.stderr)
        return 1
    first = runs[0][1]
    m = first["machine"]
    print(
        f"{first['date']}, {m['cpu']}, nproc {m['nproc']}, {m['os']}; Neovim {first['nvim_version']}; "
        f"backend {first['backend']} ({first['device']}), model {os.path.basename(str(first['model']))} "
        f"({first['quantization']}); {first['keys_measured']} keys per run at {first['rate_ms']} ms/key, "
        f"text {first['text']}, clock {first['clock_sync']}; load average at the end of each run: "
        + ", ".join(f"{r['machine'].get('loadavg', ['?'])[0]:.1f}" for _, r in runs)
    )
    print()
    print("| run | e2e p50 | e2e p90 | e2e p99 | e2e max | echo p50 | echo p99 | e2e/echo p50 "
          "| ping p50 | ping p99 | e2e/ping p50 | decision p50 | decision p99 | decision at word ends p50 | seed MLX p50 | seed/decision p50 "
          "| seed/word-end decision p50 | answered |")
    print("| --- |" + " ---: |" * 17)
    cols = {k: [] for k in ("e50", "e99", "p50", "r50", "o50", "o99", "ro50", "d50", "s50", "sr")}
    for n, r in runs:
        e, p, d = r["e2e"], r["ping"], r["stages"]["decision"]
        o = r.get("echo", {})  # absent before the echo floor existed
        echo_cells = (
            f"| {o['p50_us']:.0f} | {o['p99_us']:.0f} | {e['p50_us'] / o['p50_us']:.2f}× " if o.get("n") else "| - | - | - "
        )
        s = seeds.get(n, {}).get("seed_python_mlx")
        seed_p50 = f"{s['p50_us']:.0f}" if s else "-"
        ratio = f"{s['p50_us'] / d['p50_us']:.1f}×" if s and d.get("p50_us") else "-"
        wb = r.get("decision_by_key", {}).get("boundary", {})
        wb_p50 = f"{wb['p50_us']:.0f}" if wb.get("n") else "-"
        wb_ratio = f"{s['p50_us'] / wb['p50_us']:.1f}×" if s and wb.get("n") else "-"
        print(
            f"| {n} | {e['p50_us']:.0f} | {e['p90_us']:.0f} | {e['p99_us']:.0f} | {e['max_us']:.0f} "
            + echo_cells
            + f"| {p['p50_us']:.0f} | {p['p99_us']:.0f} | {e['p50_us'] / p['p50_us']:.2f}× "
            f"| {d['p50_us']:.0f} | {d['p99_us']:.0f} | {wb_p50} | {seed_p50} | {ratio} | {wb_ratio} "
            f"| {r['answered']}/{r['keys_measured']} |"
        )
        cols["e50"].append(e["p50_us"])
        cols["e99"].append(e["p99_us"])
        cols["p50"].append(p["p50_us"])
        cols["r50"].append(e["p50_us"] / p["p50_us"])
        cols["d50"].append(d["p50_us"])
        if o.get("n"):
            cols["o50"].append(o["p50_us"])
            cols["o99"].append(o["p99_us"])
            cols["ro50"].append(e["p50_us"] / o["p50_us"])
        if s and d.get("p50_us"):
            cols["s50"].append(s["p50_us"])
            cols["sr"].append(s["p50_us"] / d["p50_us"])
    print()
    print(
        f"Spread over {len(runs)} runs (µs): e2e p50 {spread(cols['e50'])}, e2e p99 {spread(cols['e99'])}, "
        + (f"echo p50 {spread(cols['o50'])}, echo p99 {spread(cols['o99'])}, "
           f"e2e/echo p50 {min(cols['ro50']):.2f}–{max(cols['ro50']):.2f}×, " if cols["ro50"] else "")
        + f"ping p50 {spread(cols['p50'])}, e2e/ping p50 {min(cols['r50']):.2f}–{max(cols['r50']):.2f}×, "
        f"decision p50 {spread(cols['d50'])}"
        + (f", seed MLX p50 {spread(cols['s50'])}, seed/decision {min(cols['sr']):.1f}–{max(cols['sr']):.1f}×"
           if cols["sr"] else "")
    )
    ghost_table(runs)
    print()
    print("Stages of the last run (µs; each from the previous mark):")
    print()
    print("| stage | n | p50 | p90 | p99 | max |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    last = runs[-1][1]
    extra = {
        "decision, key in a word": last.get("decision_by_key", {}).get("word_char", {}),
        "decision, key ending a word": last.get("decision_by_key", {}).get("boundary", {}),
    }
    for stage in ("send_to_host", "host_queue", "host_to_lua"):
        if stage in last.get("echo_stages", {}):
            extra[f"echo: {stage}"] = last["echo_stages"][stage]
    names = last["stage_order"] + ["=e2e", "=echo", "=ping", "=rpc_roundtrip", "=host_total"] + list(extra)
    for name in names:
        if name in extra:
            s, label = extra[name], name
        else:
            s = last.get(name[1:], {}) if name.startswith("=") else last["stages"][name]
            label = name[1:] if name.startswith("=") else f"{name} ({last['stages'][name]['what']})"
        if s.get("n"):
            print(f"| {label} | {s['n']} | {s['p50_us']:.0f} | {s['p90_us']:.0f} | {s['p99_us']:.0f} | {s['max_us']:.0f} |")
    rss = last["rss_kb"]
    print()
    print(f"RSS after the last run: Neovim {rss['nvim'] / 1024:.1f} MB, host "
          f"{(rss.get('host') or 0) / 1024:.1f} MB; {last['keystrokes_per_s']:.0f} keys/s replayed")
    return 0


def ghost_table(runs):
    """Keystroke → ghost text on screen, for the keys whose answer showed ghost
    text: at once when the host's answer to that key, worked out in advance
    (its answers to the next keys), was already there; else when the answer
    drew it."""
    runs = [(n, r) for n, r in runs if r.get("ghost_ready", {}).get("n")]
    if not runs:
        return
    print()
    print("Keystroke → ghost text on screen (keys whose answer showed ghost text):")
    print()
    print("| run | keys | at once | replaced / withdrawn | p50 | p90 | p99 | max | /ping p50 | /echo p50 "
          "| answer p50 (same keys) | answer p99 |")
    print("| --- |" + " ---: |" * 11)
    g50, g99, gp = [], [], []
    for n, r in runs:
        g, sc, p, o, a = r["ghost_ready"], r["ghost_screen"], r["ping"], r["echo"], r["e2e_ghost"]
        print(
            f"| {n} | {sc['ghost_keys']} | {100 * sc['ready_at_once'] / sc['ghost_keys']:.0f} % "
            f"| {sc['replaced']} / {sc['withdrawn']} | {g['p50_us']:.0f} | {g['p90_us']:.0f} | {g['p99_us']:.0f} "
            f"| {g['max_us']:.0f} | {g['p50_us'] / p['p50_us']:.2f}× | {g['p50_us'] / o['p50_us']:.2f}× "
            f"| {a['p50_us']:.0f} | {a['p99_us']:.0f} |"
        )
        g50.append(g["p50_us"])
        g99.append(g["p99_us"])
        gp.append(g["p50_us"] / p["p50_us"])
    print()
    print(f"Spread over {len(runs)} runs (µs): ghost text p50 {spread(g50)}, p99 {spread(g99)}, "
          f"ghost text / ping p50 {min(gp):.2f}–{max(gp):.2f}×")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
