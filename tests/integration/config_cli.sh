#!/usr/bin/env bash
# config_cli.sh — `scadles config`: help, list, markdown, check (exit codes,
# overrides, error messages naming file and JSON path).
set -u
S=${SCADLES:-build/scadles}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$S" config --help | grep -q -- '--check' || fail "--help"
"$S" config >/dev/null 2>&1; [ $? -eq 2 ] || fail "no mode should exit 2"
"$S" config --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option should exit 2"

"$S" config --list > "$T/list" || fail "--list"
for k in model.input 'model.layers[].kernel' optim.lr optim.schedule.milestones_epochs \
	train.seed data.dir data.synthetic.noise kafka; do
	grep -qF "$k" "$T/list" || fail "--list lacks $k"
done
"$S" config --markdown | diff -q docs/CONFIG.md - >/dev/null || fail "docs/CONFIG.md out of date"

# A valid file: exit 0, resolved JSON on stdout, overrides applied in order.
"$S" config --check -c tests/data/config/valid/cnn.json --set optim.lr=0.5 \
	--set 'model.layers[0].filters=8' --set kafka.client.id=t > "$T/out" || fail "--check valid"
grep -q '"lr": 0.5' "$T/out" || fail "override optim.lr not in output"
grep -q '"filters": 8' "$T/out" || fail "layer override not in output"
grep -q '"client.id": "t"' "$T/out" || fail "kafka override not in output"
# The output is a configuration that checks again to itself.
"$S" config --check -c "$T/out" > "$T/out2" || fail "dump does not check"
cmp -s "$T/out" "$T/out2" || fail "dump is not stable"

# Every example configuration (worker, job, plugin and simulator files):
# `--check` prints a configuration that loads back to the same effective
# configuration. Every value the file gives is in the output (given zeros and
# defaults included: a key left out may mean something else, as a CSV
# topic's first_feature_column 0 does), a job section appears only where the
# file has one (it makes a worker a job member), and the output checks again
# to itself.
for f in $(git ls-files 'examples/*.json' 'examples/**/*.json' | sort -u); do
	"$S" config --check -c "$f" >"$T/ex.json" 2>"$T/ex.err" || fail "$f: --check: $(cat "$T/ex.err")"
	"$S" config --check -c "$T/ex.json" >"$T/ex2.json" 2>"$T/ex.err" ||
		fail "$f: its --check output does not load back: $(cat "$T/ex.err")"
	cmp -s "$T/ex.json" "$T/ex2.json" || fail "$f: its --check output checks to something else"
	[ "$(jq 'has("job")' "$f")" = "$(jq 'has("job")' "$T/ex.json")" ] ||
		fail "$f: a job section appeared or went in its --check output"
	lost=$(jq -n --slurpfile a "$f" --slurpfile b "$T/ex.json" '
		def same(x; y): if (x | type) == "number" and (y | type) == "number"
			then ((x - y) | fabs) <= 1e-9 * ((x | fabs) + 1) else x == y end;
		[$a[0] | paths(scalars)] | map(select(. as $p | same($a[0] | getpath($p); $b[0] | getpath($p)) | not)) |
		map(map(tostring) | join(".")) | join(", ")')
	[ "$lost" = '""' ] || fail "$f: --check output lost or changed $lost"
done
echo "config --check: every example loads back from its output"

# Config errors: exit 2, message names file and JSON path.
"$S" config --check -c tests/data/config/invalid/unknown_nested_key/input.json 2> "$T/err"
[ $? -eq 2 ] || fail "invalid file should exit 2"
grep -qF 'unknown_nested_key/input.json: $.optim.lrr: unknown property (did you mean "lr"?)' \
	"$T/err" || fail "message: $(cat "$T/err")"
"$S" config --check --set train.batch=0 2> "$T/err"
[ $? -eq 2 ] || fail "bad override should exit 2"
grep -qF 'override: $.train.batch: expected integer in [1, 65536], got 0' "$T/err" ||
	fail "override message: $(cat "$T/err")"
"$S" config --check -c "$T/missing.json" 2> "$T/err"
[ $? -eq 2 ] || fail "missing file should exit 2"
grep -q 'missing.json: cannot open' "$T/err" || fail "missing file message"
# Shape errors come from the model builder, with the JSON path of the layer.
printf '{"model": {"input": [1, 8, 8], "layers": [{"type": "conv2d", "filters": 4, "kernel": 9},
  {"type": "flatten"}, {"type": "dense", "units": 10}]}}' > "$T/shape.json"
"$S" config --check -c "$T/shape.json" 2> "$T/err"
[ $? -eq 2 ] || fail "shape error should exit 2"
grep -qF 'shape.json: $.model.layers[0] (conv2d):' "$T/err" || fail "shape message: $(cat "$T/err")"
# A model past the parameter limit is a configuration error (2), not a
# failed allocation (1).
"$S" config --check --set 'model.input=[65536]' \
	--set 'model.layers[0]={"type": "dense", "units": 16777216}' \
	--set 'model.layers[1]={"type": "dense", "units": 10}' 2> "$T/err" >/dev/null
