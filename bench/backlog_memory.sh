#!/usr/bin/env bash
# backlog_memory.sh — does a worker give a drained backlog's memory back?
#
# Two runs of a standalone worker (examples/worker-fmnist.json: stream cap
# 4096, shuffle 1024) on the embedded broker, side by side in one go:
#
#   backlog: 12,000 Fashion-MNIST records wait in the topic when the worker
#            starts; it trains at most THROTTLE samples/s (400), so its
#            stream buffer fills to its cap and drains over about a minute
#            while a feed adds 100 samples/s for the whole run;
#   steady:  the same worker and feed without the backlog.
#
# Every 3 s it samples the worker's resident set (VmRSS) and the progress
# line's buffer occupancy, and prints per run: the RSS at 30 s (the backlog
# held), the largest, and the last (DURATION, 150 s, after the start: the
# backlog long drained), with the steady run's last as the floor a worker
# that gave everything back would reach.
#
#   bash bench/backlog_memory.sh          (after make; BUILD, DURATION, THROTTLE)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
S=${SCADLES:-$BUILD/scadles}
DUR=${DURATION:-150}
THROTTLE=${THROTTLE:-400}
[ -x "$S" ] || { echo "backlog_memory: $S not built (make)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scadles-bmem.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# run NAME BACKLOG: one run; writes $tmp/NAME.rss (t rss_kib buf).
run() {
	local name=$1 backlog=$2 d=$tmp/$1
	mkdir -p "$d"
	"$S" broker --topic fmnist.a:2 --bootstrap-file "$d/bootstrap" >"$d/broker.out" 2>"$d/broker.err" &
	local b=$!
	pids+=("$b")
	for _ in $(seq 1 300); do [ -s "$d/bootstrap" ] && break; sleep 0.2; done
	[ -s "$d/bootstrap" ] || { echo "backlog_memory: the broker did not start" >&2; exit 1; }
	local bs
	bs=$(cat "$d/bootstrap")
	if [ "$backlog" -gt 0 ]; then
		"$S" feed --bootstrap "$bs" --topic fmnist.a --rate 5000 --count "$backlog" --quiet \
			>"$d/feed0.out" 2>&1
	fi
	"$S" worker -c "$ROOT/examples/worker-fmnist.json" --set kafka.bootstrap.servers="$bs" \
		--set worker.eval_interval=0 --set worker.progress_interval=1 --throttle "$THROTTLE" \
		>"$d/w.out" 2>"$d/w.err" &
	local w=$!
	pids+=("$w")
	"$S" feed --bootstrap "$bs" --topic fmnist.a --rate 100 --duration "$DUR" --quiet \
		>"$d/feed.out" 2>&1 &
	pids+=("$!")
	local t=0
	while [ "$t" -le "$DUR" ]; do
		local rss buf
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$w/status" 2>/dev/null || echo -)
		buf=$(grep -Eo 'buf [0-9]+' "$d/w.err" 2>/dev/null | tail -n 1 | cut -d' ' -f2 || true)
		echo "$t ${rss:--} ${buf:--}" >>"$tmp/$name.rss"
		sleep 3
		t=$((t + 3))
	done
	kill "$w" "$b" 2>/dev/null || true
	wait "$w" 2>/dev/null || true
	wait "$b" 2>/dev/null || true
}

echo "backlog_memory: $("$S" --version | head -n 1), $(nproc) cores," \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), ${DUR} s per run"
run backlog 12000
run steady 0
# at FILE T: the RSS (MiB) of the first sample at or after T s.
at() { awk -v t="$2" '$1 >= t && $2 != "-" { printf "%.1f", $2 / 1024; exit }' "$1"; }
peak() { awk '$2 != "-" && $2 > m { m = $2 } END { printf "%.1f", m / 1024 }' "$1"; }
last() { awk '$2 != "-" { r = $2 } END { printf "%.1f", r / 1024 }' "$1"; }
lastbuf() { awk '$3 != "-" { b = $3 } END { print b }' "$1"; }
printf '%-8s %12s %12s %14s %12s\n' run "RSS@30s MiB" "peak MiB" "RSS@end MiB" "buf@end"
for r in backlog steady; do
	printf '%-8s %12s %12s %14s %12s\n' "$r" "$(at "$tmp/$r.rss" 30)" "$(peak "$tmp/$r.rss")" \
		"$(last "$tmp/$r.rss")" "$(lastbuf "$tmp/$r.rss")"
done
echo "given back: $(awk -v p="$(peak "$tmp/backlog.rss")" -v e="$(last "$tmp/backlog.rss")" \
	-v f="$(last "$tmp/steady.rss")" 'BEGIN { if (p - f > 0) printf "%.0f%%", (p - e) / (p - f) * 100;
	else print "-" }') of the backlog's extra memory (peak - end over peak - steady end)"
