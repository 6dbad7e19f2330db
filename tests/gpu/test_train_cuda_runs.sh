# CPU and GPU runs are one run: a folder of CSV files trained on both gives the same step log and
# `reprun diff` says IDENTICAL (the device is recorded, not counted); a run killed on the GPU
# resumes on the CPU, and one killed on the CPU resumes on the GPU, with the bits of an
# uninterrupted run; `reprun check --vary device=cpu,cuda` passes.
source "$(dirname "$0")/cuda_lib.sh"
mkdir -p "$T/data"
python3 - "$T/data" <<'PY'
import random, sys
random.seed(11)
for part in range(3):
    with open(f"{sys.argv[1]}/part-00{part}.csv", "w") as f:
        for i in range(400):
            c = random.randrange(4)
            f.write(",".join(f"{random.gauss(c * 0.7, 1.0):.5f}" for _ in range(9)) + f",{c}\n")
PY
cat >"$T/csv.json" <<'JSON'
{"seed": 3, "data": {"kind": "csv", "path": "data", "validation_fraction": 0.2, "normalize": "standard"},
 "model": {"hidden": [48, 24], "activation": "tanh", "dropout": 0.2},
 "optimizer": {"name": "adam", "lr": 0.003, "weight_decay": 0.001},
 "training": {"batch_size": 40, "epochs": 4, "accumulation": 4, "checkpoint_every": 20, "eval_every": 25}}
JSON
expect_rc 0 "$REPRUN" train "$T/csv.json" -o "$T/cpu" -q
expect_rc 0 "$REPRUN" train "$T/csv.json" -o "$T/gpu" -q --device cuda
same_steps "$T/cpu" "$T/gpu" "CSV folder, CPU vs GPU"
expect_rc 0 "$REPRUN" diff "$T/cpu" "$T/gpu"
grep -q '^IDENTICAL' "$T/out" || fail "diff of the CPU and GPU runs: $(head -3 "$T/out")"

# Killed on the GPU after step 30, resumed on the CPU (and the other way round).
expect_rc 137 "$REPRUN" train "$T/csv.json" -o "$T/g2c" -q --device cuda --kill-after-step 30
expect_rc 0 "$REPRUN" train --resume "$T/g2c" -q --device cpu
same_steps "$T/cpu" "$T/g2c" "killed on the GPU, resumed on the CPU"
grep -q '"device": "cpu"' "$T/g2c/manifest.json" || fail "the resume's device is not recorded"
expect_rc 137 "$REPRUN" train "$T/csv.json" -o "$T/c2g" -q --kill-after-step 30
expect_rc 0 "$REPRUN" train --resume "$T/c2g" -q --device cuda
same_steps "$T/cpu" "$T/c2g" "killed on the CPU, resumed on the GPU"

# A few hundred mnist-mlp steps with SGD, accumulation 1 and 4, checked by `reprun check`.
cp "$EX/mnist-mlp.json" "$T/mnist.json"
json_edit "$T/mnist.json" training.epochs:delete training.steps+=300 training.checkpoint_every=100
expect_rc 0 "$REPRUN" check "$T/mnist.json" -o "$T/chk" -q --vary device=cpu,cuda,cuda --vary accumulation=1,1,4 \
  --format json
python3 - "$T/out" <<'PY' || fail "check --vary device=cpu,cuda: $(head -c 2000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] is True and len(r["pairs"]) == 2, r["verdict"]
PY
pass
