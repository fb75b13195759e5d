#!/usr/bin/env bash
# Prepares what the device calls carry (run.sh): the MLX CUDA and MLX wheels,
# the token streams (xz-compressed) and the vocabulary, in one tar cut into
# parts, one per call. A call carries at most 64 MiB together with the working
# tree (about 21 MB), so a part is at most 42 MB: carry1/ .. carryN/, the last
# one with the checksum.
set -euo pipefail
cd "$(dirname "$0")/../work"
W=wheels
[ -f $W/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl ] || python3 -m pip download -q --no-deps \
  --only-binary=:all: --python-version 3.12 --platform manylinux_2_35_x86_64 mlx-cuda-13==0.32.4 mlx==0.32.4 -d $W
rm -rf payload carry[0-9]* && mkdir payload
cp $W/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl $W/mlx-0.32.4-cp312-*.whl payload/
for f in train valid.prose valid.code test.prose test.code; do xz -T2 -6 -c data/$f.u16 > payload/$f.u16.xz; done
cp ../out/laya-default.vocab.txt payload/
tar cf payload.tar payload && rm -rf payload
split -b 42000000 -d -a 1 payload.tar payload.part.
n=0
for part in payload.part.*; do n=$((n + 1)); mkdir carry$n && mv "$part" carry$n/; done
sha256sum payload.tar > carry$n/SHA256SUMS && rm payload.tar
du -sh carry[0-9]*
