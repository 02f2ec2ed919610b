#!/usr/bin/env bash
# Installs the system tools the tests drive, if missing: psql and pgbench (Debian's PostgreSQL
# packages), Chromium (the browser tests), pgjdbc with a Java runtime, and psycopg2, psycopg 3 and
# asyncpg for Debian's Python (drivers of the pooling tests) and Citus for Debian's PostgreSQL 15 (the scale-out tests
# start a coordinator and workers from /usr/lib/postgresql/15/bin). `npm test` runs this
# first; so does CI. Without root or apt it installs nothing and stops with one line naming what
# to install.
set -euo pipefail
cd "$(dirname "$0")/.."

chromium="${REPOBASE_TEST_CHROMIUM:-/usr/bin/chromium}"
citus_bin="${REPOBASE_TEST_CITUS_BIN:-/usr/lib/postgresql/15/bin}"
# Citus 13.2 built for Debian's PostgreSQL 15, installed by the script its archive ships with: in
# a shared/citus folder beside the repository (or beside a folder above it), unless named.
citus_installer="${REPOBASE_CITUS_INSTALLER:-}"
if [ -z "$citus_installer" ]; then
  dir="$PWD"
  while [ "$dir" != / ] && [ -z "$citus_installer" ]; do
    [ -f "$dir/../shared/citus/install.sh" ] && citus_installer="$dir/../shared/citus/install.sh"
    dir=$(dirname "$dir")
  done
  citus_installer="${citus_installer:-../shared/citus/install.sh}"
fi

missing=()
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
command -v pgbench >/dev/null 2>&1 || missing+=(postgresql)
[ -x "$chromium" ] || missing+=(chromium)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
[ -f "${REPOBASE_TEST_JDBC_JAR:-/usr/share/java/postgresql.jar}" ] || missing+=(libpostgresql-jdbc-java)
python="${REPOBASE_TEST_PYTHON:-/usr/bin/python3}"
"$python" -c 'import psycopg2' >/dev/null 2>&1 || missing+=(python3-psycopg2)
"$python" -c 'import psycopg' >/dev/null 2>&1 || missing+=(python3-psycopg)
"$python" -c 'import asyncpg' >/dev/null 2>&1 || missing+=(python3-asyncpg)
need_citus=0
[ -x "$citus_bin/postgres" ] && [ -f "$citus_bin/../lib/citus.so" ] || need_citus=1
[ ${#missing[@]} -eq 0 ] && [ $need_citus -eq 0 ] && exit 0

can_install=0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && can_install=1

if [ ${#missing[@]} -gt 0 ]; then
  if [ $can_install -eq 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "npm test needs ${missing[*]} (psql, pgbench, $chromium, java with pgjdbc, psycopg2, psycopg 3, asyncpg): run 'sudo bash scripts/install-test-tools.sh' on Debian, or install them yourself" >&2
    exit 1
  fi
fi

if [ $need_citus -eq 1 ]; then
  if [ $can_install -eq 1 ] && [ -f "$citus_installer" ]; then
    bash "$citus_installer"
  else
    echo "npm test needs Citus 13 in the PostgreSQL 15 of $citus_bin: run 'sudo bash scripts/install-test-tools.sh' with REPOBASE_CITUS_INSTALLER naming Citus' install script (default $citus_installer)" >&2
    exit 1
  fi
fi
