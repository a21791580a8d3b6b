#!/usr/bin/env bash
# results_check.sh — scripts/results-check.py, the comparison `make
# check-results` makes: the check blocks as another processor printed them
# (the AVX2-only run of the same binary) hold their claims; a median moved
# past its tolerance, a flipped verdict, a count of seeds moved by two, a
# plain figure moved past 10% and a missing row each fail, naming the line
# with a -/+ diff. The fixture tests/data/results/check-blocks.md is a frozen
# copy of docs/RESULTS.md's check blocks; the live document is checked too.
set -u
tmp=$(mktemp -d /tmp/sc_rcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check=scripts/results-check.py
ref=tests/data/results/check-blocks.md

# expect RC NAME FILE [GREP]: the check of FILE against the fixture exits RC,
# and its output has GREP.
expect() {
	python3 "$check" "$ref" "$3" >"$tmp/$2.out" 2>&1
	rc=$?
	[ "$rc" -eq "$1" ] || { cat "$tmp/$2.out"; fail "$2: exit $rc, want $1"; }
	[ -z "${4:-}" ] || grep -qF -- "$4" "$tmp/$2.out" || { cat "$tmp/$2.out"; fail "$2: no '$4' in the output"; }
	echo "$2: exit $rc as expected"
}
# edit NAME SED-EXPR: the fixture with one edit, as $tmp/NAME.md.
edit() {
	sed "$2" "$ref" >"$tmp/$1.md"
	cmp -s "$ref" "$tmp/$1.md" && fail "$1: the edit changed nothing"
	return 0
}

expect 0 same "$ref" "0 figures moved"

# The lines that differed on an AVX2-only EPYC (OpenBLAS core Zen) from the
# AVX-512 run the fixture holds: the same claims.
edit avx2 's/2\.52 \[1\.79, 4\.48\]; to the common target (median 0\.85): 2\.12 \[1\.94, 4\.48\]; final accuracy vs BSP +1\.65/2.52 [1.52, 4.48]; to the common target (median 0.85): 2.18 [1.99, 4.48]; final accuracy vs BSP +1.62/
s/      116 2\.52 \[1\.79, 4\.48\]                276 1\.63 \[1\.30, 2\.09\]               0\.8664/      118 2.52 [1.52, 4.48]                280 1.44 [0.95, 2.09]               0.8652/
s/1633530     0\.869/1633530      0.87/
s/^`scadles 0\.1\.0`/`scadles 0.1.0` · OpenBLAS 0.3.21 Zen, nn avx2, AMD EPYC/'
expect 0 avx2 "$tmp/avx2.md" "9 figures moved within tolerance"

# The headline median past max(5%, a quarter of the seeds' range): 2.52 with
# range 2.69 allows 0.67.
edit median 's/| 2\.52 \[1\.79, 4\.48\];/| 3.20 [1.79, 4.48];/'
expect 1 median "$tmp/median.md" "2.52 [1.79, 4.48] -> 3.20 [1.79, 4.48]: moved 0.68, allowed 0.6725"
grep -q '^  - | ScaDLES (full) vs BSP' "$tmp/median.out" && grep -q '^  + | ScaDLES (full) vs BSP' "$tmp/median.out" ||
	fail "median: no -/+ lines in the report"
# Inside it: passes.
edit median_in 's/| 2\.52 \[1\.79, 4\.48\];/| 3.15 [1.79, 4.48];/'
expect 0 median_in "$tmp/median_in.md"

# A verdict flipped, its figures untouched.
edit verdict 's/| \*\*short\*\*: median 2\.52x/| met (median 2.52x/'
expect 1 verdict "$tmp/verdict.md" "the words differ"

# A count of seeds: one seed is tolerated, two are not.
edit count1 's/470 0\.65 \[0\.57, 0\.72\] (4 of 5)/470 0.65 [0.57, 0.72] (3 of 5)/'
expect 0 count1 "$tmp/count1.md"
edit count2 's/470 0\.65 \[0\.57, 0\.72\] (4 of 5)/470 0.65 [0.57, 0.72] (2 of 5)/'
expect 1 count2 "$tmp/count2.md" "(4 of 5) -> (2 of 5)"

# A plain figure (BSP's time to target): 10% is tolerated, more is not.
edit plain_in 's/^S10   bsp            0\.05      -      272/S10   bsp            0.05      -      298/'
expect 0 plain_in "$tmp/plain_in.md"
edit plain 's/^S10   bsp            0\.05      -      272/S10   bsp            0.05      -      300/'
expect 1 plain "$tmp/plain.md" "272 -> 300: moved 28, allowed 27.2"

# Accuracy points: one point is tolerated.
edit points 's/final accuracy vs BSP +1\.65 points/final accuracy vs BSP +2.90 points/'
expect 1 points "$tmp/points.md" "+1.65 -> +2.90"

# A row gone.
edit row '/^S10   bsp-lr0\.1 /d'
expect 1 row "$tmp/row.md" "lines in"

# A command changed.
edit cmd 's/HORIZON=600 examples\/reproduce\/buffers\.sh/HORIZON=300 examples\/reproduce\/buffers.sh/'
expect 1 cmd "$tmp/cmd.md" "the command differs"

# The live document: against itself, and with its first median doubled.
python3 "$check" docs/RESULTS.md docs/RESULTS.md >"$tmp/doc.out" || { cat "$tmp/doc.out"; fail "docs/RESULTS.md against itself"; }
awk 'done == 0 && /^\| .* \[[0-9.]+, [0-9.]+\]/ && match($0, /\| [0-9.]+ \[/) {
	m = substr($0, RSTART + 2, RLENGTH - 4); $0 = substr($0, 1, RSTART + 1) (m * 2 + 10) substr($0, RSTART + RLENGTH - 2); done = 1 }
	{ print }' docs/RESULTS.md >"$tmp/doc2.md"
cmp -s docs/RESULTS.md "$tmp/doc2.md" && fail "found no median to move in docs/RESULTS.md"
python3 "$check" docs/RESULTS.md "$tmp/doc2.md" >"$tmp/doc2.out"
[ $? -eq 1 ] || { cat "$tmp/doc2.out"; fail "docs/RESULTS.md with a median moved passed"; }

# Bad input: exit 2.
python3 "$check" "$ref" /nonexistent >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing file did not exit 2"
python3 "$check" README.md "$ref" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a document without check blocks did not exit 2"
echo ok
