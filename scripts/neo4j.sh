#!/usr/bin/env bash
# Runs a real Neo4j 5.26 LTS for tests and CI, from Maven Central artifacts on
# Java 17 (the launcher under test/neo4j), without Docker or a Neo4j install.
#
#   eval "$(scripts/neo4j.sh)"     build once, start in the background, wait
#                                  for Bolt, print the exports on stdout
#   scripts/neo4j.sh stop          stop it (SIGTERM, then SIGKILL after 30 s)
#   scripts/neo4j.sh status        exit 0 and print the exports when running
#   scripts/neo4j.sh build         only build the launcher
#
# stdout carries only the export lines; progress and errors go to stderr.
# Starting again while it runs just prints the exports. Every start begins
# with an empty database: tests isolate themselves by tenant, so nothing in
# it is worth keeping.
#
# Environment (defaults in brackets):
#   NEO4J_PORT [7687]             Bolt port on 127.0.0.1
#   NEO4J_HEAP [1g]               JVM heap
#   NEO4J_PAGECACHE [512m]        page cache
#   NEO4J_START_TIMEOUT [180]     seconds to wait for Bolt before giving up
#   PRAETOR_NEO4J_RUN [test/neo4j/run]  pid, logs and data
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
proj="$root/test/neo4j"
jar="$proj/target/neo4j-launcher.jar"
port="${NEO4J_PORT:-7687}"
heap="${NEO4J_HEAP:-1g}"
pagecache="${NEO4J_PAGECACHE:-512m}"
timeout="${NEO4J_START_TIMEOUT:-180}"
run="${PRAETOR_NEO4J_RUN:-$proj/run}"
pidfile="$run/neo4j-$port.pid"
ready="$run/neo4j-$port.ready"
log="$run/neo4j-$port.log"

say() { printf 'neo4j.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

exports() {
	printf 'export NEO4J_URI=bolt://127.0.0.1:%s\n' "$port"
	# Authentication is disabled; the driver still wants a user, any will do.
	printf 'export NEO4J_USER=neo4j\n'
	printf 'export NEO4J_PASSWORD=\n'
}

# bolt_answers succeeds when something accepts TCP connections on the port.
bolt_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

running_pid() {
	[[ -f $pidfile ]] || return 1
	local pid
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

build() {
	command -v java >/dev/null || die "java not found: install a Java 17 JDK (Debian: openjdk-17-jdk-headless)"
	command -v mvn >/dev/null || die "mvn not found: install Maven (Debian: maven)"
	local newest
	newest=$(find "$proj/pom.xml" "$proj/src" -type f -newer "$jar" 2>/dev/null | head -n1 || true)
	if [[ -f $jar && -d $proj/target/lib && -z $newest ]]; then
		return 0
	fi
	local t0=$SECONDS
	say "building the launcher (first time downloads Neo4j from Maven Central)"
	# Offline when the artifacts are already in the local repository; online
	# otherwise, or when the offline build misses something.
	if ! mvn -q -o -B -Dstyle.color=never -f "$proj/pom.xml" package >/dev/null 2>&1; then
		mvn -q -B -Dstyle.color=never -f "$proj/pom.xml" package >&2 || die "maven build of $proj failed (see above)"
	fi
	say "built in $((SECONDS - t0)) s"
}

start() {
	local pid
	if pid=$(running_pid) && [[ -f $ready ]]; then
		say "already running (pid $pid)"
		exports
		return 0
	fi
	if pid=$(running_pid); then
		say "pid $pid is starting; waiting for it"
	else
		if bolt_answers; then
			die "port $port is already in use by a process this script did not start; stop it or set NEO4J_PORT"
		fi
		build
		mkdir -p "$run"
		rm -rf "$run/home-$port" "$ready"
		say "starting Neo4j on 127.0.0.1:$port (log $log)"
		# setsid: the server outlives the shell that started it, and a
		# Ctrl-C in that shell does not reach it.
		setsid java "-Xmx$heap" "-Xms$heap" -XX:+UseG1GC \
			-jar "$jar" --port "$port" --home "$run/home-$port" --ready "$ready" \
			--conf "server.memory.pagecache.size=$pagecache" \
			</dev/null >"$log" 2>&1 &
		pid=$!
		echo "$pid" >"$pidfile"
	fi
	local t0=$SECONDS
	until [[ -f $ready ]] && bolt_answers; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 30 "$log" >&2 || true
			rm -f "$pidfile"
			die "Neo4j exited before Bolt answered; log: $log"
		fi
		if ((SECONDS - t0 >= timeout)); then
			tail -n 30 "$log" >&2 || true
			die "Bolt did not answer on 127.0.0.1:$port within ${timeout} s (pid $pid still running; 'scripts/neo4j.sh stop' ends it; raise NEO4J_START_TIMEOUT if the machine is slow)"
		fi
		sleep 0.2
	done
	say "ready on bolt://127.0.0.1:$port in $((SECONDS - t0)) s (pid $pid)"
	exports
}

stop() {
	local pid
	if ! pid=$(running_pid); then
		say "not running"
		rm -f "$pidfile" "$ready"
		return 0
	fi
	say "stopping pid $pid"
	kill -TERM "$pid" 2>/dev/null || true
	local t0=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS - t0 >= 30)); then
			say "pid $pid ignored SIGTERM for 30 s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$pidfile" "$ready"
	say "stopped"
}

status() {
	local pid
	if pid=$(running_pid) && [[ -f $ready ]] && bolt_answers; then
		say "running (pid $pid)"
		exports
		return 0
	fi
	say "not running"
	return 1
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) status ;;
build) build ;;
*) die "usage: scripts/neo4j.sh [start|stop|status|build]" ;;
esac
