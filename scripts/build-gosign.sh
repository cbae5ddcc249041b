#!/usr/bin/env bash
# Build gosign (tools/gosign/main.go: Go's RSA-2048 signing time, the component seed 003's Go service spent its
# handshakes in) into the cache shared by every checkout, named by the source's hash. Without Go the HTTPS study's
# model predicts with OpenSSL's signature alone and says so.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/scripts/tool-cache.sh"
src="$here/tools/gosign/main.go"
bin=$(tool_path "$src" gosign)
if [ -x "$bin" ]; then
  echo "gosign: cached at $bin"
  exit 0
fi
command -v go >/dev/null || { echo "note: Go not found; Go's signing time will be missing" >&2; exit 0; }
mkdir -p "$(dirname "$bin")"
(cd "$(dirname "$src")" && GO111MODULE=off GOFLAGS= go build -trimpath -o "$bin.tmp" main.go)
mv "$bin.tmp" "$bin"
echo "gosign: built at $bin"
