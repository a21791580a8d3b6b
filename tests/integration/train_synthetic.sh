#!/usr/bin/env bash
# train_synthetic.sh — `scadles train` on a small synthetic data set: the
# accuracy line is printed and above chance, the checkpoint is written,
# --resume continues from it, `scadles eval` reproduces the accuracy (also
# with batchnorm, whose running statistics the checkpoint carries), bad
# configurations exit 2 with a JSON path, and SIGINT saves a checkpoint.
set -u
SCADLES=${SCADLES:-build/scadles}
tmp=$(mktemp -d /tmp/sc_train_synth.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/synth.json" <<JSON
{
  "model": {
    "input": [1, 8, 8],
    "layers": [
      {"type": "flatten"},
      {"type": "dense", "units": 32},
      {"type": "relu"},
      {"type": "dense", "units": 5}
    ]
  },
  "optim": {"lr": 0.02, "momentum": 0.9, "schedule": {"type": "cosine"}},
  "train": {"epochs": 3, "batch": 32, "seed": 7, "checkpoint": "$tmp/synth.ckpt",
            "progress_interval": 0},
  "data": {"source": "synthetic",
           "synthetic": {"train": 2000, "test": 500, "classes": 5, "noise": 3.0}}
}
JSON

# 1. train: final line, per-epoch lines, checkpoint
"$SCADLES" train -c "$tmp/synth.json" >"$tmp/out" 2>"$tmp/err" || {
        cat "$tmp/err"; fail "train exited $?"; }
cat "$tmp/out"
grep -q '^epoch 3/3: .*test loss' "$tmp/out" || fail "no per-epoch test line"
line=$(grep '^test accuracy: ' "$tmp/out") || fail "no final accuracy line"
acc=$(echo "$line" | sed -E 's/^test accuracy: ([0-9.]+) \(([0-9]+)\/500\)$/\1/')
[ "$acc" != "$line" ] || fail "malformed accuracy line: $line"
awk -v a="$acc" 'BEGIN { exit !(a > 0.5) }' || fail "accuracy $acc not above chance (0.2)"
[ -s "$tmp/synth.ckpt" ] || fail "no checkpoint written"
[ "$(head -c 4 "$tmp/synth.ckpt")" = "SCCK" ] || fail "checkpoint lacks its magic"
ls "$tmp" | grep -q '\.tmp\.' && fail "temporary checkpoint file left behind"

# progress lines on stderr when asked for
"$SCADLES" train -c "$tmp/synth.json" --epochs 1 --set train.progress_interval=0.000001 \
        --set 'train.checkpoint=""' 2>"$tmp/err" >/dev/null || fail "progress run failed"
grep -qE '^epoch 1/1  step [0-9]+ \([0-9]+/63\)  loss [0-9.]+  train acc [0-9.]+  [0-9]+ samples/s  lr ' \
        "$tmp/err" || fail "no progress line in: $(cat "$tmp/err")"

# 2. same seed, same run
"$SCADLES" train -c "$tmp/synth.json" --set "train.checkpoint=\"$tmp/again.ckpt\"" \
        >"$tmp/out2" 2>/dev/null || fail "second run failed"
cmp -s "$tmp/synth.ckpt" "$tmp/again.ckpt" || fail "same seed gave a different model"

# 3. eval reproduces the final accuracy
"$SCADLES" eval -c "$tmp/synth.json" --checkpoint "$tmp/synth.ckpt" >"$tmp/eval" 2>"$tmp/err" ||
        { cat "$tmp/err"; fail "eval failed"; }
[ "$(cat "$tmp/eval")" = "$line" ] || fail "eval gave '$(cat "$tmp/eval")', train '$line'"

# 4. resume: 2 epochs then 2 more equals a straight 4-epoch run (constant lr,
#    so the schedule horizon does not depend on the epoch count)
const='optim.schedule.type="constant"'
"$SCADLES" train -c "$tmp/synth.json" --set "$const" --epochs 2 \
        --set "train.checkpoint=\"$tmp/two.ckpt\"" >/dev/null 2>&1 || fail "2-epoch run failed"
"$SCADLES" train -c "$tmp/synth.json" --set "$const" --epochs 4 --resume "$tmp/two.ckpt" \
        --set "train.checkpoint=\"$tmp/resumed.ckpt\"" >"$tmp/out3" 2>"$tmp/err" ||
        { cat "$tmp/err"; fail "resume failed"; }
grep -q '^epoch 3/4' "$tmp/out3" || fail "resume did not train epoch 3"
grep -q '^epoch 2/4' "$tmp/out3" && fail "resume trained epoch 2 again"
"$SCADLES" train -c "$tmp/synth.json" --set "$const" --epochs 4 \
        --set "train.checkpoint=\"$tmp/straight.ckpt\"" >"$tmp/out4" 2>&1 ||
        fail "4-epoch run failed"
cmp -s "$tmp/resumed.ckpt" "$tmp/straight.ckpt" || fail "resumed run differs from a straight one"
[ "$(tail -n 1 "$tmp/out3")" = "$(grep '^test accuracy' "$tmp/out4")" ] ||
        fail "resumed and straight runs report different accuracies"

# 5. errors: configuration -> 2 naming the JSON path; bad checkpoint -> 1 or 2
"$SCADLES" train -c "$tmp/synth.json" --set 'model.layers[3].units=6' >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "wrong output count did not exit 2"
grep -q '\$\.model' "$tmp/err" || fail "no JSON path in: $(cat "$tmp/err")"
"$SCADLES" train -c "$tmp/synth.json" --set 'model.input=[1,3,3]' \
        --set 'model.layers[1]={"type":"conv2d","filters":2,"kernel":5}' >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "bad layer shape did not exit 2"
grep -q '\$\.model\.layers\[1\] (conv2d)' "$tmp/err" || fail "layer error: $(cat "$tmp/err")"
"$SCADLES" train -c "$tmp/synth.json" --set 'model.layers[1].units=33' \
        --resume "$tmp/synth.ckpt" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "resume into another model did not exit 2"
grep -q 'units 32, configured model has 33' "$tmp/err" || fail "mismatch: $(cat "$tmp/err")"
head -c 100 "$tmp/synth.ckpt" >"$tmp/cut.ckpt"
"$SCADLES" eval -c "$tmp/synth.json" --checkpoint "$tmp/cut.ckpt" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "truncated checkpoint did not exit 1"
grep -q 'cut.ckpt: checkpoint truncated' "$tmp/err" || fail "truncation: $(cat "$tmp/err")"
"$SCADLES" train -c "$tmp/synth.json" --set optim.lr=1e6 >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "divergence did not exit 1"
grep -q 'diverged' "$tmp/err" || fail "divergence: $(cat "$tmp/err")"
"$SCADLES" train --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option did not exit 2"
"$SCADLES" train --help | grep -q -- '--resume' || fail "help lacks --resume"

# 6. SIGINT saves a checkpoint mid-epoch and stops with 130; resuming from it
#    ends exactly where an uninterrupted run does
cat >"$tmp/big.json" <<JSON
{
  "model": {"input": [64],
            "layers": [{"type": "dense", "units": 64}, {"type": "relu"},
                       {"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 5}]},
  "optim": {"lr": 0.01, "momentum": 0.9},
  "train": {"epochs": 1000, "batch": 16, "seed": 3, "checkpoint": "$tmp/int.ckpt",
            "progress_interval": 0},
  "data": {"source": "synthetic",
           "synthetic": {"train": 20000, "test": 200, "classes": 5, "noise": 3.0}}
}
JSON
"$SCADLES" train -c "$tmp/big.json" >/dev/null 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/int.ckpt" ] && break; sleep 0.1; done
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || { cat "$tmp/err"; fail "SIGINT exit status $rc, expected 130"; }
grep -q 'interrupted at epoch .*checkpoint saved' "$tmp/err" || fail "no interruption message"
grep interrupted "$tmp/err"
epoch=$(sed -nE 's/.*interrupted at epoch ([0-9]+) step.*/\1/p' "$tmp/err")
[ -n "$epoch" ] || fail "cannot read the interrupted epoch"
"$SCADLES" train -c "$tmp/big.json" --epochs "$epoch" --resume "$tmp/int.ckpt" \
        --set "train.checkpoint=\"$tmp/int-resumed.ckpt\"" >/dev/null 2>"$tmp/err" ||
        { cat "$tmp/err"; fail "resume after SIGINT failed"; }
"$SCADLES" train -c "$tmp/big.json" --epochs "$epoch" \
        --set "train.checkpoint=\"$tmp/int-straight.ckpt\"" >/dev/null 2>&1 ||
        fail "uninterrupted run failed"
cmp -s "$tmp/int-resumed.ckpt" "$tmp/int-straight.ckpt" ||
        fail "run resumed mid-epoch $epoch differs from an uninterrupted one"
cat "$tmp/err"

# 7. batchnorm: the checkpoint (version 2) carries the running statistics, so
#    eval reproduces the final accuracy and a resumed run equals a straight one
bn='model.layers=[{"type":"flatten"},{"type":"dense","units":32},{"type":"batchnorm"},{"type":"relu"},{"type":"dense","units":5}]'
"$SCADLES" train -c "$tmp/synth.json" --set "$bn" --set "train.checkpoint=\"$tmp/bn.ckpt\"" \
        >"$tmp/bn.out" 2>"$tmp/err" || { cat "$tmp/err"; fail "batchnorm train failed"; }
bnline=$(grep '^test accuracy: ' "$tmp/bn.out") || fail "no batchnorm accuracy line"
echo "batchnorm: $bnline"
[ "$(od -An -tu1 -j4 -N1 "$tmp/bn.ckpt" | tr -d ' ')" = 2 ] || fail "batchnorm checkpoint not version 2"
[ "$(od -An -tu1 -j4 -N1 "$tmp/synth.ckpt" | tr -d ' ')" = 1 ] || fail "plain checkpoint not version 1"
"$SCADLES" eval -c "$tmp/synth.json" --set "$bn" --checkpoint "$tmp/bn.ckpt" >"$tmp/eval" \
        2>"$tmp/err" || { cat "$tmp/err"; fail "batchnorm eval failed"; }
[ "$(cat "$tmp/eval")" = "$bnline" ] || fail "batchnorm eval gave '$(cat "$tmp/eval")', train '$bnline'"
grep -q 'running statistics' "$tmp/err" && fail "eval warned about statistics: $(cat "$tmp/err")"
"$SCADLES" train -c "$tmp/synth.json" --set "$bn" --set "$const" --epochs 2 \
        --set "train.checkpoint=\"$tmp/bn2.ckpt\"" >/dev/null 2>&1 || fail "batchnorm 2 epochs failed"
"$SCADLES" train -c "$tmp/synth.json" --set "$bn" --set "$const" --epochs 4 --resume "$tmp/bn2.ckpt" \
        --set "train.checkpoint=\"$tmp/bn-resumed.ckpt\"" >/dev/null 2>"$tmp/err" ||
        { cat "$tmp/err"; fail "batchnorm resume failed"; }
"$SCADLES" train -c "$tmp/synth.json" --set "$bn" --set "$const" --epochs 4 \
        --set "train.checkpoint=\"$tmp/bn-straight.ckpt\"" >/dev/null 2>&1 || fail "batchnorm 4 epochs failed"
cmp -s "$tmp/bn-resumed.ckpt" "$tmp/bn-straight.ckpt" ||
        fail "batchnorm run resumed after 2 epochs differs from a straight one"
# a checkpoint of the model without batchnorm does not load into one with it
"$SCADLES" eval -c "$tmp/synth.json" --set "$bn" --checkpoint "$tmp/synth.ckpt" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "plain checkpoint into the batchnorm model did not exit 2"
echo "train_synthetic: ok"
