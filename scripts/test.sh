#!/usr/bin/env bash
# Runs every test: the Rust host and engine (unit tests and integration tests
# that drive a real headless Neovim), then the training pipeline's tests.
# Needs nvim >= 0.10 and Python MLX: scripts/install-test-deps.sh puts both in ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d .venv/bin ]; then export PATH="$PWD/.venv/bin:$PATH"; fi
cargo test --release
# The MLX backend's parity test, against the real MLX library (build.rs finds
# it through python3), whenever Python MLX is importable.
if python3 -c 'import mlx.core' 2>/dev/null; then
  cargo test --release --features mlx --test mlx_parity
fi
python3 -m unittest discover -s training/tests -t . -v
