#!/usr/bin/env bash
# Kafka security on a real Apache Kafka: starts its own broker with a TLS
# listener (CA and broker certificate made with openssl) and SASL users
# (scripts/kafka.sh, KAFKA_SECURITY=sasl_ssl) on SCADLES_SEC_KAFKA_PORT
# (19492; controller on the next port) and stops it at the end. Over
# SASL_SSL: feed publishes, an aggregator and two workers train a job to the
# end (every record trained and committed, every update applied once), and
# kcat with the interceptor plugin trains as a distributed worker. A wrong
# password (feed, worker, aggregator, the plugin's worker) and a CA that did
# not sign the broker's certificate (worker) each end in a non-zero exit
# within 60 s with a message that says the authentication failed and names
# the client. Skipped (77) without Java, openssl or mvn-fetched jars, or with
# SCADLES_REAL_KAFKA=0.
. "$(dirname "$0")/own_kafka.inc"
command -v openssl >/dev/null || { echo "openssl is not installed"; exit 77; }
export KAFKA_SECURITY=sasl_ssl KAFKA_NODES=1
own_kafka_up kafka-sasl-ssl "${SCADLES_SEC_KAFKA_PORT:-19492}"
sec=$(cat "$KAFKA_DIR/client.json")
mech=$(jq -r '."sasl.mechanisms"' <<<"$sec")
echo "broker $bs: SASL_SSL, clients use $mech"
run="sec$$x$(date +%s)"
t_lim=60 # seconds any failing client may take

# 1) A client without TLS/SASL settings is refused (the listener needs them).
if timeout 20 kcat -L -b "$bs" -m 5 >/dev/null 2>&1; then fail "plaintext client got metadata"; fi

# 2) feed, aggregator and two workers over SASL_SSL.
"$SCADLES" feed --bootstrap "$bs" -c <(jq -n --argjson k "$sec" '{kafka: $k}') --prefix "$run.d" \
	--topics 2 --count 1500 --rate 6000 --data synth --synth-n 2000 --quiet \
	>"$tmp/feed.out" 2>"$tmp/feed.err" || fail "feed over SASL_SSL failed"
grep -q 'failed 0 undelivered 0' "$tmp/feed.out" || fail "feed: $(tail -n 1 "$tmp/feed.out")"
for w in 0 1; do
	write_job "$tmp/j$w.json" "[{\"topic\": \"$run.d.$w\"}]" \
		"$(jq -n --argjson k "$sec" --arg r "$run" --arg w "$w" \
			'{source: {group_id: "\($r)-w\($w)"}, job: {name: $r}, kafka: ({"fetch.wait.max.ms": 20} + $k)}')"
done
job_aggregator "$tmp/j0.json" a 8
job_workers --idle-exit 5
job_check 1500 eq
echo "SASL_SSL: feed, aggregator and 2 workers: 3000 records trained and committed, every update applied once"

# 3) The interceptor plugin in kcat as a distributed worker, its own clients
#    inheriting kcat's settings (from -F, set before the plugin is loaded).
plugin_args() { # FILE: -X scadles.kafka.NAME=VALUE for each member of the JSON object
	jq -r 'to_entries[] | "-X\nscadles.kafka.\(.key)=\(.value)"' "$1"
}
use_plugin
write_job "$tmp/p.json" "[{\"topic\": \"$run.d.0\"}]" \
	"{\"job\": {\"name\": \"$run.p\", \"workers\": 1}, \"worker\": {\"batch\": \"fixed\", \"b\": 32}}"
jq --argjson k "$sec" '.kafka += $k' "$tmp/p.json" >"$tmp/pa.json"
job_aggregator "$tmp/pa.json" pagg 6
jq '."sasl.password" = "wrong"' <<<"$sec" >"$tmp/bad-sec.json"
timeout 120 kcat -C -b "$bs" -F "$KAFKA_DIR/client.properties" -t "$run.d.0" -o beginning -c 1500 -q -f '' \
	-X plugin.library.paths=libscadles -X "scadles.config=$tmp/p.json" \
	-X scadles.distributed=true -X scadles.worker.id=0 -X scadles.queue.block.ms=-1 \
	-X "scadles.summary.file=$tmp/plugin-summary.json" 2>"$tmp/kcat.err" ||
	fail "kcat with the plugin over SASL_SSL exited $?"
