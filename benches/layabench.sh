#!/usr/bin/env bash
# End-to-end benchmark: runs :LayaBench in a real headless Neovim with the
# real host several times (and, with --seed, the seed-style Python MLX
# baseline right after each run), then prints one table for BENCHMARKS.md.
#
#   benches/layabench.sh [--runs 3] [--keys 2000] [--rate 10] [--backend cpu]
#                  [--model models/laya-default.safetensors] [--seed PYTHON]
#                  [--out DIR] [--no-build] [--host-arg ARG]...
# --host-arg: one more argument for `laya serve` (repeatable), e.g.
# --host-arg --no-next-keys for an A/B run (`laya serve --help` lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 keys=2000 rate=10 backend=cpu model="models/laya-default.safetensors"
seed_py="" out="" build=1 host_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --seed) seed_py=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --host-arg) host_args="$host_args'$2', "; shift 2 ;;
    *) echo "layabench.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
out=${out:-$(mktemp -d /tmp/laya-layabench.XXXXXX)}
mkdir -p "$out"
model=$(realpath "$model")
[ "$build" = 1 ] && cargo build --release >&2
nvim=$(command -v nvim || true)
[ -z "$nvim" ] && [ -x .venv/bin/nvim ] && nvim=.venv/bin/nvim
[ -z "$nvim" ] && { echo "layabench.sh: nvim not found (scripts/install-test-deps.sh)" >&2; exit 1; }
host=$PWD/target/release/laya
seed=${LAYA_SEED_SCRIPT:-benches/seed_mlx.py}
for i in $(seq 1 "$runs"); do
  echo "run $i/$runs: LayaBench keys=$keys rate=$rate backend=$backend" >&2
  XDG_STATE_HOME="$out/state" "$nvim" --headless --clean -u scripts/minimal_init.lua \
    -c "lua require('laya').setup({ host = { path = '$host', model = '$model', backend = '$backend', args = { $host_args } } })" \
    -c "LayaBench $out/e2e-$i.json keys=$keys rate=$rate" -c "qa!" >&2
  if [ -n "$seed_py" ]; then
    [ -f "$seed" ] || { echo "layabench.sh: $seed not found (it comes with the MLX backend)" >&2; exit 1; }
    echo "run $i/$runs: seed-style Python MLX baseline (CPU)" >&2
    "$seed_py" "$seed" "$model" --cpu --steps 3000 --json "$out/seed-$i.json" >&2
  fi
done
python3 benches/layabench_table.py "$out"
