#!/usr/bin/env bash
# Prepares what the two device calls carry (run.sh): the MLX CUDA wheel cut in
# two, the token streams xz-compressed (the training stream cut in two), the
# vocabulary, and checksums. Each carry folder stays under the 64 MiB a call may
# carry together with the working tree.
set -euo pipefail
cd "$(dirname "$0")/../work"
W=wheels
[ -f $W/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl ] || python3 -m pip download -q --no-deps \
  --only-binary=:all: --python-version 3.12 --platform manylinux_2_35_x86_64 mlx-cuda-13==0.32.4 mlx==0.32.4 -d $W
rm -rf carry1 carry2 && mkdir carry1 carry2
(cd $W && sha256sum mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl > ../carry2/SHA256SUMS)
split -b 45000000 -d -a 1 $W/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl mlx-cuda.part.
mv mlx-cuda.part.0 carry1/ && mv mlx-cuda.part.1 carry2/
cp $W/mlx-0.32.4-cp312-*.whl carry2/
n=$(stat -c %s data/train.u16); half=$(( n / 4 * 2 ))
head -c $half data/train.u16 | xz -T2 -6 > carry1/train.u16.part.0.u16.xz
tail -c +$(( half + 1 )) data/train.u16 | xz -T2 -6 > carry2/train.u16.part.1.u16.xz
for f in valid.prose valid.code test.prose test.code; do xz -T2 -6 -c data/$f.u16 > carry2/$f.u16.xz; done
cp ../out/laya-default.vocab.txt carry2/
du -sh carry1 carry2
