#!/usr/bin/env bash
# Installs what the web board's browser test needs: Debian's Chromium and
# its WebDriver (chromium, chromium-driver). Run as root or with sudo.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  echo "chromium and chromedriver are installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium chromium-driver
