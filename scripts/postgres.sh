#!/usr/bin/env bash
# postgres.sh makes a PostgreSQL server reachable for Praetor's tests and prints
# the URL to use, so callers can write:
#
#   eval "$(scripts/postgres.sh)"
#
# Only the export line goes to stdout; everything else is logged on stderr.
#
#   - DATABASE_URL set and answering: nothing to do; the same URL is printed.
#   - DATABASE_URL set but not answering: exit 1 (a URL the caller chose is
#     never silently replaced by another server).
#   - DATABASE_URL unset: install PostgreSQL from Debian packages if missing,
#     start (or create) a cluster with pg_ctlcluster (no systemd needed), create
#     the role and database "praetor" with a password, and print their URL.
#
# It is idempotent: running it again finds the server, role and database it
# made and changes nothing. It needs root (apt-get, and running psql as the
# postgres user) on a Debian machine, as in CI (.ci/run) and the dev box.
#
# Settings (all optional):
#   PRAETOR_PG_USER      role to create          (default praetor)
#   PRAETOR_PG_PASSWORD  its password            (default praetor)
#   PRAETOR_PG_DB        database it owns        (default praetor)
#   PRAETOR_PG_HOST      host put in the URL     (default 127.0.0.1)
set -euo pipefail

# shell_quote prints its argument single-quoted for eval.
shell_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

log() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

role=${PRAETOR_PG_USER:-praetor}
password=${PRAETOR_PG_PASSWORD:-praetor}
dbname=${PRAETOR_PG_DB:-praetor}
host=${PRAETOR_PG_HOST:-127.0.0.1}

# reachable URL: true when a server answers at URL. psql proves the
# credentials too; without a client, pg_isready or a bare TCP probe is the best
# we can do.
reachable() {
	local url=$1
	if command -v psql >/dev/null 2>&1; then
		PGCONNECT_TIMEOUT=5 psql "$url" -Atqc 'SELECT 1' >/dev/null 2>&1
		return
	fi
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -t 5 -d "$url"
		return
	fi
	# postgres://user:pass@host:port/db?... -> host, port
	local rest=${url#*://}
	rest=${rest#*@}
	rest=${rest%%/*}
	rest=${rest%%\?*}
	local h=${rest%%:*} p=5432
	[[ $rest == *:* ]] && p=${rest##*:}
	timeout 5 bash -c "exec 3<>/dev/tcp/${h:-localhost}/${p}" 2>/dev/null
}

if [[ -n ${DATABASE_URL:-} ]]; then
	if reachable "$DATABASE_URL"; then
		log "DATABASE_URL is set and answers; nothing to do"
		printf 'export DATABASE_URL=%s\n' "$(shell_quote "$DATABASE_URL")"
		exit 0
	fi
	die "DATABASE_URL is set but no server answers there; fix it, or unset it to let this script start a local PostgreSQL"
fi

[[ $(id -u) -eq 0 ]] || die "run as root (it installs packages and runs psql as the postgres user)"

# pg_bin_dir: the bin directory of the newest installed PostgreSQL, if any.
pg_bin_dir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	[[ -n $d && -x $d/postgres ]] && printf '%s\n' "$d"
}

if [[ -z $(pg_bin_dir) ]] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
	log "installing PostgreSQL from Debian packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y --no-install-recommends postgresql >&2
fi
bindir=$(pg_bin_dir) || die "no PostgreSQL server under /usr/lib/postgresql after installing the postgresql package"
version=$(basename "$(dirname "$bindir")")

# Pick a cluster of that version: "main" if it exists, else the first one,
# else create "main". The package normally creates it; a machine where
# createcluster.conf disables that, or where it was dropped, needs it here.
cluster=$(pg_lsclusters -h 2>/dev/null | awk -v v="$version" '$1 == v { print $2 }' | head -n 1 || true)
if pg_lsclusters -h 2>/dev/null | awk -v v="$version" '$1 == v && $2 == "main" { found = 1 } END { exit !found }'; then
	cluster=main
fi
if [[ -z $cluster ]]; then
	cluster=main
	log "creating cluster $version/$cluster"
	pg_createcluster "$version" "$cluster" >&2
fi

# /run is a tmpfs on many machines: the socket directory may be gone after a
# restart, and the server will not start without it.
install -d -m 2775 -o postgres -g postgres /var/run/postgresql

status=$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { print $4 }')
port=$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { print $3 }')
if [[ $status != online ]]; then
	log "starting cluster $version/$cluster on port $port"
	# pg_ctlcluster runs pg_ctl as the cluster owner; without a running
	# systemd (containers, CI) it starts the server directly.
	pg_ctlcluster "$version" "$cluster" start >&2 ||
		die "cannot start cluster $version/$cluster; see /var/log/postgresql/postgresql-$version-$cluster.log"
fi

for _ in $(seq 1 60); do
	if "$bindir/pg_isready" -q -h /var/run/postgresql -p "$port"; then
		break
	fi
	sleep 0.5
done
"$bindir/pg_isready" -q -h /var/run/postgresql -p "$port" ||
	die "cluster $version/$cluster does not accept connections on port $port; see /var/log/postgresql/postgresql-$version-$cluster.log"

# as_postgres runs psql as the superuser over the local socket (peer auth).
as_postgres() {
	runuser -u postgres -- "$bindir/psql" -h /var/run/postgresql -p "$port" -X -v ON_ERROR_STOP=1 -Atq "$@"
}

# The role and database are created once; the password is set every time so a
# changed PRAETOR_PG_PASSWORD takes effect. psql variables (:'name') quote the
# values, so a password with quotes cannot break the statement.
as_postgres -d postgres -v role="$role" -v password="$password" >&2 <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \gexec
SELECT format('ALTER ROLE %I WITH LOGIN PASSWORD %L', :'role', :'password') \gexec
SQL
as_postgres -d postgres -v role="$role" -v dbname="$dbname" >&2 <<'SQL'
SELECT format('CREATE DATABASE %I OWNER %I', :'dbname', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'dbname') \gexec
SQL

urlencode() {
	local s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[a-zA-Z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

url="postgres://$(urlencode "$role"):$(urlencode "$password")@${host}:${port}/$(urlencode "$dbname")?sslmode=disable"
PGCONNECT_TIMEOUT=5 "$bindir/psql" "$url" -X -Atqc 'SELECT 1' >/dev/null ||
	die "the server runs but $role cannot log in over TCP at $host:$port; check pg_hba.conf of cluster $version/$cluster"

log "PostgreSQL $version/$cluster is ready at $host:$port, database $dbname"
printf 'export DATABASE_URL=%s\n' "$(shell_quote "$url")"
