#!/usr/bin/env bash
# summary.sh — the summary table of docs/RESULTS.md from the per-run tables
# the claim scripts left in $OUT (scadles.tsv, buffers.tsv; the other claims'
# scripts leave their rows in <claim>-summary.md): per claim the
# paper's figure, the median [min, max] over the seeds and a verdict on the
# median.  Claims whose table is not in $OUT get a "not in this run" row.  Writes
# $OUT/summary.md (markdown, for scripts/results-md.sh) and summary.cmd
# (SUMMARY_CMD: the command to show there).
#   OUT=build/reproduce examples/reproduce/summary.sh
. "$(dirname "$0")/lib.sh"
TAG=summary

seeds() { tsv_col "$1" seed "${@:2}" | sort -un | tr '\n' ' ' | sed 's/ $//'; }

{
	echo "| claim | paper | measured here (ratios: median [min, max] over the seeds) | seeds | verdict on the median |"
	echo "|---|---|---|---|---|"
	f=$OUT/scadles.tsv
	if [ -f "$f" ]; then
		target=$(sed -n 's/.*target test accuracy \([0-9.]*\),.*/\1/p' "$OUT/scadles.txt")
		for s in $(tail -n +2 "$f" | cut -f1 | awk '!seen[$1]++'); do
			for c in full full-auto weighted weighted-auto; do
				[ -n "$(tsv_col "$f" seed set="$s" config="$c")" ] || continue
				case $s:$c in
				S10:full*) p=3.29 pl="3.29x (full ScaDLES, S10)" ;;
				S10:weighted*) p=3.6 pl="3.6x (weighted alone, S10)" ;;
				S1:weighted*) p=3.33 pl="3.33x (weighted alone, S1)" ;;
				*:full*) p=1.15 pl="1.15x-3.29x (full ScaDLES, other sets)" ;;
				*) continue ;;
				esac
				sp=$(med_ratio $(tsv_col "$f" speedup set="$s" config="$c"))
				sc=$(med_ratio $(tsv_col "$f" sp_common set="$s" config="$c"))
				cm=$(med $(tsv_col "$f" common set="$s" config="$c"))
				ad=$(med $(tsv_col "$f" acc_diff set="$s" config="$c"))
				# Where the target ratio is defined on fewer than half the seeds
				# (BSP or the config never reached it), judge the common target's.
				v=$(verdict "${sp%% *}" "$p" x)
				if [ "$(echo "$sp" | awk '{ k = n = 1 } /of/ { k = $(NF - 2); sub(/^\(/, "", k)
					n = $NF; sub(/\)$/, "", n) } $1 == "-" || 2 * k < n { print 1 }')" = 1 ]; then
					v="$(verdict "${sc%% *}" "$p" x) at the common target ($target not reached on half the seeds or more)"
				fi
				echo "| ScaDLES ($c) vs BSP, $s, time to $target test accuracy | $pl |" \
					"$sp; to the common target (median $cm): $sc; final accuracy vs BSP" \
					"$(awk -v a="$ad" 'BEGIN { printf "%+.2f", a * 100 }') points |" \
					"$(seeds "$f" set="$s" config="$c") | $v |"
			done
		done
	else
		echo "| ScaDLES vs BSP, time to target | 3.29x (S10) | no scadles.tsv in OUT when generated (not rerun with these settings) | - | - |"
	fi
	f=$OUT/buffers.tsv
	if [ -f "$f" ]; then
		h=$(sed -n 's/.*samples\/s, \([0-9]*\) virtual s.*/\1/p' "$OUT/buffers.txt")
		for s in $(tail -n +2 "$f" | cut -f1 | awk '!seen[$1]++'); do
			r=$(med_ratio $(tsv_col "$f" ratio_vs_bsp set="$s"))
			rs=$(med_ratio $(tsv_col "$f" ratio_vs_scad set="$s"))
			echo "| truncation vs persistence, peak samples buffered, $s, $h virtual s |" \
				"848x-9429x fewer | vs BSP + persistence: $r; vs ScaDLES + persistence: $rs |" \
				"$(seeds "$f" set="$s") | $(verdict "${r%% *}" 848 x) (grows linearly with the horizon) |"
		done
	else
		echo "| truncation vs persistence buffers | 848x-9429x | no buffers.tsv in OUT when generated (not rerun with these settings) | - | - |"
	fi
	# The other claims' scripts write their own rows to $OUT/<claim>-summary.md.
	for c in "noniid|non-IID + injection|within 2% of IID" \
		"compression|adaptive Top-k (CR 0.1, delta 0.3) vs no compression, uplink bytes and accuracy|CR 0.1, delta 0.3 as the final configuration; accuracy change of full ScaDLES -0.06% to -4.18%" \
		"adacomp|AdaComp vs ASGD uplink bytes|191x at equal accuracy" \
		"adsp|ADSP vs best baseline, H >= 2|up to 62.4% sooner"; do
		IFS='|' read -r k claim paper <<<"$c"
		if [ -f "$OUT/$k-summary.md" ]; then
			cat "$OUT/$k-summary.md"
		else
			echo "| $claim | $paper | not in this run ($k.sh writes it: \`make reproduce\`, then \`make results\`) | - | - |"
		fi
	done
} >"$OUT/$TAG.md"
record "$TAG" "${SUMMARY_CMD:-OUT=$OUT examples/reproduce/summary.sh}"
cat "$OUT/$TAG.md"
