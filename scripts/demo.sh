#!/usr/bin/env bash
# ridge's main job on a fresh machine: build, convert the tiny real model from
# ../shared to GGUF, inspect it, and generate a story, streamed, followed by
# its TTFT, TPOT, E2E, throughput and KV-cache figures.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build --target ridge  # the binary alone: the tests are scripts/test.sh's
shared=${RIDGE_SHARED_DIR:-../shared}
mkdir -p models
build/ridge convert --checkpoint "$shared/models/stories260K.bin" --tokenizer "$shared/models/tok512.bin" -o models/stories260K.gguf
build/ridge inspect models/stories260K.gguf
build/ridge run -m models/stories260K.gguf -p "Once upon a time" -n 200 --temp 0.8 --seed 42 --verbose
