#!/usr/bin/env bash
# sim.sh — `scadles sim` on synthetic data: every policy runs to its end line,
# the same configuration gives byte-identical metrics (to stdout and to -o),
# every line is JSON, and bad configurations exit 2 naming the JSON path.
set -u
SCADLES=${SCADLES:-build/scadles}
tmp=$(mktemp -d /tmp/sc_sim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

conf() { # $1 = sim object
	cat <<JSON
{
  "model": {"input": [32], "layers": [{"type": "dense", "units": 32}, {"type": "relu"},
                                      {"type": "dense", "units": 10}]},
  "optim": {"lr": 0.05, "momentum": 0.9},
  "train": {"seed": 3},
  "data": {"source": "synthetic",
           "synthetic": {"train": 3000, "test": 500, "classes": 10, "noise": 1.0}},
  "sim": $1
}
JSON
}

for p in bsp scadles asp ssp adacomp adsp localsgd; do
	extra=""
	case $p in
	scadles) extra=', "buffer": "truncation", "codec": "adaptive"' ;;
	adacomp) extra=', "codec": "adacomp", "batch": 10' ;;
	adsp) extra=', "tune": true, "gamma": 5, "commit_min": 0.5' ;;
	localsgd) extra=', "local_steps": 5, "labels_per_device": 3, "inject_alpha": 0.5, "inject_beta": 0.5' ;;
	esac
	conf "{\"devices\": 4, \"policy\": \"$p\", \"rates\": \"S10\", \"heterogeneity\": 2,
	       \"max_time\": 20, \"eval_every\": 5 $extra}" >"$tmp/$p.json"
	"$SCADLES" sim -c "$tmp/$p.json" >"$tmp/$p.a" || fail "$p: exit $?"
	"$SCADLES" sim -c "$tmp/$p.json" -o "$tmp/$p.b" || fail "$p: exit $? with -o"
	cmp -s "$tmp/$p.a" "$tmp/$p.b" || fail "$p: two runs differ"
	tail -n 1 "$tmp/$p.a" | grep -q "\"event\":\"end\".*\"policy\":\"$p\"" || fail "$p: no end line"
	python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/$p.a" ||
		fail "$p: a line is not JSON"
	acc=$(tail -n 1 "$tmp/$p.a" | sed 's/.*"test_acc":\([0-9.]*\).*/\1/')
	echo "$p: final test accuracy $acc"
	awk -v a="$acc" 'BEGIN { exit !(a > 0.3) }' || fail "$p: accuracy $acc not above 0.3 (chance 0.1)"
done

# The model broadcast (downlink_bcast): bsp over 2 shards; each device's
# downlink is the q8 deltas and keyframes it read, fewer bytes than whole
# shards, at the same accuracy.
for bc in false true; do
	conf "{\"devices\": 4, \"shards\": 2, \"policy\": \"bsp\", \"rates\": \"S10\",
	       \"max_time\": 20, \"eval_every\": 5, \"downlink_bcast\": $bc}" >"$tmp/bc-$bc.json"
	"$SCADLES" sim -c "$tmp/bc-$bc.json" >"$tmp/bc-$bc.a" || fail "downlink_bcast $bc: exit $?"
done
read -r full acc_full < <(tail -n 1 "$tmp/bc-false.a" | python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print(j["bytes_down"], j["test_acc"])')
read -r bcast acc_bcast ndev < <(tail -n 1 "$tmp/bc-true.a" | python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print(j["bytes_down"], j["test_acc"], len(j["bytes_down_devices"]))')
echo "bsp, 2 shards: bytes down $full (whole shards), $bcast (broadcast); test accuracy $acc_full, $acc_bcast"
[ "$ndev" -eq 4 ] || fail "bytes_down_devices has $ndev entries"
[ "$bcast" -lt "$full" ] || fail "the broadcast read $bcast bytes, whole shards $full"
awk -v a="$acc_bcast" 'BEGIN { exit !(a > 0.3) }' || fail "broadcast: accuracy $acc_bcast"

conf '{"policy": "bsq"}' >"$tmp/bad.json"
"$SCADLES" sim -c "$tmp/bad.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "bad policy: exit $rc, want 2"
grep -q '\$.sim.policy' "$tmp/err" || fail "bad policy: message lacks the path: $(cat "$tmp/err")"
conf '{"devices": 2}' | sed 's/"lr": 0.05/"lr": "fast"/' >"$tmp/bad2.json"
"$SCADLES" sim -c "$tmp/bad2.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "bad lr: exit $rc, want 2"
grep -q '\$.optim.lr' "$tmp/err" || fail "bad lr: message lacks the path: $(cat "$tmp/err")"
"$SCADLES" sim >/dev/null 2>&1
[ $? -eq 2 ] || fail "no config: want exit 2"
echo "sim: ok"
