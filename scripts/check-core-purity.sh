#!/usr/bin/env bash
# Fails when src/core reaches outside itself: includes of other layers, or of headers that do
# I/O, threads or clock reads. The core's inputs come in as arguments.
set -euo pipefail
dir=${1:-src/core}
bad=$(grep -nE '#include\s*[<"](api|store|server|agent|cli|sim|net|interpose)/|#include\s*<(thread|mutex|chrono|fstream|iostream|cstdio|filesystem|future|condition_variable|random|ctime|sys/|unistd\.h)' "$dir"/*.h "$dir"/*.cc || true)
if [ -n "$bad" ]; then
  echo "src/core must stay pure; offending includes:"
  echo "$bad"
  exit 1
fi
echo "src/core is pure: $(ls "$dir"/*.h "$dir"/*.cc | wc -l) files checked"
