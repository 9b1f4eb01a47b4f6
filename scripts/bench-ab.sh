#!/usr/bin/env bash
# bench-ab.sh compares two revisions on a benchmark, running them in
# alternation, and prints benchstat's comparison of every metric.
#
#   scripts/bench-ab.sh [-n PAIRS] [-b BENCH] [-t BENCHTIME] [-p PKG] OLD [NEW]
#
# OLD and NEW are git revisions; NEW defaults to the working tree, as it is.
# Each is built once as a test binary (OLD in a temporary worktree), then the
# two run in turns, PAIRS times, each run from its own tree's package
# directory. Alternating matters on a shared machine, whose speed moves by
# 10-15% from one hour to the next: a run of one revision after all runs of
# the other compares two hours as much as two revisions.
#
# Defaults: 5 pairs of `TurnPath/sqlite/paced500$` at 4000x in ./cmd/praetor/.
# The raw outputs stay in a directory printed at the end. benchstat is taken
# from PATH, else run with `go run` from the module proxy.
#
# Examples:
#   scripts/bench-ab.sh HEAD~3
#   scripts/bench-ab.sh -n 8 -b 'CanonicalJSON' -t 1s -p ./internal/engine/ main~1 main
set -euo pipefail

pairs=5 bench='TurnPath/sqlite/paced500$' benchtime=4000x pkg=./cmd/praetor/
benchstat_module=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
log() { printf 'bench-ab.sh: %s\n' "$*" >&2; }

while getopts 'n:b:t:p:h' opt; do
	case $opt in
	n) pairs=$OPTARG ;;
	b) bench=$OPTARG ;;
	t) benchtime=$OPTARG ;;
	p) pkg=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 && $# -le 2 ]] || usage
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { log "-n $pairs: want a positive number of pairs"; exit 2; }

root=$(git rev-parse --show-toplevel)
old_rev=$(git -C "$root" rev-parse --verify --quiet "$1^{commit}") || { log "$1 is not a revision of $root"; exit 2; }
new_rev=
if [[ $# -eq 2 ]]; then
	new_rev=$(git -C "$root" rev-parse --verify --quiet "$2^{commit}") || { log "$2 is not a revision of $root"; exit 2; }
fi

out=$(mktemp -d /tmp/bench-ab.XXXXXX)
trees=()
cleanup() {
	for t in "${trees[@]}"; do git -C "$root" worktree remove --force "$t" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

# tree REV NAME sets $dir to the directory of REV's tree: a new worktree,
# or the working tree itself for an empty REV.
tree() {
	if [[ -z $1 ]]; then
		dir=$root
		return
	fi
	dir=$out/$2-tree
	git -C "$root" worktree add --detach "$dir" "$1" >/dev/null 2>&1
	trees+=("$dir")
}

tree "$old_rev" old
old_tree=$dir
tree "$new_rev" new
new_tree=$dir
for side in old new; do
	dir=${side}_tree
	log "building $side ($(git -C "${!dir}" rev-parse --short HEAD)$([[ $side == new && -z $new_rev ]] && echo ', working tree'))"
	(cd "${!dir}" && go test -c -o "$out/$side.test" "$pkg")
done

for i in $(seq 1 "$pairs"); do
	for side in old new; do
		dir=${side}_tree
		log "pair $i/$pairs: $side"
		# The benchmark's lines go to the file; its logs too, where
		# benchstat skips them. Not the testing package's "testing: X left
		# GOMAXPROCS set to N" (benchmarks before 1403b26 printed it):
		# benchstat would read it as a configuration and split the runs.
		(cd "${!dir}/$pkg" && "$out/$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" \
			-test.count 1) >"$out/run.txt" 2>&1 || { cat "$out/run.txt" >>"$out/$side.txt"; log "$side failed; see $out/$side.txt"; exit 1; }
		grep -v '^testing: .* left GOMAXPROCS set to' "$out/run.txt" >>"$out/$side.txt" || true
	done
done

cd "$out"
if command -v benchstat >/dev/null; then
	benchstat old.txt new.txt
else
	go run "$benchstat_module" old.txt new.txt
fi
log "raw outputs in $out"
