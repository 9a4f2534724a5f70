#!/bin/sh
# Installs the named Debian packages whose programs are missing (command name = package name).
# Needs root or sudo; says what to install by hand otherwise.
set -eu
missing=""
for pkg in "$@"; do
  command -v "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
echo "installing Debian packages:$missing" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
  echo "missing:$missing; install them (apt-get install$missing) or run make test as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq $missing >/dev/null
