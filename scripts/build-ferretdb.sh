#!/usr/bin/env bash
# Build FerretDB (MongoDB wire protocol, SQLite backend) from the Go module proxy into a cache dir.
# `go install …@version` is refused by the proxy here, so: download the module, add the generated
# version file the binary needs at start-up, and build it. Reused when the binary already exists.
set -euo pipefail
version="${FERRETDB_VERSION:-v1.24.0}"
cache="${SECOVERHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/secoverhead}"
out="$cache/ferretdb-$version/ferretdb"
if [ -n "${SECOVERHEAD_FERRETDB:-}" ]; then out=$SECOVERHEAD_FERRETDB; fi
if [ -x "$out" ] && "$out" --version >/dev/null 2>&1; then
  echo "ferretdb $version: cached at $out"
  exit 0
fi
need="FerretDB $version needs Go >= 1.22 to build (Debian 12's golang-go is 1.19). Install a newer Go, or set
SECOVERHEAD_FERRETDB to a FerretDB binary, or point the MongoDB studies at your own MongoDB."
command -v go >/dev/null || { echo "error: Go not found. $need" >&2; exit 1; }
minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
[ "${minor:-0}" -ge 22 ] 2>/dev/null || { echo "error: $(go env GOVERSION) is too old. $need" >&2; exit 1; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
go mod init scratch >/dev/null 2>&1
dir=$(go mod download -json "github.com/FerretDB/FerretDB@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
cp -r "$dir" src
chmod -R u+w src
echo "$version" > src/build/version/version.txt
cd src
echo "building ferretdb $version (takes a few minutes the first time)"
mkdir -p "$(dirname "$out")"
go build -trimpath -o "$out.tmp" ./cmd/ferretdb
mv "$out.tmp" "$out"
echo "ferretdb $version: built at $out"
