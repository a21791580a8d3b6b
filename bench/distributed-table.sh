#!/usr/bin/env bash
# distributed-table.sh — the markdown table of docs/DISTRIBUTED.md
# ("Benchmark") from the output of bench/distributed.sh: one row per
# broker/policy/publication, worker 0's latency percentiles (p50 / p95 / p99
# in ms). Usage: bench/distributed.sh > out.txt; bench/distributed-table.sh out.txt
set -eu
awk '
function row(k) {
	if (!(k in seen)) { seen[k] = 1; order[n++] = k }
}
$1 ~ /\// && $2 == "samples/s" {
	row($1); sps[$1] = $3
	if (match($0, /[0-9]+% of standalone/)) pct[$1] = substr($0, RSTART, RLENGTH - 15)
}
$1 ~ /\// && $2 == "updates" && $3 == "applied" {
	row($1); split($0, a, ", "); split(a[2], b, "/"); ups[$1] = b[1]
}
$1 ~ /\// && $2 == "latency" {
	row($1)
	k = ($3 ~ /acked/) ? "ack" : "vis"
	if (match($0, /w0 n [0-9]+ p50 [0-9.]+ p95 [0-9.]+ p99 [0-9.]+/)) {
		split(substr($0, RSTART, RLENGTH), f, " ")
		lat[$1, k] = f[5] " / " f[7] " / " f[9]
	}
}
END {
	print "| broker/policy/publication | samples/s (vs. standalone) | updates/s applied | produce→acked | produce→visible |"
	print "|---|---|---|---|---|"
	for (i = 0; i < n; i++) {
		k = order[i]
		s = (k in sps) ? sps[k] ((k in pct) ? " (" pct[k] "%)" : "") : ""
		printf "| %s | %s | %s | %s | %s |\n", k, s, (k in ups) ? ups[k] : "", \
		    ((k, "ack") in lat) ? lat[k, "ack"] : "", ((k, "vis") in lat) ? lat[k, "vis"] : ""
	}
}' "$1"
