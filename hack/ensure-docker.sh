#!/usr/bin/env bash
# Makes sure a Docker engine answers on the default socket: installs Debian's docker.io
# (and busybox-static, for the driver tests) when missing, and starts dockerd in the
# background when none runs.
# Note: there is no systemd on our machines, and a dockerd killed at the end of a
# session leaves a stale pid file that stops the next one from starting.
set -euo pipefail
# Note: the driver's contract suite builds its test image from busybox-static.
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
[ -x /bin/busybox ] || missing+=(busybox-static)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian's ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o Acquire::Retries=3 update -qq
  apt-get -o Acquire::Retries=3 install -y -qq "${missing[@]}" >/dev/null
fi
if docker version >/dev/null 2>&1; then exit 0; fi
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  rm -f /var/run/docker.pid
fi
if ! pgrep -x dockerd >/dev/null; then
  mkdir -p /var/log
  nohup dockerd >/var/log/dockerd.log 2>&1 &
fi
for _ in $(seq 1 60); do
  if docker version >/dev/null 2>&1; then exit 0; fi
  sleep 0.5
done
echo "dockerd did not answer within 30s; see /var/log/dockerd.log" >&2
tail -20 /var/log/dockerd.log >&2 || true
exit 1
