#!/usr/bin/env bash
# cpu-ab.sh ROUNDS OUT MASTERS BASE CANDIDATE...: the client's CPU per
# Lock+Unlock of lockbench binaries, BASE (built from the base commit) and
# each CANDIDATE (built from its own tree), in ROUNDS interleaved rounds
# against the same masters, then benchstat of each against BASE.
#
#   ROUNDS     how many rounds: each runs every binary once (10 shows a
#              5% step; see docs/benchmarks.md)
#   OUT        a directory for each run's JSON and the benchstat inputs
#   MASTERS    comma-separated host:port of five masters started once
#              (make redis-up), so that every side meets the same servers
#   BASE, CANDIDATE
#              lockbench binaries, each built from its own tree:
#              (cd bench && go build -o /some/dir/NAME ./cmd/lockbench);
#              a copy of BASE as a candidate measures the method's noise
#
# Each run is one lockbench process: one round of the latency mode (one
# goroutine) and one of the throughput mode at the goroutine counts
# GOROUTINES names (default 64,256), each DURATION long (default 5s),
# Volley alone. CPU is the process's rusage
# (user + system) over the throughput window, divided by the operations in
# it. The order rotates from round to round, so that a drift of the
# machine falls on every side. LOCK, when set, is a file each run holds
# with flock(1), so that other measurements on the machine never overlap
# one of these. Needs jq and benchstat (go install
# golang.org/x/perf/cmd/benchstat@latest), or runs the Makefile's pinned
# benchstat with go run.
set -euo pipefail
if [ $# -lt 5 ]; then
	sed -n '2,24p' "$0" >&2
	exit 2
fi
rounds=$1 out=$2 masters=$3
shift 3
bins=("$@")
dur=${DURATION:-5s}
goroutines=${GOROUTINES:-64,256}
mkdir -p "$out"
names=()
for b in "${bins[@]}"; do
	n=$(basename "$b")
	names+=("$n")
	: >"$out/$n.txt"
done

run() { # name binary round
	local json="$out/$1-$3.json"
	local cmd=("$2" -masters "$masters" -mode latency,throughput -contenders volley
		-goroutines "$goroutines" -rounds 1 -duration "$dur" -json "$json")
	if [ -n "${LOCK:-}" ]; then
		flock "$LOCK" "${cmd[@]}" >/dev/null 2>"$out/$1-$3.err"
	else
		"${cmd[@]}" >/dev/null 2>"$out/$1-$3.err"
	fi
	# One line per figure in Go's benchmark format, for benchstat.
	jq -r '
		(.throughput[] | select(.name == "volley") |
			"BenchmarkLockUnlock/G=\(.goroutines) 1 \(.cost.cpu_us) cpu-us/op \(.ops_per_sec) ops/s \(.latency.p50_ms) p50-ms \(.latency.p99_ms) p99-ms \(.cost.io_calls) calls/op \(.errors) errors" +
				(if (.cost.client_per_master // -1) > 0 then " \(.cost.master_cpu_us) master-us/op \(.cost.client_per_master) client/master" else "" end)),
		(.latency[] | select(.name == "volley") |
			"BenchmarkLockUnlock/G=1 1 \(.p50_ms) p50-ms \(.p99_ms) p99-ms")
	' "$json" >>"$out/$1.txt"
}

# benchstat from PATH, else the Makefile's pinned version through go run.
if command -v benchstat >/dev/null; then
	BENCHSTAT=(benchstat)
else
	BENCHSTAT=(go run "$(sed -n 's/^BENCHSTAT *?= *//p' "$(dirname "$0")/../Makefile")")
fi
k=${#bins[@]}
for i in $(seq "$rounds"); do
	for j in $(seq 0 $((k - 1))); do
		x=$(((i + j) % k))
		run "${names[$x]}" "${bins[$x]}" "$i"
	done
	echo "cpu-ab: round $i of $rounds done" >&2
done
for n in "${names[@]:1}"; do
	"${BENCHSTAT[@]}" "${names[0]}=$out/${names[0]}.txt" "$n=$out/$n.txt" | tee "$out/benchstat-$n.txt"
done
