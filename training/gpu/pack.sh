#!/usr/bin/env bash
# Fills DIR (default .dev/train, which git ignores) with what run.sh needs on
# the GPU machine (copy DIR there):
#   DIR/code/training   this package, code only (every step on the GPU machine needs it)
#   DIR/p1 .. DIR/pN    the token streams (xz) and the vocabulary in one tar, cut
#                       into parts of PART_MB megabytes (default 42, small
#                       enough for any upload); the last part holds SHA256SUMS
# VOCAB: the vocabulary the streams were encoded with (default training/out's).
# DATA: the folder of the streams (default training/work/data; `encode --focus`
# writes another).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/.dev/train}
vocab=${VOCAB:-$root/training/out/laya-default.vocab.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/payload"
for f in "${DATA:-$root/training/work/data}"/*.u16; do xz -T2 -6 -c "$f" > "$work/payload/$(basename "$f").xz"; done
cp "$vocab" "$work/payload/vocab.txt"
tar cf "$work/payload.tar" -C "$work" payload
rm -rf "$dir" && mkdir -p "$dir/code"
(cd "$root" && tar cf - --exclude=work --exclude=out --exclude=__pycache__ training) | tar xf - -C "$dir/code"
split -b $(( ${PART_MB:-42} * 1000000 )) -d -a 1 "$work/payload.tar" "$work/part."
n=0
for part in "$work"/part.*; do n=$((n + 1)); mkdir "$dir/p$n"; mv "$part" "$dir/p$n/"; done
(cd "$work" && sha256sum payload.tar) > "$dir/p$n/SHA256SUMS"
du -sh "$dir"/*
