#!/usr/bin/env bash
# results-md.sh DIR PREFIX FILE — prints FILE (docs/RESULTS.md) with every
# generated block whose table is in DIR replaced.  A block is the lines
# between "<!-- generated: PREFIXNAME -->" and "<!-- end generated -->"; it
# becomes the binary's version, the platform it ran on (processor, OpenBLAS
# core, nn kernels) and the command from DIR/NAME.cmd, then
# DIR/NAME.md as it is or DIR/NAME.txt in a code block.  Blocks of another
# prefix, or whose NAME.cmd is not in DIR, are kept as they are.
# `make results` writes the result back (DIR build/reproduce, no prefix);
# `make check-results` diffs it against FILE (DIR build/check-results,
# prefix "check-").
set -euo pipefail
dir=$1
prefix=$2
file=$3
grep -q '^<!-- generated: ' "$file" || { echo "$file: no generated blocks" >&2; exit 1; }
name=
while IFS= read -r line; do
	if [ -z "$name" ]; then
		printf '%s\n' "$line"
		case $line in
		"<!-- generated: $prefix"*" -->")
			n=${line#"<!-- generated: $prefix"}
			n=${n%" -->"}
			case $n in *[!a-z0-9_-]* | "") continue ;; esac
			[ -f "$dir/$n.cmd" ] || continue
			name=$n
			# NAME.cmd: the version, the platform, the command (older
			# files: the version and the command).
			mapfile -t c <"$dir/$name.cmd"
			if [ ${#c[@]} -ge 3 ]; then
				printf '\n`%s` · %s · `%s`\n\n' "${c[0]}" "${c[1]}" "${c[2]}"
			else
				printf '\n`%s` · `%s`\n\n' "${c[0]}" "${c[1]:-}"
			fi
			if [ -f "$dir/$name.md" ]; then
				cat "$dir/$name.md"
			else
				printf '```\n'
				cat "$dir/$name.txt"
				printf '```\n'
			fi
			echo
			;;
		esac
	elif [ "$line" = "<!-- end generated -->" ]; then
		printf '%s\n' "$line"
		name=
	fi
done <"$file"
[ -z "$name" ] || { echo "$file: block $prefix$name has no end line" >&2; exit 1; }
