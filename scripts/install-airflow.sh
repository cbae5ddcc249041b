#!/usr/bin/env bash
# Apache Airflow in a virtualenv of its own (about 200 MB; kept apart from the project's), in the cache shared by
# every checkout: the test that loads docs/recipes/secoverhead_nightly.py with Airflow itself needs it, nothing
# else does. Reused when present; uv when the project's venv has it (seconds), pip otherwise.
set -euo pipefail
version="${AIRFLOW_VERSION:-3.3.2}"
cache="${SECOVERHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/secoverhead}"
root="$cache/airflow-$version"
if [ -x "$root/bin/python" ] && "$root/bin/python" -c "import airflow" 2>/dev/null; then
  exit 0
fi
echo "installing Apache Airflow $version into $root (the Airflow recipe's test)"
rm -rf "$root.tmp"
uv="$(dirname "$0")/../.venv/bin/uv"
if [ -x "$uv" ]; then
  "$uv" venv -q --python python3 "$root.tmp"
  "$uv" pip install -q --python "$root.tmp/bin/python" "apache-airflow==$version"
else
  python3 -m venv "$root.tmp"
  "$root.tmp/bin/pip" install -q --disable-pip-version-check "apache-airflow==$version"
fi
rm -rf "$root" && mv "$root.tmp" "$root"
