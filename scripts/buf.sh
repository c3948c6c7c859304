#!/usr/bin/env bash
# buf lint (STANDARD rules, exceptions with reasons in buf.yaml) and buf
# breaking of tether.v1, and of tether.internal.v1 (the --state-dir record:
# a server reads the files an earlier one wrote), against the committed
# baseline image proto/baseline/tether-v1.binpb. No network: the buf CLI
# is installed once from npm by `scripts/install-deps.sh --buf` (pinned
# version, into ~/.cache/tether-buf); BUF=/path/to/buf overrides.
#
# After a deliberate, compatible API change (a new field, a new RPC),
# refresh the baseline: scripts/buf.sh --update-baseline, and commit it.
# Exit 77 when buf is not installed (ctest reports the test as skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
BUF="${BUF:-$HOME/.cache/tether-buf/node_modules/.bin/buf}"
if [[ ! -x "$BUF" ]]; then
  echo "buf.sh: no buf CLI at $BUF (scripts/install-deps.sh --buf installs it)" >&2
  exit 77
fi
if [[ "${1:-}" == "--update-baseline" ]]; then
  "$BUF" build --exclude-source-info -o proto/baseline/tether-v1.binpb
  echo "buf.sh: wrote proto/baseline/tether-v1.binpb"
  exit 0
fi
"$BUF" lint
"$BUF" breaking --against proto/baseline/tether-v1.binpb
echo "buf.sh: lint and breaking passed ($("$BUF" --version))"
