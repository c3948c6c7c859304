#!/usr/bin/env bash
# Generates the Python protobuf and gRPC modules for proto/tether/v1 into
# client/python/tether_client/tether/v1/ (git-ignored). The tether_client
# package puts client/python/tether_client on sys.path, so the generated
# modules' own imports ("from tether.v1 import simulation_pb2") resolve.
#
# Uses Debian's protoc (3.21) with Debian's grpc_python_plugin: the protoc
# bundled in Debian 12's python3-grpc-tools (1.14) predates proto3
# `optional`, which simulator.proto uses, so `python3 -m grpc_tools.protoc`
# is only the fallback when /usr/bin/protoc is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/tether_client"
protos=("$root/proto/tether/v1/simulation.proto" "$root/proto/tether/v1/simulator.proto")

# Generate into a scratch folder and move it into place, so a concurrent
# importer never sees a half-written package.
tmp="$(mktemp -d "$out/.gen.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

protoc_bin="${PROTOC:-$(command -v protoc || true)}"
plugin="${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || true)}"
if [[ -n "$protoc_bin" && -n "$plugin" ]]; then
  "$protoc_bin" -I "$root/proto" --python_out="$tmp" --grpc_python_out="$tmp" \
    --plugin=protoc-gen-grpc_python="$plugin" "${protos[@]}"
else
  /usr/bin/python3 -m grpc_tools.protoc -I "$root/proto" \
    --python_out="$tmp" --grpc_python_out="$tmp" "${protos[@]}"
fi
rm -f "$tmp"/tether/v1/simulation_pb2_grpc.py  # no services in it

rm -rf "$out/tether.old"
if [[ -d "$out/tether" ]]; then mv "$out/tether" "$out/tether.old"; fi
mv "$tmp/tether" "$out/tether"
rm -rf "$out/tether.old"
echo "generated $(cd "$out" && ls tether/v1/*.py | tr '\n' ' ')"
