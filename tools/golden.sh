#!/usr/bin/env bash
# Golden digests: what a refactor must not change. Trains every example config and a few variants
# that reach the other code paths (trace full, accumulation, dropout, tanh, Adam, weight decay),
# and renders `reprun diff` of testdata/runs/base against every other hand-made run in every
# report format. Prints one "sha256  name" line per file (and the exit code of each diff), so two
# builds compare with a plain `diff`:
#   tools/golden.sh build/reprun OUT_DIR > before.txt   ... change ...   tools/golden.sh ... > after.txt
# With a third argument `train`, only the training digests (what tests/e2e/test_golden_bits.sh
# pins against testdata/golden/train.sha256). GOLDEN_TRAIN_ARGS adds flags to every training run
# (tests/gpu/test_train_cuda_golden.sh: "--device cuda", which must give the same digests).
set -euo pipefail
# The lines come out in the glob's order, which follows the locale's collation ("quickstart/" sorts
# before "quickstart-adam-tanh/" under en_US.UTF-8 and after it in C): the pinned order is C's.
export LC_ALL=C
usage="usage: tools/golden.sh REPRUN OUT_DIR [train]"
reprun=$(realpath "${1:?$usage}")
out=$(realpath -m "${2:?$usage}")
what=${3:-all}
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"
mkdir -p "$out/train" "$out/diff"

train() { # NAME CONFIG [--set KEY=VALUE]...
  local name=$1 config=$2
  shift 2
  # shellcheck disable=SC2086 # GOLDEN_TRAIN_ARGS is a list of flags
  "$reprun" train "$config" -o "$out/train/$name" -q --threads 2 ${GOLDEN_TRAIN_ARGS:-} "$@"
}
train quickstart "$src/examples/quickstart.json"
train quickstart-full-acc4 "$src/examples/quickstart.json" --set determinism.trace=full --set training.accumulation=4
train quickstart-adam-tanh "$src/examples/quickstart.json" --set optimizer.name=adam --set optimizer.lr=0.002 \
  --set optimizer.momentum=null --set optimizer.weight_decay=0.01 --set model.activation=tanh
train wine "$src/examples/wine-csv.json"
train wine-sgd-wd "$src/examples/wine-csv.json" --set optimizer.name=sgd --set optimizer.lr=0.05 \
  --set optimizer.weight_decay=0.001 --set determinism.trace=full
train mnist-mlp "$src/examples/mnist-mlp.json"
for d in "$out"/train/*/; do
  n=$(basename "$d")
  for f in steps.jsonl evals.jsonl; do
    [[ -f $d/$f ]] && echo "$(sha256sum <"$d/$f" | cut -c1-64)  train/$n/$f"
  done
done

[[ $what == train ]] && exit 0

# Reports: relative paths from testdata/runs, so that no machine path enters them.
cd "$src/testdata/runs"
for other in */; do
  other=${other%/}
  [[ $other == base ]] && continue
  for f in text json markdown junit html; do
    rc=0
    NO_COLOR=1 "$reprun" diff base "$other" --format "$f" >"$out/diff/$other.$f" 2>"$out/diff/$other.$f.err" || rc=$?
    echo "$(cat "$out/diff/$other.$f" "$out/diff/$other.$f.err" | sha256sum | cut -c1-64)  diff/base-vs-$other.$f (exit $rc)"
  done
done
diff_pair() { # NAME A B [FLAGS...]
  local name=$1 a=$2 b=$3 rc=0
  shift 3
  NO_COLOR=1 "$reprun" diff "$a" "$b" "$@" >"$out/diff/$name" 2>&1 || rc=$?
  echo "$(sha256sum <"$out/diff/$name" | cut -c1-64)  diff/$name (exit $rc)"
}
diff_pair tolerance-max-ulps-1.text tolerance_a tolerance_b --max-ulps 1
diff_pair tolerance-rtol.json tolerance_a tolerance_b --rtol 1e-15 --format json
diff_pair bare-logs.text base/steps.jsonl computation/steps.jsonl
diff_pair meta-ignored.text base meta_changed --ignore-meta data --ignore-meta config.optimizer.lr
