#!/usr/bin/env bash
# `scadles predict` on the embedded broker: 10,000 Fashion-MNIST test
# records and 3 malformed ones in, 10,000 acknowledged predictions whose hits
# equal `scadles eval` of the same checkpoint, 3 dead letters, every offset
# committed (predict_common.inc); a stop by SIGTERM; unlabelled CSV records
# (--unlabelled) predicted as their labelled twins; the input's key, headers
# and label carried to its prediction; plus its usage and model errors.
. "$(dirname "$0")/predict_common.inc"

start_broker pin:2
predict_end_to_end "$bs" pin pout pdlq pgroup
predict_carries_origin "$bs" porig porig.out

# SIGTERM while records arrive: a clean stop (exit 0, summary, what was
# scored acknowledged and committed), and the next run predicts the rest:
# every record of the topic predicted at least once, none skipped.
"$SCADLES" feed --bootstrap "$bs" --topic plive --split test --count 3000 --rate 600 --quiet \
	>"$tmp/live.out" 2>"$tmp/live.err" &
f=$!
pids="$pids $f"
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in plive --out plive.out \
	--checkpoint "$tmp/m.ckpt" --group plg --progress 0 --set metrics.listen=127.0.0.1:0 \
	>"$tmp/t1.out" 2>"$tmp/t1.err" &
p=$!
for _ in $(seq 1 300); do
	grep -q 'rebalance: assigned' "$tmp/t1.err" && break
	sleep 0.1
done
sleep 2
# Its Prometheus endpoint (docs/OPERATIONS.md) while it predicts.
maddr=$(grep -o 'metrics on http://[0-9.]*:[0-9]*' "$tmp/t1.err" | head -n 1 | sed 's|.*http://||')
[ -n "$maddr" ] || fail "predict logged no metrics address"
curl -s -m 5 "http://$maddr/metrics" >"$tmp/predict.prom" || fail "GET /metrics of predict"
grep -q '^scadles_info{role="predict"' "$tmp/predict.prom" || fail "predict's /metrics: no scadles_info"
np=$(awk '$1 == "scadles_predictions_total" {print $2}' "$tmp/predict.prom")
[ "${np:-0}" -gt 0 ] || fail "predict's /metrics: scadles_predictions_total ${np:-absent}"
[ "$(curl -s -m 5 "http://$maddr/healthz")" = ok ] || fail "predict's /healthz"
check_documented "$tmp/predict.prom"
if command -v promtool >/dev/null; then
	out=$(promtool check metrics <"$tmp/predict.prom" 2>&1) || fail "promtool check metrics: $out"
	[ -z "$out" ] || fail "promtool check metrics: $out"
fi
echo "predict: /metrics on $maddr, scadles_predictions_total $np, /healthz ok"
kill -TERM "$p"
wait "$p" || fail "predict exited $? on SIGTERM"
[ "$(summary "$tmp/t1.out" .stop_reason)" = signal ] || fail "stop reason"
[ "$(summary "$tmp/t1.out" .identity_ok)" = true ] || fail "accounting at SIGTERM"
n1=$(summary "$tmp/t1.out" .acknowledged)
[ "$n1" -gt 0 ] && [ "$n1" -eq "$(summary "$tmp/t1.out" .consumed)" ] ||
	fail "SIGTERM: acknowledged $n1 of $(summary "$tmp/t1.out" .consumed) consumed"
c1=$(summary "$tmp/t1.out" '[.partitions[].committed] | add')
[ "$c1" -eq "$n1" ] || fail "SIGTERM: committed $c1, acknowledged $n1"
wait "$f" || fail "live feed exited $?"
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in plive --out plive.out \
	--checkpoint "$tmp/m.ckpt" --group plg --idle-exit 3 --duration 60 --progress 0 \
	>"$tmp/t2.out" 2>"$tmp/t2.err" || fail "predict after SIGTERM exited $?"
check_committed "$tmp/t2.out"
u=$(kcat -C -b "$bs" -t plive.out -e -q -f '%s\n' | jq -r '"\(.partition) \(.offset)"' | sort -u | wc -l)
[ "$u" -eq 3000 ] || fail "$u of 3000 records predicted over the two runs"
echo "SIGTERM after $n1 records; the next run predicted the rest ($(summary "$tmp/t2.out" .acknowledged))"

# Unlabelled records (--unlabelled): 2000 CSV test records without their
# label column get the predictions of the same records with it (the same
# class, probabilities within 1e-5); a worker refuses the setting.
"$SCADLES" feed --bootstrap "$bs" --topic pcsv --split test --count 2000 --rate 50000 --quiet \
	--format csv >"$tmp/csv.out" 2>"$tmp/csv.err" || fail "csv feed failed"
# Line i of punl (one partition) is the record at "partition offset" line i
# of pcsv.map.
kcat -C -b "$bs" -t pcsv -e -q -f '%p %o,%s\n' >"$tmp/pcsv.txt"
cut -d, -f1 "$tmp/pcsv.txt" >"$tmp/pcsv.map"
cut -d, -f3- "$tmp/pcsv.txt" >"$tmp/unl.csv"
[ "$(wc -l <"$tmp/unl.csv")" -eq 2000 ] || fail "read $(wc -l <"$tmp/unl.csv") of 2000 csv records"
kcat -P -b "$bs" -t punl -p 0 -l "$tmp/unl.csv" || fail "kcat produce failed"
jq '.source.topics = [{topic: "pcsv", format: "csv", label: "field"},
	{topic: "punl", format: "csv", label: "field"}]' \
	"$tmp/p.json" >"$tmp/pu.json"
