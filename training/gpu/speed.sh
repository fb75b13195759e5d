#!/usr/bin/env bash
# Training throughput and short comparison runs on any Linux machine with an
# NVIDIA GPU (no network needed), from a folder DIR that holds this training/
# package and the MLX wheels cut in two (small enough for any upload):
#   speed.sh stage DIR           keeps DIR/part.* for the next step
#   speed.sh torch DIR SHAPES    reference: PyTorch's fused cuDNN GRU, same model (BxT shapes)
#   speed.sh mlx DIR ARGS        joins the parts, installs MLX, runs `python -m training speed ARGS`
#   speed.sh train DIR MINUTES CONFIG...
#                                unpacks DIR/data.tar.xz (token streams + vocabulary), then trains
#                                each config for MINUTES from scratch (training/out/ckpt-CONFIG)
# Prepare DIR with pack-speed.sh.
set -uo pipefail
what=$1 dir=$(cd "$2" && pwd); shift 2
STAGE=/tmp/laya-stage SITE=/tmp/mlxsite
mkdir -p "$STAGE"
cp "$dir"/part.* "$dir"/SHA256SUMS "$STAGE"/ 2>/dev/null
export PYTHONUNBUFFERED=1
cd "$dir"

install_mlx() {
  if [ ! -f "$SITE/.installed" ]; then
    (cd "$STAGE" && cat part.* > mlx-cuda.tar.xz && sha256sum -c SHA256SUMS) || exit 1
    mkdir -p "$SITE" && tar xJf "$STAGE/mlx-cuda.tar.xz" -C "$SITE" && python3 -m zipfile -e "$dir"/mlx-*.whl "$SITE" || exit 1
    # libmlx.so finds the CUDA libraries at $ORIGIN/../../nvidia: the image's nvidia-* packages
    ln -sfn "$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])')" "$SITE/nvidia"
    touch "$SITE/.installed"
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  export PYTHONPATH="$SITE:$dir"
}

case $what in
  stage) ls -la "$STAGE" ;;
  torch) python3 -m training.torch_train --speed "$@" ;;
  mlx) install_mlx && python3 -m training speed "$@" ;;
  train)
    install_mlx
    minutes=$1; shift
    mkdir -p training/work training/out
    tar xJf "$dir"/data.tar.xz -C training || exit 1
    ls -la training/work/data
    for cfg in "$@"; do
      python3 -m training train --config "$cfg" --minutes "$minutes" --fresh 2>&1 | tee "${OUT:-/tmp}/train-$cfg.log"
      rm -rf "training/out/ckpt-$cfg" && mv training/out/ckpt "training/out/ckpt-$cfg"
      cp "training/out/ckpt-$cfg/state.json" "${OUT:-/tmp}/state-$cfg.json"
    done ;;
esac
