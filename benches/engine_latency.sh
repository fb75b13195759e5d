#!/usr/bin/env bash
# Decision latency by kind of keystroke (inside a word / word boundary / far
# edit), load + warm-up, step and output-layer times, RSS: `laya bench` on a
# real text, each weight dtype in its own process, REPEAT runs for the spread.
#   F32=path/to/f32.safetensors benches/engine_latency.sh [TEXT] [more laya bench flags]
# Without F32 the f32 row computes in f32 from the bf16 file's weights.
set -euo pipefail
cd "$(dirname "$0")/.."
TEXT=${1:-tests/data/heldout-prose.txt}
shift || true
REPEAT=${REPEAT:-3}
F32=${F32:-models/laya-default-bf16.safetensors}
cargo build --release -q
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$REPEAT"); do
  target/release/laya bench "$TEXT" --keystrokes "${KEYSTROKES:-5000}" "$@" \
    "--config=cpu:f32@$F32" \
    --config=cpu:bf16@models/laya-default-bf16.safetensors \
    --config=cpu:int8@models/laya-default.safetensors \
    --config=none
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
