#!/usr/bin/env bash
# `laya protocol` against ksr.py's trivial Python buffer-words predictor, on
# the same text in the same run (alternating, REPEAT times), scored and timed
# by ../shared/eval/ksr.py. Prints ksr.py's markdown table, then RTT p90 and
# mean (the table has p50/p99 only).
#   benches/engine_protocol.sh [TEXT] [extra laya flags...]
# AWAKE=1: a control for the machine's idle wake-up latency: one busy loop
# runs in the background for the whole comparison, so no core sits idle
# (on a VM, waking an idle vCPU costs tens of us of every RTT, and
# `laya protocol`'s helper thread, busy between requests, avoids some of it).
# BASE=path/to/other/laya: also runs that binary's `protocol` (with the
# model) in each repeat, after this tree's, for a before/after comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
KSR=${LAYA_KSR:-../shared/eval/ksr.py}; [ -f "$KSR" ] || KSR=tests/support/ksr.py
TEXT=${1:-tests/data/heldout-prose.txt}
shift || true
REPEAT=${REPEAT:-3}
cargo build --release -q
out=$(mktemp -d)
spin=""
cleanup() {
  [ -n "$spin" ] && kill "$spin" 2>/dev/null
  rm -rf "$out"
}
trap cleanup EXIT
if [ "${AWAKE:-0}" = 1 ]; then
  sh -c 'while :; do :; done' &
  spin=$!
fi
echo "nproc $(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M UTC')"
for i in $(seq "$REPEAT"); do
  python3 "$KSR" run --quiet --text "$TEXT" --predictor buffer --label "ksr.py buffer (Python) #$i" --out "$out/$i-a.json"
  python3 "$KSR" run --quiet --text "$TEXT" --cmd "target/release/laya protocol --no-model $*" \
    --label "laya protocol, no model #$i" --out "$out/$i-b.json"
  python3 "$KSR" run --quiet --text "$TEXT" --cmd "target/release/laya protocol $*" \
    --label "laya protocol, default model #$i" --out "$out/$i-c.json"
  python3 "$KSR" run --quiet --text "$TEXT" --cmd "target/release/laya protocol --no-think-ahead $*" \
    --label "laya protocol --no-think-ahead #$i" --out "$out/$i-d.json"
  if [ -n "${BASE:-}" ]; then
    python3 "$KSR" run --quiet --text "$TEXT" --cmd "$BASE protocol $*" \
      --label "BASE protocol, default model #$i" --out "$out/$i-e.json"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$KSR" table "$out"/*.json
python3 - "$out" <<'EOF'
import glob, json, sys
print("\n| predictor | RTT p50 / p90 / p99 / mean us | self p50 / p90 / p99 / mean us | queries | run wall s | wall / query us | KSR@1 |")
print("|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(sys.argv[1] + "/*.json"), key=lambda f: (int(f.split("/")[-1].split("-")[0]), f)):
    m = json.load(open(f))
    x = m["metrics"]
    r, s = x["latency_rtt"], x.get("latency_self") or {}
    print(f"| {m['meta']['label']} | {r['p50_us']} / {r['p90_us']} / {r['p99_us']} / {r['mean_us']} "
          f"| {s.get('p50_us', '-')} / {s.get('p90_us', '-')} / {s.get('p99_us', '-')} / {s.get('mean_us', '-')} "
          f"| {x['queries']} | {x['wall_s']} | {1e6 * x['wall_s'] / x['queries']:.1f} "
          f"| {round(100 * x['KSR@1'], 1)} |")
EOF