[ $? -eq 2 ] || fail "oversized model should exit 2: $(cat "$T/err")"
grep -qF 'defaults: $.model.layers[0] (dense): the weight takes the model past 4294967295 parameters' \
	"$T/err" || fail "oversized model message: $(cat "$T/err")"

# What would fail later at run time fails here: librdkafka properties and
# values (checked on a throwaway client configuration) and the topic regex.
printf '{"kafka": {"bootstrap.servers": "h:9092", "linger.mss": 5}}' > "$T/kafka.json"
"$S" config --check -c "$T/kafka.json" 2> "$T/err" >/dev/null
[ $? -eq 2 ] || fail "unknown kafka property should exit 2"
grep -qF 'kafka.json: $.kafka.linger.mss: No such configuration property' "$T/err" ||
	fail "kafka property message: $(cat "$T/err")"
"$S" config --check --set kafka.acks=maybe 2> "$T/err" >/dev/null
[ $? -eq 2 ] || fail "bad kafka value should exit 2"
grep -qF '$.kafka.acks:' "$T/err" || fail "kafka value message: $(cat "$T/err")"
"$S" config --check --set 'source.pattern=^sensor-(a|b' 2> "$T/err" >/dev/null
[ $? -eq 2 ] || fail "bad regex should exit 2"
grep -qF 'override: $.source.pattern: not a POSIX extended regex' "$T/err" ||
	fail "regex message: $(cat "$T/err")"
"$S" config --check --set 'source.pattern=^sensor-(a|b)$' >/dev/null || fail "good regex"
# A back-reference makes matching exponential in a topic name's length.
"$S" config --check --set 'source.pattern=^(.*)(.*)(.*)(.*)(.*)(.*)\6\5\4\3\2\1x' 2> "$T/err" >/dev/null
[ $? -eq 2 ] && grep -qF '$.source.pattern: a back-reference' "$T/err" ||
	fail "a back-reference in source.pattern: $(cat "$T/err")"
# What only a client checks: a throwaway producer and consumer are built.
"$S" config --check --set kafka.security.protocol=sasl_plaintext --set kafka.sasl.mechanisms=NOPE \
	2> "$T/err" >/dev/null
[ $? -eq 2 ] && grep -qF 'librdkafka refuses a client with these settings: Unsupported SASL mechanism: NOPE' "$T/err" ||
	fail "an unknown SASL mechanism: $(cat "$T/err")"
"$S" config --check --set kafka.security.protocol=ssl --set kafka.ssl.ca.location="$T/no-ca.pem" \
	2> "$T/err" >/dev/null
[ $? -eq 2 ] && grep -qF 'ssl.ca.location failed' "$T/err" || fail "a missing CA file: $(cat "$T/err")"
# A JSON syntax error names line and column, not the value at them.
printf '{"kafka": {"sasl.password": "Hunter2\\q"}}' > "$T/secret.json"
"$S" config --check -c "$T/secret.json" 2> "$T/err" >/dev/null
[ $? -eq 2 ] && grep -qF 'secret.json:1:' "$T/err" && ! grep -q Hunter2 "$T/err" ||
	fail "a parse error quoted a secret: $(cat "$T/err")"

# Secrets never print: passwords, secrets and private key material (a real
# key and certificate: the throwaway client loads them).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=t -days 2 \
	-keyout "$T/k.pem" -out "$T/c.pem" 2>/dev/null || fail "openssl could not make a key"
"$S" config --check --set kafka.security.protocol=sasl_ssl --set kafka.sasl.mechanisms=SCRAM-SHA-256 \
	--set kafka.sasl.username=u --set kafka.sasl.password=pw-s3cret-1 \
	--set kafka.ssl.key.password=pw-s3cret-2 --set kafka.ssl.keystore.password=pw-s3cret-3 \
	--set "kafka.ssl.key.pem=$(cat "$T/k.pem")" --set "kafka.ssl.certificate.pem=$(cat "$T/c.pem")" \
	> "$T/out" 2>&1 || fail "secrets config: $(cat "$T/out")"
! grep -q 'pw-s3cret' "$T/out" || fail "a secret was printed: $(grep pw-s3cret "$T/out")"
! grep -qF "$(sed -n 2p "$T/k.pem")" "$T/out" || fail "private key material was printed"
# ... nor when librdkafka refuses the key: its error names no key bytes.
"$S" config --check --set kafka.security.protocol=ssl \
	--set 'kafka.ssl.key.pem=-----BEGIN PRIVATE KEY-----pw-s3cret-4' > "$T/out2" 2>&1
[ $? -eq 2 ] && ! grep -q 'pw-s3cret' "$T/out2" || fail "a refused key: $(cat "$T/out2")"
[ "$(grep -c '"(redacted)"' "$T/out")" -eq 4 ] || fail "4 redacted values expected: $(cat "$T/out")"
grep -qF '"sasl.username": "u"' "$T/out" || fail "non-secret values stay"
# --sample: records decoded by the configured decoder (named fields here),
# each refused one with its reason; exit 2 when one is refused.
cat > "$T/sample.jsonl" <<'JSON'
{"device":"m-0001","kind":"fan","temp":70,"vib":null,"status":"leak"}

