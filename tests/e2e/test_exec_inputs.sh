# What a program read (issue 36): exec records every file every process of the program opens, and
# diff names what changed between two records.
#  (a) a table read from a fixed path (np.loadtxt), 20 rows appended between two records: diff
#      exits 1, the first metadata difference and the first cause name data/train.csv with the 20
#      appended lines, and no cause says "same inputs";
#  (b) the same table named in the arguments and changed: [dataset] with the change, never "a
#      different build", the argument entry compared as data;
#  (c) exec --runs 1 records run-1 (RECORDED:, the work directory kept, exit 0), refuses --vary,
#      and two such records of the same program on unchanged data diff to exit 0;
#  (d) the script edited between two records (one learning rate): [code] with the changed line and
#      the code cause;
#  (e) a Dataset listing a folder and reading one .npy per sample in 2 DataLoader workers, fork and
#      spawn: every file recorded; a changed file named, an added file named as added; the files
#      rewritten with the same bytes (new mtimes) are no difference;
#  (f) a shell script in which sort reads a raw table the Python script never opens: the table is
#      recorded, and a change to it is named;
#  (g) a wrapper script that hands its Python child a data file outside the working directory by
#      path (the file is named in the child's arguments, not in exec's): the file is data, and a
#      change to it is the first difference and cause (before: "other", and the cause "not
#      deterministic"); a system file another child is given (cat /etc/hostname) stays "other".
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
"$PY" -c "import numpy" 2>/dev/null || skip "no numpy"
[[ -f "$(dirname "$REPRUN")/libreprun_preload.so" ]] || fail "the preload library was not built beside $REPRUN"

first_meta() { sed -n '/^Metadata differences/{n;p;q}' "$1"; }
first_cause() { sed -n '/^Likely cause/{n;p;q}' "$1"; }
record() { # record DIR PROGRAM ARGS...: one run kept as a reference
  local dir=$1
  shift
  rm -rf "$dir"
  expect_rc 0 "$REPRUN" exec -o "$dir" --runs 1 -q -- "$@"
}

mkdir data
"$PY" - <<'PYSRC'
import random
r = random.Random(1)
with open("data/train.csv", "w") as f:
    for i in range(1500):
        f.write(",".join(f"{r.random():.4f}" for _ in range(4)) + f",{r.randint(0, 1)}\n")
