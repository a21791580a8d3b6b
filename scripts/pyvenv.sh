#!/usr/bin/env bash
# Makes a Python virtual environment under the build folder (BUILD/venv,
# created on first use) hold the given PyPI packages, and prints its python
# on stdout. Tests that need Python packages Debian does not ship (onnxruntime)
# call it, so a fresh clone needs nothing installed by hand.
# Usage: scripts/pyvenv.sh BUILD PACKAGE ...
set -eu
[ $# -ge 2 ] || { echo "usage: scripts/pyvenv.sh BUILD PACKAGE ..." >&2; exit 2; }
build=$1
shift
venv=$build/venv
py=/usr/bin/python3 # Debian's (scripts/deps.sh installs python3-venv)
[ -x "$py" ] || py=$(command -v python3) || { echo "pyvenv: no python3" >&2; exit 1; }
if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
	rm -rf "$venv"
	"$py" -m venv "$venv" >&2 || {
		echo "pyvenv: '$py -m venv $venv' failed (is python3-venv installed? scripts/deps.sh)" >&2
		exit 1
	}
fi
# Already satisfied requirements need no download.
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" >&2 || {
	echo "pyvenv: pip could not install $* into $venv" >&2
	exit 1
}
cd "$venv/bin" && echo "$PWD/python"
