#!/usr/bin/env bash
# The training run on any Linux machine with an NVIDIA GPU whose python3 has
# PyTorch (no network needed), from DIR as pack.sh filled it, one step after
# the other (what /tmp holds must stay between the steps):
#   run.sh stage DIR PART        keeps DIR/PART's piece of the payload in /tmp/laya-train
#   run.sh smoke DIR             the trainer end to end on a tiny random stream: a run
#                                stopped after its first step, resumed, completed, shards written
#   run.sh train DIR NAME ARGS   (after the last part) joins and checks the parts once,
#                                unpacks the streams, then trains run NAME:
#                                python -m training.torch_train --ckpt /tmp/laya-train/NAME
#                                --out $OUT/NAME --vocab <payload vocabulary> ARGS
#                                (a run whose checkpoint is there resumes); log in $OUT/NAME.log
set -uo pipefail
what=$1 dir=$(cd "$2" && pwd); shift 2
T=/tmp/laya-train OUT=${OUT:-/tmp/laya-out}
mkdir -p "$T/parts" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$dir/code"
cd "$dir/code"
data() {  # training/work/data of this package -> $1
  mkdir -p training/work && rm -rf training/work/data && ln -sfn "$1" training/work/data
}
case $what in
  stage)
    cp "$dir/$1"/* "$T/parts/" && ls -la "$T/parts" ;;
  smoke)
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
    mkdir -p "$T/smoke" && data "$T/smoke"
    python3 - "$T/smoke" <<'PY' || exit 1
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
for name, n in [("train", 200_000), ("valid.prose", 5_000), ("valid.code", 5_000), ("test.prose", 5_000),
                ("test.code", 5_000), ("test.python", 3_000)]:
    rng.integers(0, 100, n).astype(np.uint16).tofile(f"{d}/{name}.u16")
open(f"{d}/vocab.txt", "w").write("".join(t + "\n" for t in ["<unk>", "<s>", "<nl>"] + [f"w{i}" for i in range(97)]))
PY
    args=(--config tiny --set tbptt=true --vocab "$T/smoke/vocab.txt" --vocab-size 80 --ckpt "$T/smoke/ckpt" --out "$T/smoke/f32")
    python3 -m training.torch_train "${args[@]}" --fresh --stop-after 0 && \
    python3 -m training.torch_train "${args[@]}" && \
    python3 -c 'import sys; from training import shards; t = shards.load(sys.argv[1]); print({k: v.shape for k, v in t.items()})' "$T/smoke/f32" \
      || exit 1 ;;
  train)
    name=$1; shift
    cp "$dir"/p*/* "$T/parts/" 2>/dev/null  # the part this call carries, if any
    if [ ! -f "$T/data/.ready" ]; then
      (cd "$T/parts" && cat part.* > ../payload.tar && cd .. && sha256sum -c parts/SHA256SUMS && tar xf payload.tar) || exit 1
      mkdir -p "$T/data" && ls "$T"/payload/*.xz | xargs -P 16 -I{} sh -c 'xz -dc {} > '"$T"'/data/$(basename {} .xz)' || exit 1
      rm -f "$T/payload.tar" && touch "$T/data/.ready"
    fi
    data "$T/data"
    python3 -m training.torch_train --ckpt "$T/$name" --out "$OUT/$name" --vocab "$T/payload/vocab.txt" "$@" 2>&1 \
      | tee -a "$OUT/$name.log"
    cp "$T/$name/state.json" "$OUT/$name.state.json" 2>/dev/null
    ls -la "$OUT" ;;
esac
