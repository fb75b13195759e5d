#!/usr/bin/env bash
# Try Laya: build the host, then open Neovim with only Laya and the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
exec nvim --clean -u scripts/minimal_init.lua "$@"
