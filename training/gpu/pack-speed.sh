#!/usr/bin/env bash
# Fills DIR (default: .dev in the repository root, which git ignores) for
# speed.sh: this training/ package (code only) and the MLX CUDA wheel
# repacked as tar.xz and cut in two parts, one per upload:
#   DIR/a/part.0 (first step: speed.sh stage), DIR/b/part.1 + code + mlx wheel;
# and, once the token streams are encoded, DIR/c/data.tar.xz (the first
# TRAIN_MB megabytes of the training stream, default 60, the validation and
# test streams, the vocabulary) + code, for `speed.sh train`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/.dev}
W=$root/training/work/wheels
[ -f $W/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl ] || python3 -m pip download -q --no-deps \
  --only-binary=:all: --python-version 3.12 --platform manylinux_2_35_x86_64 mlx-cuda-13==0.32.4 mlx==0.32.4 -d $W
if [ ! -f $W/mlx-cuda.tar.xz ]; then
  tmp=$(mktemp -d) && (cd $tmp && unzip -q $W/mlx_cuda_13-0.32.4-*.whl && tar cf - . | xz -T2 -9e > $W/mlx-cuda.tar.xz)
  rm -rf $tmp
fi
rm -rf "$dir/a" "$dir/b" && mkdir -p "$dir/a" "$dir/b"
(cd "$dir/b" && split -n 2 -d -a 1 $W/mlx-cuda.tar.xz part. && sha256sum $W/mlx-cuda.tar.xz | sed 's| .*/| |;s|$||' > SHA256SUMS)
mv "$dir/b/part.0" "$dir/a/"
cp $W/mlx-0.32.4-cp312-*.whl "$dir/b/"
(cd $root && tar cf - --exclude=work --exclude=out --exclude=__pycache__ training) | tar xf - -C "$dir/b"
cp -r "$dir/b/training" "$dir/a/"
if [ -f $root/training/work/data/train.u16 ]; then
  rm -rf "$dir/c" && mkdir -p "$dir/c/stage/work/data" "$dir/c/stage/out" && cp -r "$dir/b/training" "$dir/c/"
  head -c $(( ${TRAIN_MB:-60} * 1000000 / 2 * 2 )) $root/training/work/data/train.u16 > "$dir/c/stage/work/data/train.u16"
  cp $root/training/work/data/{valid,test}.*.u16 "$dir/c/stage/work/data/"
  cp $root/training/out/laya-default.vocab.txt "$dir/c/stage/out/"
  (cd "$dir/c/stage" && tar cf - work out | xz -T2 -6 > ../data.tar.xz) && rm -rf "$dir/c/stage"
fi
du -sh "$dir"/*
