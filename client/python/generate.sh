#!/usr/bin/env bash
# Generates the Python protobuf and gRPC modules of the client's private
# subpackage, src/tether_client/_proto/, from the repository's proto/ files:
#   tether/v1 (the service), google/rpc (status and error details, which
#   Debian 12 ships no Python module of) and grpc/health/v1.
# The modules are committed, so `pip install ./client/python` needs no protoc;
# tests/python_package_test.py regenerates them into a scratch folder and
# fails when they differ from what is committed (run this script then).
#
#   client/python/generate.sh            rewrite src/tether_client/_proto
#   client/python/generate.sh --into D   write the modules into D instead
#
# protoc writes absolute imports ("from tether.v1 import simulation_pb2"),
# which would make the generated code importable only with its output root
# on sys.path, as top-level packages that shadow any other "tether" or
# "grpc.health". They are rewritten to the private package
# ("from tether_client._proto.tether.v1 import ..."); google.protobuf stays.
# Uses Debian's protoc (3.21, which knows proto3 `optional`) and Debian's
# grpc_python_plugin; `python3 -m grpc_tools.protoc` of python3-grpc-tools
# (protoc 3.12 inside) cannot compile simulator.proto.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/src/tether_client/_proto"
if [[ "${1:-}" == "--into" && -n "${2:-}" ]]; then
  out="$2"
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--into DIR]" >&2
  exit 2
fi
protoc_bin="${PROTOC:-$(command -v protoc || true)}"
plugin="${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || true)}"
if [[ -z "$protoc_bin" || -z "$plugin" ]]; then
  echo "generate.sh: needs protoc and grpc_python_plugin (Debian:" \
    "protobuf-compiler, protobuf-compiler-grpc)" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$root/proto"
messages=(tether/v1/simulation.proto tether/v1/ensemble.proto tether/v1/simulator.proto
          google/rpc/status.proto google/rpc/error_details.proto
          grpc/health/v1/health.proto)
services=(tether/v1/simulator.proto grpc/health/v1/health.proto)
"$protoc_bin" -I . --python_out="$tmp" --pyi_out="$tmp" "${messages[@]}"
"$protoc_bin" -I . --grpc_python_out="$tmp" \
  --plugin=protoc-gen-grpc_python="$plugin" "${services[@]}"

# Packages, and the imports of the private root.
find "$tmp" -type d -exec sh -c 'for d; do : > "$d/__init__.py"; done' _ {} +
cat > "$tmp/__init__.py" <<'PY'
"""Generated protobuf and gRPC modules (client/python/generate.sh); private:
use tether_client.pb and the client's API instead."""
PY
find "$tmp" -name '*.py' -o -name '*.pyi' | while read -r f; do
  sed -i -E \
    -e 's/^from (tether\.v1|google\.rpc|grpc\.health\.v1) import/from tether_client._proto.\1 import/' \
    -e 's/^import (tether\.v1|google\.rpc|grpc\.health\.v1)\.([a-z_0-9]+)( as .*)?$/from tether_client._proto.\1 import \2\3/' \
    "$f"
done
# Nothing of the old tree survives a proto that was removed.
rm -rf "$out.new"
mkdir -p "$(dirname "$out")"
cp -r "$tmp" "$out.new"
rm -rf "$out"
mv "$out.new" "$out"
