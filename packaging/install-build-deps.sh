#!/usr/bin/env bash
# Installs the Debian 12 packages Vidgraph builds, tests and packages with (as root or through sudo).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $(cat "$here/debian-build-deps.txt") >/dev/null
echo "Build dependencies installed."
