#!/usr/bin/env bash
# Quality of the engine on the held-out samples, prose and code separately:
# `laya eval` (METRICS.md computed natively; agrees with ksr.py, see
# tests/engine_cli.rs) for each weight dtype, next to ksr.py's buffer-words
# baseline on the same text.
#   benches/engine_quality.sh [F32_MODEL]   (default: models/laya-default.safetensors run as f32)
set -euo pipefail
cd "$(dirname "$0")/.."
KSR=${LAYA_KSR:-../shared/eval/ksr.py}; [ -f "$KSR" ] || KSR=tests/support/ksr.py
F32=${1:-models/laya-default.safetensors}
cargo build --release -q
out=$(mktemp -d)
echo "| text | predictor | KSR@1 | KSR@3 | KSR_max | ghost precision | next-word top-1 / top-3 | comp@2ch top-1 | model steps / re-reads |"
echo "|---|---|---|---|---|---|---|---|---|"
for kind in prose code; do
  text=tests/data/heldout-$kind.txt
  python3 "$KSR" run --quiet --text "$text" --predictor buffer --out "$out/buffer.json" 2>/dev/null
  python3 - "$out/buffer.json" "$kind" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
p = lambda x: f"{100 * x:.1f}"
print(f"| {sys.argv[2]} | ksr.py buffer words | {p(m['KSR@1'])} | {p(m['KSR@3'])} | {p(m['KSR_max'])} | {p(m['ghost_precision'])} | {p(m['nextword_top1'])} / {p(m['nextword_top3'])} | {p(m['comp2_top1'])} | - |")
PY
  for run in "--no-model" "--model $F32 --dtype f32" "--model models/laya-default-bf16.safetensors" "--model models/laya-default.safetensors"; do
    target/release/laya eval "$text" $run --json 2>/dev/null > "$out/laya.json"
    python3 - "$out/laya.json" "$kind" "$run" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
p = lambda x: f"{100 * x:.1f}"
print(f"| {sys.argv[2]} | laya eval {sys.argv[3]} | {p(m['KSR@1'])} | {p(m['KSR@3'])} | {p(m['KSR_max'])} | {p(m['ghost_precision'])} | {p(m['nextword_top1'])} / {p(m['nextword_top3'])} | {p(m['comp2_top1'])} | {m['model_steps']} / {m['rereads']} |")
PY
  done
done
rm -rf "$out"