for t in pcsv punl; do
	"$SCADLES" predict -c "$tmp/pu.json" --bootstrap "$bs" --in $t --out $t.out \
		--checkpoint "$tmp/m.ckpt" --group g$t --idle-exit 3 --duration 60 --progress 0 \
		$([ $t = punl ] && echo --unlabelled) >"$tmp/$t.out" 2>"$tmp/$t.err" ||
		fail "predict $t exited $?: $(tail -n 3 "$tmp/$t.err")"
	[ "$(summary "$tmp/$t.out" .acknowledged)" -eq 2000 ] && [ "$(summary "$tmp/$t.out" .bad)" -eq 0 ] ||
		fail "$t: $(summary "$tmp/$t.out" .acknowledged) acknowledged, $(summary "$tmp/$t.out" .bad) bad"
	kcat -C -b "$bs" -t $t.out -e -q -f '%s\n' |
		jq -r '"\(.partition) \(.offset) \(.label) \(.probabilities | join(" "))"' >"$tmp/$t.pred"
done
# A labelled record's prediction carries its label, an unlabelled one's none.
[ "$(kcat -C -b "$bs" -t pcsv.out -e -q -f '%s\n' | jq -c 'select(.true_label != null)' | wc -l)" -eq 2000 ] &&
	[ "$(kcat -C -b "$bs" -t punl.out -e -q -f '%s\n' | jq -c 'select(has("true_label"))' | wc -l)" -eq 0 ] ||
	fail "true_label: labelled or unlabelled predictions wrong"
# The same class, probabilities within 1e-5 (batches group other records, so
# sums round differently): a record whose top two probabilities are within
# 2e-5 of each other (a near tie, which that difference may turn) may take
# the other class of the two; any other class difference fails.
awk 'FILENAME == ARGV[1] { src[NR - 1] = $0; next }
     FILENAME == ARGV[2] { k = $1 " " $2; lab[k] = $3; a = b = -1
       for (i = 4; i <= NF; i++) { p[k, i] = $i; if ($i > a) { b = a; a = $i } else if ($i > b) b = $i }
       gap[k] = a - b; next }
     { k = src[$2]; n++
       if (!(k in lab)) bad++
       else if (lab[k] != $3) { if (gap[k] <= 2e-5) ties++; else bad++ }
       for (i = 4; i <= NF; i++) { d = p[k, i] - $i; if (d < 0) d = -d; if (d > m) m = d } }
     END { printf "unlabelled: %d records, %d other classes (%d more at near ties), max probability difference %.2g\n",
                  n, bad, ties, m
           exit !(n == 2000 && bad == 0 && m <= 1e-5) }' \
	"$tmp/pcsv.map" "$tmp/pcsv.pred" "$tmp/punl.pred" ||
	fail "unlabelled predictions differ from labelled ones"
set +e
"$SCADLES" worker -c "$tmp/pu.json" --bootstrap "$bs" --set source.unlabelled=true \
	--duration 5 >/dev/null 2>"$tmp/wu.err"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q 'source.unlabelled' "$tmp/wu.err" ||
	fail "a worker with source.unlabelled: rc $rc, $(cat "$tmp/wu.err")"
echo "unlabelled: 2000 csv records without their label column, predictions identical; a worker refuses it"

# Errors: usage (exit 2), a missing checkpoint (1), another model's (2).
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in pin --checkpoint "$tmp/m.ckpt" \
	>/dev/null 2>"$tmp/e1.err" && fail "no --out accepted"
grep -q -- '--out TOPIC is required' "$tmp/e1.err" || fail "usage error: $(cat "$tmp/e1.err")"
set +e
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in pin --out pout --checkpoint "$tmp/nope" \
	>/dev/null 2>"$tmp/e2.err"
rc=$?
"$SCADLES" predict -c "$tmp/p.json" --bootstrap "$bs" --in pin --out pout --checkpoint "$tmp/m.ckpt" \
	--set model.layers[1].units=16 >/dev/null 2>"$tmp/e3.err"
rc3=$?
set -e
[ "$rc" -eq 1 ] && grep -q "$tmp/nope: cannot open" "$tmp/e2.err" || fail "missing checkpoint: rc $rc, $(cat "$tmp/e2.err")"
[ "$rc3" -eq 2 ] && grep -q "m.ckpt" "$tmp/e3.err" || fail "other model's checkpoint: rc $rc3, $(cat "$tmp/e3.err")"
echo "ok: predictions equal eval's, dead letters and commits exact"
