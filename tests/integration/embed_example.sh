#!/usr/bin/env bash
# examples/embed as a new user builds and runs it (README, docs/PLUGIN.md):
# a program of its own that pushes Fashion-MNIST's training images into a
# worker through the public C API, linked against the build's libscadles.
# One pass: every record pushed is trained, the test accuracy is reported
# (>= 0.80), and the summary's mean latency from hand-over to training is
# below the run's own duration.
set -eu
BUILD=${BUILD:-build}
top=$PWD
. "$(dirname "$0")/worker_common.inc"
use_plugin
[ -e /usr/share/datasets/fashion-mnist ] || { echo "Fashion-MNIST is not installed"; exit 77; }
# A copy of the example, built with its own Makefile against this build.
case "$BUILD" in /*) lib=$BUILD ;; *) lib=$top/$BUILD ;; esac
cp -r examples/embed "$tmp/embed"
make -s -C "$tmp/embed" TOP="$top" LIBDIR="$lib" embed >"$tmp/make.out" 2>&1 ||
	{ cat "$tmp/make.out"; fail "examples/embed does not build"; }
"$tmp/embed/embed" examples/kcat/job.json 1 >"$tmp/out" 2>"$tmp/err" ||
	{ tail -n 5 "$tmp/err"; fail "embed exited $?"; }
final=$(sed -n 's/^final statistics: //p' "$tmp/out")
[ -n "$final" ] || fail "no final statistics: $(tail -n 3 "$tmp/out")"
j() { printf '%s' "$final" | jq -r "$1"; }
[ "$(j .queue.pushed)" -eq 60000 ] || fail "pushed $(j .queue.pushed), expected 60000"
[ "$(j .trained)" -eq 60000 ] || fail "trained $(j .trained) of 60000"
[ "$(j .identity_ok)" = true ] || fail "record accounting does not add up"
acc=$(j .test_accuracy)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.80) }' || fail "test accuracy $acc < 0.80"
lat=$(j .mean_latency_s)
el=$(j .elapsed)
awk -v l="$lat" -v e="$el" 'BEGIN { exit !(l >= 0 && l < e) }' ||
	fail "mean latency $lat s is not within the run's $el s"
echo "embed_example: 60000 pushed = trained, test accuracy $acc, mean latency $lat s of a $el s run"
