#!/usr/bin/env bash
# Runs every test: the Rust host and engine (unit tests and integration tests
# that drive a real headless Neovim), then the training pipeline's tests.
# Needs nvim >= 0.10 and Python MLX: scripts/install-test-deps.sh puts both in ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d .venv/bin ]; then export PATH="$PWD/.venv/bin:$PATH"; fi
cargo test --release
python3 -m unittest discover -s training/tests -t . -v
