#!/bin/sh
# Installs the named Debian packages whose programs are missing. Each argument is a package, or
# package:program where the program's name or path differs from the package's.
# Needs root or sudo; says what to install by hand otherwise. Services the packages bring are not
# started (the tests start their own, on ports of their own).
set -eu
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
missing=""
for arg in "$@"; do
  pkg=${arg%%:*}
  prog=${arg#*:}
  if [ "${prog#/}" != "$prog" ]; then [ -x "$prog" ] && continue; else command -v "$prog" >/dev/null 2>&1 && continue; fi
  missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
echo "installing Debian packages:$missing" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
  echo "missing:$missing; install them (apt-get install$missing) or run make test as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# No service of these packages starts on install (invoke-rc.d asks policy-rc.d; 101: not allowed).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  # Removed however the install ends, so that the host's own services start again afterwards.
  trap '$sudo rm -f "$policy"' EXIT INT TERM
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
fi
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq $missing >/dev/null
