#!/usr/bin/env bash
# Install the Debian packages the studies need, only those missing (a no-op re-run takes milliseconds).
set -euo pipefail
# fonts-wqy-microhei (5 MB): a CJK font, so the originals' Chinese words print as words, not boxes
# openssh-client: server CPU over ssh:// on a DBA's host; openssh-server and the two Prometheus exporters: what the
# tests start on loopback to check those CPU sources against /proc (never started as services: see policy-rc.d)
# poppler-utils: pdftotext, with which the README's test reads back what a printed report holds
packages=(mariadb-server mariadb-client sysbench nginx apache2-utils wrk openssl ca-certificates chromium fonts-wqy-microhei linux-perf unzip maven strace gcc libc6-dev openssh-client openssh-server prometheus-node-exporter prometheus-process-exporter poppler-utils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The venv module is part of Debian's python, split out; only needed when python3 lacks it.
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "error: apt-get is not available. Install these packages with your package manager: ${missing[*]}" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "error: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
# Debian's postinst would start services (sshd on port 22, the exporters); we start our own private instances
# instead, so invoke-rc.d is told no while the packages install (only when no policy of the machine's is there).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
  "${sudo[@]}" chmod 755 /usr/sbin/policy-rc.d
  trap '"${sudo[@]}" rm -f /usr/sbin/policy-rc.d' EXIT
fi
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
