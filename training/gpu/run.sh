#!/usr/bin/env bash
# The real training run, on the GPU machine of the `device` tool (no network
# there). Two back-to-back calls, because one call carries at most 64 MiB:
#   run.sh stage          keeps carry1/ (half the MLX CUDA wheel, part of the data)
#   run.sh train MINUTES  joins the wheel, installs MLX beside a link to the
#                         CUDA libraries, checks MLX on the GPU, trains, exports
#                         and evaluates; falls back to PyTorch if MLX cannot run.
# training/gpu/pack.sh prepares carry1/ and carry2/ on the development machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
STAGE=/tmp/laya-stage
OUT=${OUT:-/tmp/laya-out}
mkdir -p "$STAGE" "$OUT"
if [ "$1" = stage ]; then
  cp training/work/carry1/* "$STAGE"/ && ls -la "$STAGE" && df -h /tmp | tail -1
  exit
fi
MINUTES=${2:-6}
cp training/work/carry2/* "$STAGE"/
(cd "$STAGE" && cat mlx-cuda.part.* > mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl && sha256sum -c SHA256SUMS) || exit 1
mkdir -p training/work/data training/out
for f in "$STAGE"/*.u16.xz; do xz -dc "$f" > "training/work/data/$(basename "$f" .xz)"; done
cat training/work/data/train.u16.part.* > training/work/data/train.u16 && rm -f training/work/data/train.u16.part.*
cp "$STAGE"/laya-default.vocab.txt training/out/
ls -la training/work/data
SITE=/tmp/mlxsite
python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$STAGE"/mlx-0.32.4-*.whl "$STAGE"/mlx_cuda_13-*.whl
# libmlx.so finds the CUDA libraries at $ORIGIN/../../nvidia: link the nvidia-* packages' folder there
NV=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])')
ln -sfn "$NV" "$SITE/nvidia"
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
T0=$(date +%s)
mlx_ok=0
if python3 -c 'import mlx.core as mx; a = mx.random.normal((2048, 2048)); mx.eval(a @ a); print("MLX", mx.__version__, mx.default_device(), mx.device_info() if hasattr(mx, "device_info") else "")' 2>&1 | tee "$OUT/mlx-probe.txt"; then
  python3 -m training train --config gpu --minutes "$MINUTES" --fresh 2>&1 | tee "$OUT/train.log" && mlx_ok=1
fi
if [ $mlx_ok = 1 ]; then
  python3 -m training export 2>&1 | tee -a "$OUT/train.log"
  python3 -m training eval --models laya-default-f32 laya-default --tokens 400000 2>&1 | tee -a "$OUT/train.log"
  cp training/out/laya-default.safetensors training/out/laya-default-bf16.safetensors training/out/eval.json \
     training/out/ckpt/state.json "$OUT"/
  python3 -c 'import mlx.core as mx, numpy as np, sys; from training import shards; shards.save({k: np.array(v) for k, v in mx.load("training/out/laya-default-f32.safetensors").items()}, sys.argv[1])' "$OUT/f32"
else
  left=$(python3 -c "print(max(1.5, $MINUTES - ($(date +%s) - $T0) / 60))")
  echo "MLX on CUDA failed (see mlx-probe.txt / train.log); training with PyTorch for $left min" | tee -a "$OUT/train.log"
  python3 -m training.torch_train --config gpu --minutes "$left" --vocab training/out/laya-default.vocab.txt \
     --out "$OUT/f32" 2>&1 | tee -a "$OUT/torch.log"
fi
ls -la "$OUT"
