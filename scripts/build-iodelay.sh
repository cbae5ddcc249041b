#!/usr/bin/env bash
# Build iodelay (tools/iodelay/iodelay.c: a storage latency under an emulated TDE instance's data files) into the
# cache shared by every checkout, named by the source's hash so a changed source is rebuilt. Without a C compiler
# the TDE study says its instances have no device latency, and its latency-bound preconditions fail honestly.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/scripts/tool-cache.sh"
src="$here/tools/iodelay/iodelay.c"
lib=$(tool_path "$src" libiodelay.so)
if [ -f "$lib" ]; then
  echo "iodelay: cached at $lib"
  exit 0
fi
cc=$(command -v cc || command -v gcc || true)
if [ -z "$cc" ]; then
  echo "note: no C compiler; TDE's emulated device latency will be missing (install gcc to get it)" >&2
  exit 0
fi
mkdir -p "$(dirname "$lib")"
"$cc" -O2 -Wall -Wextra -Werror -shared -fPIC -o "$lib.tmp" "$src" -ldl
mv "$lib.tmp" "$lib"
echo "iodelay: built at $lib"
