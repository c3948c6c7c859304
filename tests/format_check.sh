#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format makes of it.
#   tests/format_check.sh CLANG_FORMAT SOURCE_DIR
# To fix: git ls-files '*.cc' '*.h' | xargs clang-format -i
set -euo pipefail
CLANG_FORMAT=$1
cd "$2"
mapfile -t files < <(git ls-files '*.cc' '*.h')
bad=0
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=1
  fi
done
if [[ $bad -ne 0 ]]; then
  echo "format_check: run: git ls-files '*.cc' '*.h' | xargs $CLANG_FORMAT -i"
  exit 1
fi
echo "format_check: ${#files[@]} files formatted"
