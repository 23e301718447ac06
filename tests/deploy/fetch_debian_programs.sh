#!/bin/sh
# Puts PROGRAMs of a Debian PACKAGE into DIR for the deployment tests: the
# installed ones if they all are, else those of the package downloaded with
# apt-get and unpacked once, not installed (installing prometheus or nginx
# would start a service; nothing outside DIR changes). Needs the apt lists
# scripts/setup.sh fetched; without network this fails, and so do the tests
# that need it.
# Usage: fetch_debian_programs.sh DIR PACKAGE PROGRAM...
set -eu
dir=$1 package=$2
shift 2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
installed=yes
for program in "$@"; do
  PATH="$PATH:/usr/sbin" command -v "$program" >/dev/null || installed=no
done
if [ $installed = yes ]; then
  for program in "$@"; do ln -sf "$(PATH="$PATH:/usr/sbin" command -v "$program")" "$dir/$program"; done
  exit 0
fi
if [ ! -f "$dir/root/.unpacked" ]; then
  cd "$dir"
  rm -rf "${package}"_*.deb root
  apt-get download "$package"
  dpkg-deb -x "${package}"_*.deb root
  rm -f "${package}"_*.deb
  touch root/.unpacked
fi
for program in "$@"; do
  for sub in usr/bin usr/sbin; do
    [ -x "$dir/root/$sub/$program" ] && ln -sf "$dir/root/$sub/$program" "$dir/$program"
  done
  [ -x "$dir/$program" ] || { echo "$package has no $program" >&2; exit 1; }
done
