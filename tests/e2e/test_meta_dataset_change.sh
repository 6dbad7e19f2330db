# The silently grown dataset and the changed hyperparameter: two runs whose data folder gained a
# file and whose learning rate changed; the diff names the added file and the key with both values.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
python3 - "$T/data" <<'PYEOF'
import random, sys
rng = random.Random(3)
for part in range(1, 5):
    with open(f"{sys.argv[1]}/part-00{part}.csv", "w") as f:
        f.write("x1,x2,x3,label\n")
        for _ in range(60):
            y = rng.randrange(2)
            f.write(",".join(f"{rng.gauss(y * 2.0, 1.0):.4f}" for _ in range(3)) + f",{y}\n")
PYEOF
mv "$T/data/part-004.csv" "$T/part-004.csv"
cat >"$T/c.json" <<'JSON'
{"seed": 3, "data": {"kind": "csv", "path": "data"},
 "model": {"hidden": [8]}, "training": {"batch_size": 16, "epochs": 2}}
JSON
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/a" -q
grep -q '"path": "part-003.csv"' "$T/a/manifest.json" || fail "data files not recorded one by one"
# The manifest's fingerprint is what `reprun hash` says of the folder.
fp=$(json_get "$T/a/manifest.json" data.fingerprint)
expect_rc 0 "$REPRUN" hash "$T/data"
grep -q "^$fp " "$T/out" || fail "manifest fingerprint $fp differs from reprun hash: $(cat "$T/out")"

cp "$T/part-004.csv" "$T/data/"
size=$(stat -c %s "$T/data/part-004.csv")
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/b" -q --set optimizer.lr=0.1
expect_rc 1 "$REPRUN" diff "$T/a" "$T/b"
pretty=$(python3 -c "print(f'{int(\"$size\"):,}')")
grep -q "\[dataset\] dataset differs: 1 file added (part-004.csv, $pretty bytes), 0 removed, 0 changed" "$T/out" ||
  fail "added file not named: $(grep -i dataset "$T/out")"
grep -q '\[config\] config.optimizer.lr: 0.05 -> 0.1' "$T/out" || fail "lr change not named"
grep -q 'runs part at step 1 (data order)' "$T/out" || fail "expected data order divergence: $(head -1 "$T/out")"
first_meta=$(grep -m1 -E '^  \[' "$T/out")
[[ $first_meta == *"[dataset]"* ]] || fail "dataset must rank first, got: $first_meta"

# Resuming after the data changed is refused.
run_rc "$REPRUN" train "$T/c.json" -o "$T/k" -q --kill-after-step 3
rm "$T/data/part-004.csv"
run_rc "$REPRUN" train "$T/c.json" -o "$T/k2" -q --kill-after-step 3
cp "$T/part-004.csv" "$T/data/"
expect_error 'the dataset changed since this run started' "$REPRUN" train --resume "$T/k2" -q
pass
