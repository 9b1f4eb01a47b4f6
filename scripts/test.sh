#!/usr/bin/env bash
# test.sh runs the whole test suite with the race detector against real
# servers. Servers not given in the environment are started here when this
# machine can (Debian, root): PostgreSQL (scripts/postgres.sh) and Neo4j
# (scripts/neo4j.sh). Without them the suites that need them skip, naming the
# variable to set; with PRAETOR_REQUIRE_SERVICES=1 (CI) a missing server fails.
set -uo pipefail
cd "$(dirname "$0")/.."

required() { [ "${PRAETOR_REQUIRE_SERVICES:-}" = "1" ]; }

bring_up() { # name script
  local name=$1 script=$2 exports
  if exports=$("$script"); then
    eval "$exports"
  elif required; then
    echo "test.sh: $name could not be started and PRAETOR_REQUIRE_SERVICES=1" >&2
    exit 1
  else
    echo "test.sh: $name not available; its tests will skip" >&2
  fi
}

[ -n "${DATABASE_URL:-}" ] || bring_up PostgreSQL scripts/postgres.sh
if [ -x scripts/neo4j.sh ] && [ -z "${NEO4J_URI:-}" ]; then
  bring_up Neo4j scripts/neo4j.sh
fi

echo "test.sh: DATABASE_URL=${DATABASE_URL:+set} NEO4J_URI=${NEO4J_URI:-unset} PRAETOR_REQUIRE_SERVICES=${PRAETOR_REQUIRE_SERVICES:-0}" >&2
exec go test -race -count=1 -timeout 30m "$@" ./...