wait "$agg" || fail "plugin job's aggregator exited $?"
sent=$(jq -r .job.updates_sent "$tmp/plugin-summary.json")
acked=$(jq -r .job.updates_acked "$tmp/plugin-summary.json")
applied=$(summary "$tmp/pagg.out" .applied)
[ "$(jq -r .trained "$tmp/plugin-summary.json")" -gt 1400 ] || fail "plugin trained $(jq -r .trained "$tmp/plugin-summary.json")"
[ "$sent" -gt 0 ] && [ "$sent" -eq "$acked" ] && [ "$acked" -eq "$applied" ] ||
	fail "plugin: sent $sent, acknowledged $acked, applied $applied"
echo "SASL_SSL: kcat + plugin trained $(jq -r .trained "$tmp/plugin-summary.json") records, $sent updates sent, acknowledged and applied"

# 4) Wrong credentials and an unknown CA: a clear error and a non-zero exit, in bounded time.
jq '.kafka["sasl.password"] = "wrong"' "$tmp/j0.json" >"$tmp/bad.json"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/other.key" -out "$tmp/other-ca.pem" \
	-days 1 -subj "/CN=another CA" 2>/dev/null
jq --arg ca "$tmp/other-ca.pem" '.kafka["ssl.ca.location"] = $ca' "$tmp/j0.json" >"$tmp/badca.json"
refused() { # NAME WANT-REGEX COMMAND...
	local name=$1 want=$2 t0 rc secs
	shift 2
	t0=$(date +%s)
	rc=0
	timeout "$t_lim" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	secs=$(($(date +%s) - t0))
	[ "$rc" -ne 124 ] || fail "$name: still running after $t_lim s"
	# (kcat: the plugin must make the host's client creation fail.)
	[ "$rc" -ne 0 ] || fail "$name: exit 0 with bad credentials"
	grep -Eq "$want" "$tmp/$name.err" || fail "$name: no '$want' in: $(tail -n 3 "$tmp/$name.err")"
	echo "$name: exit $rc after ${secs}s: $(grep -Eo "$want.{0,80}" "$tmp/$name.err" | head -n 1)"
}
auth='Kafka authentication failed: [^ ]+'
refused bad-feed "$auth" "$SCADLES" feed --bootstrap "$bs" -c "$tmp/bad.json" --prefix "$run.x" \
	--topics 1 --count 100 --rate 1000 --data synth --synth-n 100 --quiet
refused bad-worker "$auth" "$SCADLES" worker -c "$tmp/bad.json" --bootstrap "$bs" --id 0 --idle-exit 5
refused bad-aggregator "$auth" "$SCADLES" aggregator -c "$tmp/bad.json" --bootstrap "$bs" --idle-exit 5
refused bad-ca "$auth.*(SSL|certificate)" "$SCADLES" worker -c "$tmp/badca.json" --bootstrap "$bs" --id 0 --idle-exit 5
mapfile -t bx < <(plugin_args "$tmp/bad-sec.json")
# kcat -G: a group consumer, which exits non-zero on the fatal error the
# plugin raises when its worker cannot start (docs/PLUGIN.md).
refused bad-plugin "$auth" kcat -C -G "$run-badplugin" -b "$bs" -F "$KAFKA_DIR/client.properties" -o beginning \
	-c 1500 -q -f '' -X plugin.library.paths=libscadles -X "scadles.config=$tmp/p.json" \
	-X scadles.distributed=true -X scadles.worker.id=0 "${bx[@]}" "$run.d.0"
echo "kafka_sasl_ssl: ok"
