#!/usr/bin/env bash
# The real training run, on the GPU machine of the `device` tool (no network
# there). Back-to-back calls, because one call carries at most 64 MiB (with the
# working tree) and runs at most 10 minutes; pack.sh cuts what they need into
# carry1/ .. carryN/, one per call:
#   run.sh stage               keeps the part it carries (carry1 .. carryN-1)
#   run.sh train MINUTES STOP  (carrying the last part) joins the parts, installs
#                              MLX beside a link to the CUDA libraries, checks MLX
#                              on the GPU, and starts a run sized to MINUTES of
#                              training, stopping (with a checkpoint) STOP minutes
#                              after the call began (setup counts: a call has
#                              10 minutes); falls back to PyTorch if MLX cannot run
#   run.sh resume [STOP]       resumes that run (again until STOP minutes into the call)
#                              and, once it is complete, exports and evaluates
set -uo pipefail
START=$(date +%s)  # STOP counts from here: setup (unpacking, installing) is part of the call's 10 minutes
cd "$(dirname "$0")/../.."
STAGE=/tmp/laya-stage
OUT=${OUT:-/tmp/laya-out}
SITE=/tmp/mlxsite
mkdir -p "$STAGE" "$OUT"
if [ "$1" = stage ]; then
  cp training/work/carry*/* "$STAGE"/ && ls -la "$STAGE" && df -h /tmp | tail -1
  exit
fi

setup() {  # idempotent: what the first training call does, and a resumed one finds done
  if [ ! -d "$SITE/mlx" ]; then
    cp training/work/carry*/* "$STAGE"/
    (cd "$STAGE" && cat payload.part.* > payload.tar && sha256sum -c SHA256SUMS && tar xf payload.tar) || exit 1
    P="$STAGE/payload"
    mkdir -p training/work/data training/out
    for f in "$P"/*.u16.xz; do xz -dc "$f" > "training/work/data/$(basename "$f" .xz)"; done
    cp "$P"/laya-default.vocab.txt training/out/
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$P"/mlx-0.32.4-*.whl "$P"/mlx_cuda_13-*.whl
    # libmlx.so finds the CUDA libraries at $ORIGIN/../../nvidia: link the nvidia-* packages' folder there
    NV=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])')
    ln -sfn "$NV" "$SITE/nvidia"
  fi
  ls -la training/work/data
  export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
}

finish() {  # export and evaluate a complete run; everything the development machine needs goes to $OUT
  python3 -m training export 2>&1 | tee -a "$OUT/train.log"
  python3 -m training eval --models laya-default-f32 laya-default --tokens 400000 2>&1 | tee -a "$OUT/train.log"
  cp training/out/laya-default.safetensors training/out/laya-default-bf16.safetensors training/out/eval.json \
     training/out/ckpt/state.json "$OUT"/
  python3 -c 'import mlx.core as mx, numpy as np, sys; from training import shards; shards.save({k: np.array(v) for k, v in mx.load("training/out/laya-default-f32.safetensors").items()}, sys.argv[1])' "$OUT/f32"
}

complete() {  # the checkpoint has reached the run's last step
  python3 -c 'import json, sys; s = json.load(open("training/out/ckpt/state.json")); sys.exit(s["step"] < s["config"]["steps"])'
}

setup
T0=$(date +%s)
left() { python3 -c "print(round(max(0.5, $1 - ($(date +%s) - $START) / 60), 2))"; }
if [ "$1" = train ]; then
  MINUTES=${2:-6}
  STOP=$(left "${3:-$MINUTES}")
  mlx_ok=0
  if python3 -c 'import mlx.core as mx; a = mx.random.normal((2048, 2048)); mx.eval(a @ a); print("MLX", mx.__version__, mx.default_device(), mx.device_info() if hasattr(mx, "device_info") else "")' 2>&1 | tee "$OUT/mlx-probe.txt"; then
    python3 -m training train --config gpu --minutes "$MINUTES" --stop-after "$STOP" --fresh 2>&1 | tee "$OUT/train.log" && mlx_ok=1
  fi
  if [ $mlx_ok = 0 ]; then
    left=$(python3 -c "print(max(1.5, $STOP - ($(date +%s) - $T0) / 60))")
    echo "MLX on CUDA failed (see mlx-probe.txt / train.log); training with PyTorch for $left min" | tee -a "$OUT/train.log"
    python3 -m training.torch_train --config gpu --minutes "$left" --vocab training/out/laya-default.vocab.txt \
       --out "$OUT/f32" 2>&1 | tee -a "$OUT/torch.log"
  fi
elif [ "$1" = resume ]; then
  STOP=$(left "${2:-9}")
  python3 -m training train --config gpu --stop-after "$STOP" 2>&1 | tee "$OUT/train.log"
fi
if [ -f training/out/ckpt/state.json ] && complete; then
  finish
fi
cp training/out/ckpt/state.json "$OUT"/ 2>/dev/null
ls -la "$OUT"
