#!/usr/bin/env bash
# Makes sure `ip` is there: the chaos suite (test/chaos) creates the bridge of its
# own Docker daemon with it. Installs Debian's iproute2 when missing.
set -euo pipefail
command -v ip >/dev/null 2>&1 && exit 0
echo "installing Debian's iproute2" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -o Acquire::Retries=3 update -qq
apt-get -o Acquire::Retries=3 install -y -qq iproute2 >/dev/null
