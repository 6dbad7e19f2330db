#!/usr/bin/env bash
# `make demo`: the main job on the embedded default data. First the CI gate on the quickstart
# config (train twice, compare, verdict), then the same config with reduction "atomic" so that a
# newcomer sees both answers, including where a real divergence starts.
set -uo pipefail
reprun=${1:-build/reprun}
work=$(mktemp -d "${TMPDIR:-/tmp}/reprun-demo.XXXXXX")

echo "== 1. reprun check examples/quickstart.json --vary threads=1,2"
echo "   (trains twice on the embedded synthetic data, in fresh processes, and compares every bit)"
"$reprun" check examples/quickstart.json -o "$work/ordered" --vary threads=1,2 -q | head -n 12
rc=${PIPESTATUS[0]}
echo "   exit code: $rc (0 = bitwise identical)"
[[ $rc == 0 ]] || { echo "demo: the ordered check should pass" >&2; exit 1; }

echo
echo "== 2. the same config with determinism.reduction=atomic (gradients summed in arrival order)"
"$reprun" check examples/quickstart.json -o "$work/atomic" --vary threads=4,4 \
  --set determinism.reduction=atomic -q --html "$work/atomic-report.html" | head -n 30
rc=${PIPESTATUS[0]}
echo "   exit code: $rc (1 = the runs differ)"
[[ $rc == 1 ]] || { echo "demo: the atomic check should find a difference" >&2; exit 1; }

echo
echo "== 3. reprun search examples/search-quickstart.json, with 1 job and with 2: the same trials and winner"
"$reprun" search examples/search-quickstart.json -o "$work/search-1" --jobs 1 -q | head -n 6
rc=${PIPESTATUS[0]}
[[ $rc == 0 ]] || { echo "demo: the search should complete" >&2; exit 1; }
"$reprun" search examples/search-quickstart.json -o "$work/search-2" --jobs 2 -q >/dev/null
"$reprun" diff "$work/search-1" "$work/search-2" | head -n 1
rc=${PIPESTATUS[0]}
echo "   exit code: $rc (0 = the two searches are bitwise identical)"
[[ $rc == 0 ]] || { echo "demo: the searches should be identical" >&2; exit 1; }

echo
echo "Run directories and an HTML report: $work"
