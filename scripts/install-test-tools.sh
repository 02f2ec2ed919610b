#!/usr/bin/env bash
# Installs the system tools the tests drive, if missing: psql and pgbench (Debian's PostgreSQL
# packages) and Chromium (the browser tests). `npm test` runs this first; so does CI. Without root
# or apt it installs nothing and stops with one line naming what to install.
set -euo pipefail

chromium="${REPOBASE_TEST_CHROMIUM:-/usr/bin/chromium}"
missing=()
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
command -v pgbench >/dev/null 2>&1 || missing+=(postgresql)
[ -x "$chromium" ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "npm test needs ${missing[*]} (psql, pgbench, $chromium): run 'sudo bash scripts/install-test-tools.sh' on Debian, or install them yourself" >&2
  exit 1
fi
