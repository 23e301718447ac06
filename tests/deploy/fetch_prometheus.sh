#!/bin/sh
# Puts `prometheus` and `promtool` into DIR for the deployment tests: the
# installed ones if there are, else those of Debian's prometheus package,
# downloaded with apt-get (not installed: no service is started, nothing
# outside DIR changes) and unpacked once. Needs the apt lists scripts/setup.sh
# fetched; without network this fails, and so do the tests that need it.
# Usage: fetch_prometheus.sh DIR
set -eu
dir=$1
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
  ln -sf "$(command -v promtool)" "$dir/promtool"
  ln -sf "$(command -v prometheus)" "$dir/prometheus"
  exit 0
fi
if [ ! -x "$dir/root/usr/bin/promtool" ]; then
  cd "$dir"
  rm -rf prometheus_*.deb root
  apt-get download prometheus
  dpkg-deb -x prometheus_*.deb root
  rm -f prometheus_*.deb
fi
ln -sf "$dir/root/usr/bin/promtool" "$dir/promtool"
ln -sf "$dir/root/usr/bin/prometheus" "$dir/prometheus"
"$dir/promtool" --version | head -1
