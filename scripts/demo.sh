#!/usr/bin/env bash
# The main job: install what is missing, build, and simulate the seed's
# circle pendulum offline, printing its residual certificate.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
mkdir -p out
./build/bin/tether run examples/circle_pendulum.json --until 2 --every 100 \
  --output out/circle_pendulum.jsonl
echo "frames written to out/circle_pendulum.jsonl"
