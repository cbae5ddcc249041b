# Sourced by the tool builds (build-iodelay.sh, build-gosign.sh): the cached path of a tool built from one source
# file, named by the source's hash so a changed source is rebuilt (paths.built_tool reads the same path).
# Usage: tool_path SOURCE NAME -> prints $cache/<source's folder>-<hash>/NAME
tool_path() {
  local cache hash
  cache="${SECOVERHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/secoverhead}"
  hash=$(sha256sum "$1" | cut -c1-12)
  echo "$cache/$(basename "$(dirname "$1")")-$hash/$2"
}