{"device":"m-0001","kind":"mixer","temp":"hot","status":"ok"}
{"device":"m-0001","kind":"pump","status":"exploded"}
JSON
"$S" config --check -c examples/iot/worker.json --sample "$T/sample.jsonl" > /dev/null 2> "$T/sample.err"
[ $? -eq 2 ] || fail "--sample with refused records should exit 2: $(cat "$T/sample.err")"
grep -qF 'sample '"$T"'/sample.jsonl:1: ok, label 3 (leak); 33 features:' "$T/sample.err" &&
	grep -qF ' kind=fan=1 temp=1 temp.missing=0 vib=' "$T/sample.err" &&
	grep -qF ' vib.missing=1 pressure=' "$T/sample.err" ||
	fail "--sample: line 1: $(cat "$T/sample.err")"
grep -qF 'sample.jsonl:3: refused (not_numeric): $.temp: expected a number' "$T/sample.err" ||
	fail "--sample: line 3: $(cat "$T/sample.err")"
grep -qF 'sample.jsonl:4: refused (label_range): $.status: label "exploded" is not a class name' "$T/sample.err" ||
	fail "--sample: line 4: $(cat "$T/sample.err")"
grep -qF 'sample.jsonl: 4 line(s), 2 refused' "$T/sample.err" || fail "--sample: $(cat "$T/sample.err")"
head -n 1 "$T/sample.jsonl" > "$T/one.jsonl"
"$S" config --check -c examples/iot/worker.json --sample "$T/one.jsonl" >/dev/null 2>&1 ||
	fail "--sample of a good record should exit 0"
"$S" config --check --sample "$T/one.jsonl" --topic nope >/dev/null 2> "$T/sample2.err"
[ $? -eq 2 ] && grep -q 'refused (missing_field): \$.features: missing' "$T/sample2.err" ||
	fail "--sample with the default decoder: $(cat "$T/sample2.err")"
"$S" config --sample "$T/one.jsonl" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--sample without --check"
"$S" config --check -c examples/iot/worker.json --set 'streams.labels=["a","b"]' >/dev/null 2>"$T/names.err"
[ $? -eq 2 ] && grep -qF '$.streams.labels: 2 class names, the model has 4 classes' "$T/names.err" ||
	fail "class names that are not the model's classes: $(cat "$T/names.err")"
# What the decoders refuse, config --check refuses, under the key's own path.
# --set overrides are checked together: a topic renamed with eval.decoder.
"$S" config --check -c examples/iot/worker.json --set 'source.topics=[{"topic":"tail.json"}]' \
	--set eval.decoder=tail.json > "$T/ren.json" 2>"$T/ren.err" || fail "rename a topic and eval.decoder: $(cat "$T/ren.err")"
[ "$(jq -r '.eval.decoder + " " + .source.topics[0].topic' "$T/ren.json")" = "tail.json tail.json" ] ||
	fail "rename: $(jq -c '{e: .eval.decoder, t: .source.topics}' "$T/ren.json")"
"$S" config --check -c examples/iot/worker.json --set 'source.topics=[{"topic":"tail.json"}]' >/dev/null 2>"$T/ren.err"
[ $? -eq 2 ] && grep -qF '$.eval.decoder: "machines.json" is not a topic of source.topics' "$T/ren.err" ||
	fail "a dangling eval.decoder: $(cat "$T/ren.err")"
iot_check() { # JQ_FILTER: config --check of the iot example changed by the filter
	jq "$1" examples/iot/worker.json >"$T/iot.json" && "$S" config --check -c "$T/iot.json" >/dev/null 2>"$T/iot.err"
}
iot_check '.streams.fields[1].path = "$.device"'
[ $? -eq 2 ] && grep -qF '$.streams.fields[1].path: $.device overlaps fields[0]'"'"'s $.device' "$T/iot.err" ||
	fail "two fields of one path: $(cat "$T/iot.err")"
iot_check '.streams.fields[2].path = "status"'
[ $? -eq 2 ] && grep -qF '$.streams.fields[2].path: $.status overlaps the label path $.status' "$T/iot.err" ||
	fail "a field that is the label: $(cat "$T/iot.err")"
iot_check '.streams.fields[2] = {"column": 3, "indicator": true}'
[ $? -eq 2 ] && grep -qF '$.streams.fields[2].path: a json field needs its path' "$T/iot.err" ||
	fail "a json field without a path: $(cat "$T/iot.err")"
"$S" config --check -c examples/iot/worker.json --set 'model.input=[32]' >/dev/null 2>"$T/width.err"
[ $? -eq 2 ] && grep -qF '$.streams.fields: the fields encode 33 features, model.input takes 32' "$T/width.err" ||
	fail "fields wider than model.input: $(cat "$T/width.err")"
echo "config_cli: ok"
