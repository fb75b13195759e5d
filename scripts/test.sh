#!/usr/bin/env bash
# Runs every test: the Rust host and engine (unit tests and integration tests
# that drive a real headless Neovim), then the training pipeline's tests.
# First installs what they need (nvim >= 0.10, Python MLX) into ./.venv through
# scripts/install-test-deps.sh, which does nothing when they are there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
export PATH="$PWD/.venv/bin:$PATH"
cargo test --release
# The MLX backend's parity and startup self-check tests, against the real
# MLX library (build.rs finds it through python3), whenever Python MLX is
# importable.
if python3 -c 'import mlx.core' 2>/dev/null; then
  cargo test --release --features mlx --test mlx_parity --test mlx_selfcheck
fi
python3 -m unittest discover -s training/tests -t . -v
