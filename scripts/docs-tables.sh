#!/usr/bin/env bash
# docs-tables.sh SCADLES FILE — prints FILE with the region between the
# lines "<!-- config tables: SECTIONS -->" and "<!-- end of config tables -->"
# replaced by `SCADLES config --markdown-sections SECTIONS` (the property
# tables of those sections, generated from core/conf_table.c). `make docs` writes
# the result back; `make check-docs` diffs it against FILE.
set -euo pipefail
scadles=$1
file=$2
begin=$(grep -n '^<!-- config tables: [a-z,]* -->$' "$file" | head -n 1) ||
	{ echo "$file: no '<!-- config tables: SECTIONS -->' line" >&2; exit 1; }
end=$(grep -n '^<!-- end of config tables -->$' "$file" | head -n 1 | cut -d: -f1) ||
	{ echo "$file: no '<!-- end of config tables -->' line" >&2; exit 1; }
line=${begin%%:*}
sections=$(echo "$begin" | sed 's/^[0-9]*:<!-- config tables: \([a-z,]*\) -->$/\1/')
[ "$end" -gt "$line" ] || { echo "$file: the end line comes first" >&2; exit 1; }
head -n "$line" "$file"
"$scadles" config --markdown-sections "$sections"
echo
tail -n +"$end" "$file"
