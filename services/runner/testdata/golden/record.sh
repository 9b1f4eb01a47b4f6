#!/usr/bin/env bash
# Records golden sessions through the real path: praetor dev (offline
# provider), praetor chat, then praetor replay --stream of each session's
# events. See golden_test.go for when a recording may be added or replaced.
#
#   go build -o /tmp/praetor ./cmd/praetor
#   cd services/runner/testdata/golden && ./record.sh /tmp/praetor chats/handoff.txt ...
#
# Each chat file's first line is "# engine: ID"; the rest are the user's
# messages. A chat that stays in one session writes NAME.jsonl.gz beside
# this script, one that follows a handoff NAME-ENGINE.jsonl.gz for each
# session. PREFIX (env) is put before each name: PREFIX=v1- for a recording
# made by an older build.
set -euo pipefail
bin=$(realpath "$1"); shift
chats=()
for chat in "$@"; do chats+=("$(realpath "$chat")"); done
set -- "${chats[@]}"
cd "$(dirname "$0")"
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" dev --data-dir "$data" --http-addr "127.0.0.1:$port" --nats-listen '' --llm-provider offline \
	--llm-omit-prompts >"$data/dev.log" 2>&1 &
dev=$!
trap 'kill $dev 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
	kill -0 $dev || { cat "$data/dev.log"; exit 1; }
	sleep 0.2
done
declare -A sessions
for chat in "$@"; do
	engine=$(sed -n '1s/^# engine: //p' "$chat")
	sessions[$chat]=$(grep -v '^#' "$chat" | "$bin" chat --url "http://127.0.0.1:$port" --engine "$engine" |
		sed -n 's/^\(session\|continuing in session\) \([0-9a-f-]*\) with \([a-z-]*\).*/\2 \3/p')
done
kill -TERM $dev
wait $dev || true
for chat in "$@"; do
	name=${PREFIX:-}$(basename "$chat" .txt)
	n=$(wc -l <<<"${sessions[$chat]}")
	while read -r sid engine; do
		out=$name.jsonl.gz
		[ "$n" -gt 1 ] && out=$name-$engine.jsonl.gz
		{
			"$bin" replay --data-dir "$data" --stream PRAETOR_TURNS --subject "praetor.turn.*.*.$sid.*"
			"$bin" replay --data-dir "$data" --stream PRAETOR_LLM --subject "praetor.llm.call.*.$sid"
		} 2>/dev/null | gzip -9 -n >"$out"
		echo "$out: session $sid ($engine)"
	done <<<"${sessions[$chat]}"
done
rm -rf "$data"
