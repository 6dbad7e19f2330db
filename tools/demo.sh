#!/usr/bin/env bash
# `make demo`: the main job on the embedded default data, as a newcomer would run it.
set -euo pipefail
reprun=${1:-build/reprun}
work=$(mktemp -d "${TMPDIR:-/tmp}/reprun-demo.XXXXXX")
echo "== reprun train examples/quickstart.json (synthetic data embedded in reprun)"
"$reprun" train examples/quickstart.json -o "$work/quickstart"
echo
echo "== the run record it wrote"
ls -1 "$work/quickstart"
echo
echo "run directory kept in $work"
