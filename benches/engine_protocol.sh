#!/usr/bin/env bash
# `laya protocol` against ksr.py's trivial Python buffer-words predictor, on
# the same text in the same run (alternating, REPEAT times), scored and timed
# by ../shared/eval/ksr.py. Prints ksr.py's markdown table.
#   benches/engine_protocol.sh [TEXT] [extra laya flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
KSR=${LAYA_KSR:-../shared/eval/ksr.py}; [ -f "$KSR" ] || KSR=tests/support/ksr.py
TEXT=${1:-tests/data/heldout-prose.txt}
shift || true
REPEAT=${REPEAT:-2}
cargo build --release -q
out=$(mktemp -d)
for i in $(seq "$REPEAT"); do
  python3 "$KSR" run --quiet --text "$TEXT" --predictor buffer --label "ksr.py buffer (Python) #$i" --out "$out/$i-a.json"
  python3 "$KSR" run --quiet --text "$TEXT" --cmd "target/release/laya protocol --no-model $*" \
    --label "laya protocol, no model #$i" --out "$out/$i-b.json"
  python3 "$KSR" run --quiet --text "$TEXT" --cmd "target/release/laya protocol $*" \
    --label "laya protocol, default model #$i" --out "$out/$i-c.json"
done
python3 "$KSR" table "$out"/*.json
rm -rf "$out"
