#!/usr/bin/env bash
# The engine's layers point down (server/CMakeLists.txt, docs/ARCHITECTURE.md
# "Layers"): a file in engine/internal/LAYER/ may include only the headers of
# its own layer and the layers below it, and the public headers at or below
# it. Fails naming every include that points up, and a folder of
# engine/internal/ that is not a known layer.
#
#   tests/build_checks/engine_layers.sh SOURCE_DIR
set -euo pipefail
cd "$1/server/engine"

# Bottom to top; the rank of a layer is its position.
layers=(base mechanism expr model kkt integrate certificate io simulation)
declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done
# The public headers, each at the layer that may first use it: the status
# and the compile options are the base's contract, the list of integration
# methods integrate's, the export envelope, JSON and the wire walk are io's, Simulation,
# ensembles (and their lane kernels' names) and the KKT solution's partial
# derivatives are the top's.
declare -A public=([status.h]=base [compile_options.h]=base [mechanism.h]=mechanism [integration_methods.h]=integrate
                   [session_export.h]=io [spec_json.h]=io [wire_walk.h]=io [simulation.h]=simulation
                   [ensemble.h]=simulation [lane_kernel.h]=simulation [sensitivity.h]=simulation)

bad=0
for dir in internal/*/; do
  layer=$(basename "$dir")
  if [[ -z ${rank[$layer]+x} ]]; then
    echo "engine_layers: internal/$layer/ is not a layer (known: ${layers[*]})"
    bad=1
    continue
  fi
  for file in "$dir"*; do
    while IFS= read -r line; do
      target=$(sed -E 's/^#include "engine\/(.*)"$/\1/' <<<"$line")
      if [[ $target == internal/*/* ]]; then
        to=$(cut -d/ -f2 <<<"$target")
      else
        to=${public[$target]:-}
        if [[ -z $to ]]; then
          echo "engine_layers: $file includes engine/$target, which is not a public header"
          bad=1
          continue
        fi
      fi
      if [[ -z ${rank[$to]+x} ]] || ((rank[$to] > rank[$layer])); then
        echo "engine_layers: $file ($layer) includes engine/$target ($to): an include pointing up"
        bad=1
      fi
    done < <(grep -E '^#include "engine/' "$file" || true)
  done
done
# No file outside the layers' folders.
for f in internal/*; do
  if [[ -f $f ]]; then
    echo "engine_layers: $f is outside every layer's folder"
    bad=1
  fi
done
if ((bad)); then exit 1; fi
echo "engine_layers: every include of engine/internal/ points down (${layers[*]})"
