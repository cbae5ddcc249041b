#!/usr/bin/env bash
# Build inferno (the Rust port of Brendan Gregg's FlameGraph: collapse perf stacks, draw interactive SVG flame
# graphs and differential ones) from crates.io into the cache shared by every checkout. Reused when present.
# Without cargo the reports say that flame graphs were skipped; nothing else depends on it.
set -euo pipefail
version="${INFERNO_VERSION:-0.12.8}"
cache="${SECOVERHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/secoverhead}"
root="$cache/inferno-$version"
if [ -x "$root/bin/inferno-flamegraph" ] && [ -x "$root/bin/inferno-collapse-perf" ] && [ -x "$root/bin/inferno-diff-folded" ]; then
  echo "inferno $version: cached at $root"
  exit 0
fi
cargo=$(command -v cargo || true)
[ -z "$cargo" ] && [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"
if [ -z "$cargo" ]; then
  echo "note: cargo not found; flame graphs will be skipped (install Rust's cargo to get them)" >&2
  exit 0
fi
echo "building inferno $version (about a minute the first time)"
mkdir -p "$root"
"$cargo" install inferno --version "$version" --locked --root "$root.tmp" --quiet
rm -rf "$root" && mv "$root.tmp" "$root"
echo "inferno $version: built at $root"
