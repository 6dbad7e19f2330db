# diff of two built-in trainer runs counts only what can change its bits (issue 41, items 3 to 5).
# The same CSV under another path or name is no change; values the data decides are effects named
# under the data's cause; facts its guarantees make irrelevant (the working folder's git commit, a
# copy without git, OMP_NUM_THREADS and LANG, the core count, libc) are listed, not counted.
source "$(dirname "$0")/lib.sh"

# A table of 3 classes, 180 rows, made here; data/wine.csv is read by every config below.
mkdir -p "$T/w/data" "$T/w/sub"
python3 - "$T/w/data/wine.csv" <<'PY'
import sys
rows = ["f1,f2,f3,f4,label"]
for i in range(180):
    c = i % 3
    rows.append(f"{(i * 37) % 101 / 10 + c},{(i * 53) % 89 / 10 - c},{(i * 11) % 23 / 7},{c * 2 + (i % 5) / 10},{c}")
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
PY
cfg() { # cfg FILE DATA_PATH
  cat >"$1" <<JSON
{"seed": 3, "data": {"kind": "csv", "path": "$2", "validation_fraction": 0.25},
 "model": {"hidden": [8]}, "training": {"batch_size": 16, "epochs": 2}}
JSON
}
cd "$T/w" || fail "cd"
cfg rel.json data/wine.csv
cfg abs.json "$T/w/data/wine.csv"
cfg sub/up.json ../data/wine.csv
expect_rc 0 "$REPRUN" train rel.json -o runs/rel -q
expect_rc 0 "$REPRUN" train abs.json -o runs/abs -q
expect_rc 0 "$REPRUN" train sub/up.json -o runs/up -q

# Item 3. Before: "DIFFERENT: step records identical, but 1 metadata field differs" and
# "1. hyperparameters changed: data.path ...".
for b in abs up; do
  NO_COLOR=1 expect_rc 0 "$REPRUN" diff runs/rel runs/$b
  grep -q '^IDENTICAL: 19 step records bitwise identical, metadata matches$' "$T/out" || fail "rel vs $b: $(cat "$T/out")"
  grep -q "^    config.data.path: \"data/wine.csv\" -> .* (the data's path only: its fingerprint is equal)$" "$T/out" ||
    fail "rel vs $b: the path is not listed as not counted: $(cat "$T/out")"
done
# Renamed, the same bytes. Before: "the training data changed (added in B: wine_v2.csv; missing in B: wine.csv)".
cp data/wine.csv data/wine_v2.csv
cfg v2.json data/wine_v2.csv
expect_rc 0 "$REPRUN" train v2.json -o runs/v2 -q
NO_COLOR=1 expect_rc 0 "$REPRUN" diff runs/rel runs/v2
grep -q '^IDENTICAL: ' "$T/out" || fail "renamed: $(cat "$T/out")"
grep -q '^    data.files: 1 file added (wine_v2.csv, .*(the same bytes in the same order under other file names: the same rows)$' "$T/out" ||
  fail "renamed: the files are not listed as not counted: $(cat "$T/out")"

# Item 4: five rows appended to the file. Before, cause 2: "the configuration differs
# (plan.train_samples 135 -> 139 and plan.val_samples 45 -> 46) fix: use the same config file and
# the same --set overrides".
cp -r data data5
cfg five.json data5/wine.csv
expect_rc 0 "$REPRUN" train five.json -o runs/before -q
tail -n 5 data/wine.csv >>data5/wine.csv
expect_rc 0 "$REPRUN" train five.json -o runs/five -q
NO_COLOR=1 expect_rc 1 "$REPRUN" diff runs/before runs/five --format json
python3 - "$T/out" <<'PY' || fail "appended rows: $(head -c 4000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
causes = [d["cause"] for d in r["diagnosis"]]
assert len(causes) == 1, causes
assert causes[0].startswith("the training data changed (") and "with it, as effects: plan.train_samples 135 -> 139 and plan.val_samples 45 -> 46)" in causes[0], causes
for m in r["metadata"]:
    if m["key"].startswith("plan."):
        assert m["category"] == "dataset" and m["why"] == "follows the data", m
PY
# A part file removed from a data folder: data.classes, which no config set, follows the data.
# Before: "hyperparameters changed: data.classes 3 -> 2 / fix: set data.classes back to 3".
mkdir parts
python3 - data/wine.csv parts <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
for c in range(3):
    open(f"{sys.argv[2]}/part-{c}.csv", "w").write("\n".join([lines[0]] + [l for l in lines[1:] if l.endswith(f",{c}")]) + "\n")
PY
cfg parts.json parts
expect_rc 0 "$REPRUN" train parts.json -o runs/parts3 -q
rm parts/part-2.csv
expect_rc 0 "$REPRUN" train parts.json -o runs/parts2 -q
[[ $(json_get runs/parts2/manifest.json config_file.left_to_data) == '["data.classes", "data.header", "data.label_column"]' ]] ||
  fail "left_to_data: $(json_get runs/parts2/manifest.json config_file.left_to_data)"
NO_COLOR=1 expect_rc 1 "$REPRUN" diff runs/parts3 runs/parts2
grep -q '^  1\. the training data changed (missing in B: part-2.csv; with it, as effects: config.data.classes 3 -> 2' "$T/out" ||
  fail "part removed: $(cat "$T/out")"
grep -q '^  \[dataset\] config.data.classes: 3 -> 2 (follows the data)$' "$T/out" || fail "part removed: $(cat "$T/out")"
! grep -q 'hyperparameters changed\|configuration differs' "$T/out" || fail "part removed: a config cause: $(cat "$T/out")"

# Item 5: docs/ci.md's stored reference, in a git repository whose README changed, in a copy
# without git, with OMP_NUM_THREADS and LANG set, on a machine with other cores and libc. Before:
# "1. a different build: code.git.commit ...", "unpinned environment variable: OMP_NUM_THREADS".
mkdir "$T/repo" && cp rel.json "$T/repo/train.json" && cp -r data "$T/repo/" && cd "$T/repo" || fail "cd repo"
git init -q && echo one >README && git add -A && git -c user.name=t -c user.email=t@t commit -qm one
expect_rc 0 "$REPRUN" train train.json -o "$T/reference-run" -q
echo two >>README && git -c user.name=t -c user.email=t@t commit -qam two
OMP_NUM_THREADS=3 LANG=C expect_rc 0 "$REPRUN" train train.json -o "$T/new-run" -q
mkdir "$T/copy" && cp -r train.json data "$T/copy/" && cd "$T/copy" || fail "cd copy"
expect_rc 0 "$REPRUN" train train.json -o "$T/copy-run" -q
python3 - "$T/new-run/manifest.json" <<'PY' || fail "edit the host facts"
import json, sys
m = json.load(open(sys.argv[1]))
m["host"]["logical_cores"] = m["host"]["logical_cores"] + 62
m["host"]["libc"] = "glibc 9.99"
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
cd "$T" || fail "cd"
for b in new-run copy-run; do
  NO_COLOR=1 expect_rc 0 "$REPRUN" diff reference-run $b --format json
  python3 - "$T/out" "$b" <<'PY' || fail "reference vs $b: $(head -c 4000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"] and r["verdict"].startswith("IDENTICAL"), r["verdict"]
listed = {m["key"]: m for m in r["metadata"] if m["kind"] == "informational"}
want = ["code.git.commit", "env.OMP_NUM_THREADS", "env.LANG", "host.logical_cores", "host.libc"] if sys.argv[2] == "new-run" \
    else ["code.git"]
for k in want:
    assert k in listed and listed[k]["why"], (k, sorted(listed))
PY
done
pass