PYSRC
cat >csv_train.py <<'PYSRC'
import sys
import numpy as np
import torch
d = np.loadtxt(sys.argv[1] if len(sys.argv) > 1 else "data/train.csv", delimiter=",")
x = torch.tensor(d[:, :4], dtype=torch.float32)
y = torch.tensor(d[:, 4]).long()
torch.manual_seed(0)
m = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(5):
    loss = torch.nn.functional.cross_entropy(m(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done", float(loss))
PYSRC
append_rows() {
  "$PY" - "$1" <<'PYSRC'
import random, sys
r = random.Random(2)
with open(sys.argv[1], "a") as f:
    for i in range(20):
        f.write(",".join(f"{r.random():.4f}" for _ in range(4)) + f",{r.randint(0, 1)}\n")
PYSRC
}

# (c) one run kept as a reference.
run_rc "$REPRUN" exec -o "$T/A" --runs 1 -q -- "$PY" csv_train.py
[[ $RC == 0 ]] || fail "(c) --runs 1: exit $RC: $(cat "$T/out" "$T/err")"
# (torch 2.x runs ldconfig with a cleared environment to find its libraries: a system probe, listed
# apart in the manifest and not named as a process not recorded.)
grep -qE "^RECORDED: run-1 of the program in $T/A/run-1 \(5 step records, read 1 data file and 1 code file\); compare a later run with it: reprun diff $T/A/run-1 " "$T/out" ||
  fail "(c) verdict: $(cat "$T/out")"
python3 - "$T/A/run-1/manifest.json" <<'PYEOF' || fail "(c) probes: $(grep -A8 '"unrecorded"' "$T/A/run-1/manifest.json")"
import json, sys
i = json.load(open(sys.argv[1]))["inputs"]
assert i["unrecorded"] == [], i["unrecorded"]
assert all(p["path"].endswith(("/ldconfig", "/ldconfig.real")) for p in i.get("probes", [])), i["probes"]
PYEOF
[[ -f "$T/A/run-1/inputs.jsonl" && -f "$T/A/run-1/manifest.json" ]] || fail "(c) run-1 not kept: $(ls "$T/A/run-1")"
grep -q '"path":"data/train.csv","class":"data"' "$T/A/run-1/inputs.jsonl" || fail "(c) the table is not data: $(grep train "$T/A/run-1/inputs.jsonl")"
grep -q '"path":"csv_train.py","class":"code"' "$T/A/run-1/inputs.jsonl" || fail "(c) the script is not code"
grep -q '"class":"data".*"opened_by":"[^"]*(csv_train.py:4)"' "$T/A/run-1/inputs.jsonl" || fail "(c) the opening line: $(grep train.csv "$T/A/run-1/inputs.jsonl")"
expect_error "--runs 1: records one run and compares nothing" "$REPRUN" exec -o "$T/v" --runs 1 --vary env:X=1,2 -- "$PY" csv_train.py
[[ ! -e "$T/v/run-1" ]] || fail "(c) a refused exec left a run"
record "$T/A2" "$PY" csv_train.py
expect_rc 0 "$REPRUN" diff "$T/A/run-1" "$T/A2/run-1"
grep -q "^IDENTICAL" "$T/out" || fail "(c) unchanged data: $(cat "$T/out")"

# (a) 20 rows appended.
append_rows data/train.csv
record "$T/B" "$PY" csv_train.py
expect_rc 1 "$REPRUN" diff "$T/A/run-1" "$T/B/run-1"
first_meta "$T/out" | grep -qF "[dataset] data/train.csv: 1,500 -> 1,520 lines; the first 1,500 are identical (20 appended)" ||
  fail "(a) first difference: $(cat "$T/out")"
first_cause "$T/out" | grep -qF "data/train.csv: 1,500 -> 1,520 lines" || fail "(a) first cause: $(cat "$T/out")"
grep -q "same inputs" "$T/out" && fail "(a) 'same inputs' with the data changed: $(cat "$T/out")"
# --ignore-meta inputs leaves the inputs out; the numbers still differ.
expect_rc 1 "$REPRUN" diff --ignore-meta inputs "$T/A/run-1" "$T/B/run-1"
first_meta "$T/out" | grep -q "dataset" && fail "(a) --ignore-meta inputs: $(cat "$T/out")"
# A file's key or its folder's, as the causes' fixes name them (the files are listed in inputs.jsonl,
# not the manifest: before, "matches no metadata key of either run"); a path neither run read is refused.
for key in inputs.files.data/train.csv inputs.files.data; do
  expect_rc 1 "$REPRUN" diff --ignore-meta $key "$T/A/run-1" "$T/B/run-1"
  first_meta "$T/out" | grep -q "dataset" && fail "(a) --ignore-meta $key: $(cat "$T/out")"
done
expect_error "^reprun: error: --ignore-meta inputs.files.data/tain.csv: matches no file either run read, so it would ignore nothing \(did you mean 'inputs.files.data/train.csv'\?\)$" \
  "$REPRUN" diff --ignore-meta inputs.files.data/tain.csv "$T/A/run-1" "$T/B/run-1"
# The JSON report carries the change.
expect_rc 1 "$REPRUN" diff --format json "$T/A/run-1" "$T/B/run-1"
"$PY" - "$T/out" <<'PYCHECK' || fail "(a) JSON: $(head -c 3000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
m = [d for d in r["metadata"] if d.get("category") == "dataset"]
assert m and "20 appended" in m[0]["detail"], r["metadata"]
PYCHECK

# (b) the table named in the arguments.
cp data/train.csv t.csv
record "$T/P1" "$PY" csv_train.py t.csv
sed -i '7s/.*/0.1111,0.2222,0.3333,0.4444,1/' t.csv
record "$T/P2" "$PY" csv_train.py t.csv
expect_rc 1 "$REPRUN" diff "$T/P1/run-1" "$T/P2/run-1"
first_meta "$T/out" | grep -qF "[dataset] t.csv: line 7 changed" || fail "(b) first difference: $(cat "$T/out")"
grep -q "different build" "$T/out" && fail "(b) blamed on the build: $(cat "$T/out")"
grep -q "same inputs" "$T/out" && fail "(b) 'same inputs': $(cat "$T/out")"

# (d) the script edited: one learning rate.
record "$T/D1" "$PY" csv_train.py
sed -i 's/lr=0.1/lr=0.05/' csv_train.py
record "$T/D2" "$PY" csv_train.py
sed -i 's/lr=0.05/lr=0.1/' csv_train.py
expect_rc 1 "$REPRUN" diff "$T/D1/run-1" "$T/D2/run-1"
first_meta "$T/out" | grep -qF "[code] csv_train.py: line 9 changed" || fail "(d) first difference: $(cat "$T/out")"
grep -qF "9 + opt = torch.optim.SGD(m.parameters(), lr=0.05)" "$T/out" || fail "(d) the changed line: $(cat "$T/out")"
first_cause "$T/out" | grep -qF "the program's code changed: csv_train.py" || fail "(d) cause: $(cat "$T/out")"
grep -q "compiler and flags" "$T/out" && fail "(d) the build's fix for a script: $(cat "$T/out")"

# (e) a folder of .npy files read by 2 DataLoader workers.
mkdir shards
"$PY" - <<'PYSRC'
import numpy as np
rng = np.random.default_rng(3)
for i in range(16):
    np.save(f"shards/{i:03d}.npy", rng.standard_normal(4).astype("float32"))
PYSRC
cat >folder.py <<'PYSRC'
import os, sys
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Shards(Dataset):
    def __init__(self, folder):
        self.folder = folder
        self.names = sorted(os.listdir(folder))

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        x = np.load(os.path.join(self.folder, self.names[i]))
        return torch.from_numpy(x), int(x.sum() > 0)


if __name__ == "__main__":
    torch.manual_seed(0)
    dl = DataLoader(Shards("shards"), batch_size=4, num_workers=2, multiprocessing_context=sys.argv[1])
    m = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for xb, yb in dl:
        loss = torch.nn.functional.cross_entropy(m(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
PYSRC
for ctx in fork spawn; do
  record "$T/F1-$ctx" "$PY" folder.py $ctx
  n=$(grep -c '"path":"shards/0[0-9][0-9].npy","class":"data"' "$T/F1-$ctx/run-1/inputs.jsonl")
  [[ $n == 16 ]] || fail "(e) $ctx: $n of 16 files recorded: $(grep shards "$T/F1-$ctx/run-1/inputs.jsonl" | cut -c1-120)"
  grep -q '"path":"shards","class":"data","folder":true' "$T/F1-$ctx/run-1/inputs.jsonl" || fail "(e) $ctx: the folder's listing"
done
"$PY" -c "import numpy as np; np.save('shards/005.npy', np.ones(4, dtype='float32'))"
record "$T/F2" "$PY" folder.py fork
expect_rc 1 "$REPRUN" diff "$T/F1-fork/run-1" "$T/F2/run-1"
grep -qF "[dataset] shards/005.npy" "$T/out" || fail "(e) the changed file is not named: $(cat "$T/out")"
"$PY" -c "import numpy as np; np.save('shards/016.npy', np.ones(4, dtype='float32'))"
record "$T/F3" "$PY" folder.py spawn
expect_rc 1 "$REPRUN" diff "$T/F2/run-1" "$T/F3/run-1"
grep -qF "[dataset] shards: a folder of 16 -> 17 entries: 1 added (016.npy)" "$T/out" || fail "(e) the added file is not named: $(cat "$T/out")"
first_cause "$T/out" | grep -qF "the training data changed (shards: a folder of 16 -> 17 entries: 1 added (016.npy)" ||
  fail "(e) the data is not the first cause: $(cat "$T/out")"
# The same bytes written again: new mtimes, no difference.
for f in shards/*.npy; do cp "$f" x.tmp && mv x.tmp "$f"; done
touch shards/*.npy
record "$T/F4" "$PY" folder.py spawn
expect_rc 0 "$REPRUN" diff "$T/F3/run-1" "$T/F4/run-1"

# (f) a shell script: sort reads the raw table, Python reads what sort wrote.
printf '3,0.5\n1,0.25\n2,0.75\n' >raw.csv
cat >prep.sh <<'SH'
#!/bin/bash
set -e
sort -t, -k1,1n raw.csv >"$WORK/sorted.csv"
exec "$PY" -c "
import json, os
w = 0.0
for step, line in enumerate(open(os.environ['WORK'] + '/sorted.csv'), 1):
    w = w - 0.5 * (w - float(line.split(',')[1]))
    open(os.environ['REPRUN_STEP_LOG'], 'a').write(json.dumps({'step': step, 'loss': w}) + '\n')
"
SH
chmod +x prep.sh
export PY
mkdir -p w1 w2
WORK=$T/w1 record "$T/S1" ./prep.sh
grep -q '"path":"raw.csv","class":"data".*"opened_by":"sort"' "$T/S1/run-1/inputs.jsonl" ||
  fail "(f) sort's read of raw.csv: $(grep raw "$T/S1/run-1/inputs.jsonl")"
printf '3,0.5\n1,0.25\n2,0.5\n' >raw.csv
WORK=$T/w2 record "$T/S2" ./prep.sh
expect_rc 1 "$REPRUN" diff "$T/S1/run-1" "$T/S2/run-1"
first_meta "$T/out" | grep -qF "[dataset] raw.csv: line 3 changed" || fail "(f) $(cat "$T/out")"

# (g) a wrapper hands its child a data file elsewhere by path (outside the working directory $T/g).
mkdir -p "$T/elsewhere" "$T/g"
cd "$T/g" || fail "cd $T/g"
printf '1.5\n2.5\n' >"$T/elsewhere/table.txt"
cat >fit.py <<'PYSRC'
import sys
print(sum(float(line) for line in open(sys.argv[1].split("=", 1)[1])))
PYSRC
cat >wrap.sh <<'SH'
#!/bin/sh
cat /etc/hostname >/dev/null 2>&1 || true
exec "$PY" fit.py --table="$TABLE"
SH
chmod +x wrap.sh
TABLE=$T/elsewhere/table.txt record "$T/G1" ./wrap.sh
grep -qF "\"path\":\"$T/elsewhere/table.txt\",\"class\":\"data\"" "$T/G1/run-1/inputs.jsonl" ||
  fail "(g) the table named in the child's arguments: $(grep table.txt "$T/G1/run-1/inputs.jsonl")"
if grep -q '"path":"/etc/hostname"' "$T/G1/run-1/inputs.jsonl"; then
  grep -q '"path":"/etc/hostname","class":"other"' "$T/G1/run-1/inputs.jsonl" ||
    fail "(g) a system file named in cat's arguments: $(grep hostname "$T/G1/run-1/inputs.jsonl")"
fi
printf '1.5\n2.5\n4.0\n' >"$T/elsewhere/table.txt"
TABLE=$T/elsewhere/table.txt record "$T/G2" ./wrap.sh
expect_rc 1 "$REPRUN" diff "$T/G1/run-1" "$T/G2/run-1"
first_meta "$T/out" | grep -qF "[dataset] $T/elsewhere/table.txt: 2 -> 3 lines; the first 2 are identical (1 appended)" ||
  fail "(g) $(cat "$T/out")"
first_cause "$T/out" | grep -qF "the training data changed ($T/elsewhere/table.txt" || fail "(g) cause: $(cat "$T/out")"
cd "$T" || fail "cd $T"
pass
