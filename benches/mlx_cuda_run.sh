#!/bin/bash
# Measures the MLX backend on a Linux machine with an NVIDIA GPU and no
# toolchain (how BENCHMARKS.md's NVIDIA GPU figures were taken). Needs, in $D:
#   mlx_bench         the benchmark, built elsewhere with
#                     `cargo build --release --features mlx --benches` (its
#                     libmlx is replaced at run time by the CUDA one below)
#   mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl, mlx-0.32.4-cp312-*.whl
#   seed_mlx.py (from benches/)
# and a Python 3.12 whose site-packages hold the nvidia-* CUDA 13 packages
# (libmlx.so looks for them at $ORIGIN/../../nvidia).
#   D=dir OUT=logdir bash benches/mlx_cuda_run.sh
set -u
export PYTHONUNBUFFERED=1
D=${D:?folder with the bench and wheels}; O=${OUT:-/tmp/mlx-out}; W=/tmp/mlxw
mkdir -p "$O" $W
exec > >(tee "$O/run.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; python3 --version
python3 -m pip install -q --no-index --no-deps --no-compile --target $W/site \
  $D/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl $D/mlx-0.32.4-cp312-*.whl || exit 1
NV=$(python3 -c "import nvidia; print([p for p in nvidia.__path__ if 'site-packages' in p][0])")
ln -sfn "$NV" $W/site/nvidia
export PYTHONPATH=$W/site LD_LIBRARY_PATH=$W/site/mlx/lib
python3 -c "import mlx.core as mx; print('python mlx', mx.__version__, mx.default_device())"
# Run from the repository root: the default model and a held-out text drive it.
M=models/laya-default.safetensors
EXTRA="--vocab models/laya-default.vocab.txt --text tests/data/heldout-code.txt"
[ -f $M ] || { echo "run from the repository root ($M not found)"; exit 1; }
B=$D/mlx_bench; chmod +x $B
rm -rf /tmp/kc
echo "== cold start: new process, empty kernel cache"
$B --model $M --device gpu --load-only --compute f32 --kernel-cache /tmp/kc --json $O/cold.json
echo "== warm start: new process, kernel cache filled"
$B --model $M --device gpu --load-only --compute f32 --kernel-cache /tmp/kc --json $O/warm.json
echo "== latency, all paths and variants"
$B --model $M --device gpu --steps 3000 --compute f32,q8 --variants --kernel-cache /tmp/kc --json $O/gpu.json $EXTRA
echo "== seed-style Python MLX, same model, same machine"
python3 $D/seed_mlx.py $M --steps 3000 --readback --json $O/seed.json $EXTRA
date -u
