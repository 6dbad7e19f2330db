# Where a program's files lie (issue 36, tried as a user): each case was a false difference or a
# change not named before.
#  (a) a virtual environment in the project folder named without a dot (venv/): its pyvenv.cfg and
#      console scripts (whose first lines hold the environment's path) are the interpreter's, not
#      data; two checkouts of one project diff to exit 0;
#  (b) a Python script with no extension run as a program (./train, "#!" line): code, and an edit
#      is [code] with the changed line, not "[dataset] ... the training data changed", nor counted
#      again as "[libraries] program.executable_file";
#  (c) a program that lists its working directory (glob("*.csv")): the listing is keyed "." in
#      every checkout, and two checkouts diff to exit 0;
#  (d) a module imported from outside the working directory, in a temporary folder
#      (sys.path.insert(0, "../lib")): code, and an edit to it is named with its line;
#  (e) the script outside the working directory (python3 ../scripts/train.py): matched between two
#      checkouts by its place beside each run's working directory; unchanged, exit 0; edited in one
#      checkout, [code] ../scripts/train.py with the line (in one checkout, by its absolute path),
#      and its argument entry not counted a second time;
#  (f) data reached through a symbolic link the program resolves (Path("data/t.csv").resolve(),
#      the link pointed elsewhere between two records): the target is data and named;
#  (g) a tool in a hidden folder whose scripts hand each other its own files (pyenv's shims: a
#      wrapper running ~/.tool/libexec/run with ~/.tool/version): none of them is data or code;
#  (h) a file outside the working directory that a shell redirects into the program (sh -c
#      'python3 sum.py < /x/nums.csv', exec's own advice for stdin): data, and a change is named;
#  (i) a data file the program deletes after reading it: its size at the first open compared;
#  (j) a configuration file the script reads (configs/train.yaml, the learning rate changed): a
#      configuration, not data (cause "a configuration file the program read changed"), with the
#      changed lines shown as for code; a credential's line that changed is marked, its value not shown;
#  (k) a history file the program reads and rewrites (results.json): a later run read what the
#      earlier one left, no difference, also when both rewrote it; two runs that both rewrote it,
#      with the file edited between them, are compared as each left it, and the report says so;
#  (l) a queue folder listed and emptied by the program, against a run that left it full: the
#      listing holds what the program read there, no difference;
#  (m) a Python script with no extension and no "#!" line (python3 train): code;
#  (n) two checkouts whose `abs` links point to two scratch copies of one data set, read through
#      os.path.realpath: the same names and bytes, no difference (a note pairs them); a file
#      changed in one copy is named as changed, not as read by one run only;
#  (o) a table the script reads by a fixed absolute path outside its working directory, with no
#      --data-dir (/data/train.csv): recorded by size and time only; grown between two records, it
#      is said (not counted) and the first likely cause names it, its size, its line and the
#      --data-dir that compares its bytes, never "same inputs"; recorded with that --data-dir, a
#      change is named with its lines; rewritten with the same bytes, no difference; of 22 such
#      files touched (the same sizes), 3 are listed and a note counts the rest.
source "$(dirname "$0")/lib.sh"
PY=$(command -v python3) || skip "no python3"
[[ -f "$(dirname "$REPRUN")/libreprun_preload.so" ]] || fail "the preload library was not built beside $REPRUN"

class_of() { # class_of RUN PATH: the class inputs.jsonl gives PATH ("" when not recorded)
  "$PY" - "$1/inputs.jsonl" "$2" <<'PYSRC'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"] == sys.argv[2]:
        print(r["class"])
PYSRC
}

# (a) venv/ in two checkouts of one project.
for p in a1 a2; do
  mkdir "$p"
  (cd "$p" && seq 1 20 >d.csv && printf 'print(sum(int(x) for x in open("d.csv")))\n' >t.py &&
    "$PY" -m venv --without-pip venv) || skip "python3 -m venv does not work here"
  (cd "$p" && record A venv/bin/python t.py)
done
[[ $(class_of a1/A/run-1 venv/pyvenv.cfg) == other ]] || fail "(a) venv/pyvenv.cfg: $(grep pyvenv a1/A/run-1/inputs.jsonl)"
[[ $(class_of a1/A/run-1 d.csv) == data ]] || fail "(a) d.csv is not data: $(grep d.csv a1/A/run-1/inputs.jsonl)"
(cd a2 && expect_rc 0 "$REPRUN" diff ../a1/A/run-1 A/run-1)
grep -q "^IDENTICAL" "$T/out" || fail "(a) two checkouts with a venv/: $(cat "$T/out")"

# (b) ./train, a script with no extension, edited.
mkdir b && cd b
printf '#!/usr/bin/env python3\nlr = 0.1\nprint(lr * 3)\n' >train
chmod +x train
record A ./train
[[ $(class_of A/run-1 train) == code ]] || fail "(b) the script ./train: $(grep '"train"' A/run-1/inputs.jsonl)"
sed -i 's/lr = 0.1/lr = 0.2/' train
record B ./train
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -q '^  \[code\] train: ' "$T/out" || fail "(b) the edited script: $(cat "$T/out")"
grep -q '2 - lr = 0.1' "$T/out" && grep -q '2 + lr = 0.2' "$T/out" || fail "(b) the changed line: $(cat "$T/out")"
sed -n '/^Likely cause/{n;p;q}' "$T/out" | grep -q "code changed" || fail "(b) the first cause: $(cat "$T/out")"
grep -q '^  \[libraries\]' "$T/out" && fail "(b) the script counted a second time, as a library: $(cat "$T/out")"
cd "$T"

# (c) the working directory listed, in two checkouts.
for p in c1 c2; do
  mkdir "$p"
  (cd "$p" && seq 1 5 >a.csv && seq 6 9 >b.csv &&
    printf 'import glob\nprint(sum(int(x) for f in sorted(glob.glob("*.csv")) for x in open(f)))\n' >g.py &&
    record A "$PY" g.py)
done
grep -q '"path":".","class":"data"' c1/A/run-1/inputs.jsonl || fail "(c) the listing of the working directory: $(grep folder c1/A/run-1/inputs.jsonl)"
(cd c2 && expect_rc 0 "$REPRUN" diff ../c1/A/run-1 A/run-1)
grep -q "^IDENTICAL" "$T/out" || fail "(c) two checkouts that list their folder: $(cat "$T/out")"

# (d) a module from ../lib, edited.
mkdir -p d/lib d/proj
printf 'def f():\n    return 2\n' >d/lib/helper.py
printf 'import sys\nsys.path.insert(0, "../lib")\nimport helper\nprint(helper.f())\n' >d/proj/t.py
cd d/proj
record A "$PY" t.py
[[ $(class_of A/run-1 "$T/d/lib/helper.py") == code ]] || fail "(d) ../lib/helper.py: $(grep helper A/run-1/inputs.jsonl)"
sed -i 's/return 2/return 3/' ../lib/helper.py
record B "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -q "^  \[code\] $T/d/lib/helper.py: " "$T/out" && grep -q '2 +     return 3' "$T/out" ||
  fail "(d) the edited module: $(cat "$T/out")"
cd "$T"

# (e) ../scripts/train.py from two checkouts.
for p in e1 e2; do
  mkdir -p "$p/scripts" "$p/proj/data"
  printf 'import sys\nrate = 0.5\nprint(sum(float(x) for x in open(sys.argv[1])) * rate)\n' >"$p/scripts/train.py"
  seq 1 9 >"$p/proj/data/x.csv"
done
(cd e1/proj && record A "$PY" ../scripts/train.py data/x.csv)
(cd e2/proj && record A "$PY" ../scripts/train.py data/x.csv)
(cd e2/proj && expect_rc 0 "$REPRUN" diff ../../e1/proj/A/run-1 A/run-1)
grep -q "^IDENTICAL" "$T/out" || fail "(e) two checkouts running ../scripts/train.py: $(cat "$T/out")"
sed -i 's/rate = 0.5/rate = 0.25/' e2/scripts/train.py
(cd e2/proj && record B "$PY" ../scripts/train.py data/x.csv)
(cd e2/proj && expect_rc 1 "$REPRUN" diff ../../e1/proj/A/run-1 B/run-1)
grep -q '^  \[code\] \.\./scripts/train\.py: ' "$T/out" && grep -q '2 + rate = 0.25' "$T/out" ||
  fail "(e) the script edited in one checkout: $(cat "$T/out")"
(cd e2/proj && expect_rc 1 "$REPRUN" diff A/run-1 B/run-1) # one checkout: the script by its absolute path
grep -q "^  \[code\] $T/e2/scripts/train.py: " "$T/out" || fail "(e) the script edited, one checkout: $(cat "$T/out")"
grep -q '^  \[code\] program.argv_files' "$T/out" && fail "(e) the script's argument counted a second time: $(cat "$T/out")"
# (f) data/t.csv -> ../st/v1.csv, then -> ../st/v2.csv, resolved by the program.
mkdir -p f/st f/q/data
seq 1 10 >f/st/v1.csv
seq 2 11 >f/st/v2.csv
cd f/q
printf 'from pathlib import Path\nprint(sum(int(x) for x in open(Path("data/t.csv").resolve())))\n' >t.py
ln -s "$T/f/st/v1.csv" data/t.csv
record A "$PY" t.py
[[ $(class_of A/run-1 "$T/f/st/v1.csv") == data ]] || fail "(f) the link's target: $(grep v1.csv A/run-1/inputs.jsonl)"
ln -sfn "$T/f/st/v2.csv" data/t.csv
record B "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
sed -n '/^Likely cause/{n;p;q}' "$T/out" | grep -qF "the training data changed ($T/f/st/v1.csv: read by A only" ||
  fail "(f) the link pointed elsewhere: $(cat "$T/out")"
cd "$T"

# (g) a shim in a hidden tool folder, as pyenv's: wrapper -> ~/.tool/libexec/run ~/.tool/version.
mkdir -p g/home/.tool/shims g/home/.tool/libexec g/p
echo 3.11 >g/home/.tool/version
printf '#!/bin/sh\nexec "%s/g/home/.tool/libexec/run" "%s/g/home/.tool/version" "$@"\n' "$T" "$T" >g/home/.tool/shims/py
printf '#!/bin/sh\nread v < "$1"\nshift\nexec "%s" "$@"\n' "$PY" >g/home/.tool/libexec/run
chmod +x g/home/.tool/shims/py g/home/.tool/libexec/run
cd g/p
seq 1 4 >d.csv
printf 'print(sum(int(x) for x in open("d.csv")))\n' >t.py
record A "$T/g/home/.tool/shims/py" t.py
grep -F "$T/g/home/.tool" A/run-1/inputs.jsonl | grep -qv '"class":"other"' &&
  fail "(g) the tool's own files: $(grep -F "$T/g/home/.tool" A/run-1/inputs.jsonl)"
[[ $(class_of A/run-1 d.csv) == data ]] || fail "(g) d.csv: $(grep d.csv A/run-1/inputs.jsonl)"
cd "$T"

# (h) sh -c 'python3 sum.py < /x/nums.csv', the table changed between two records.
mkdir -p h/store h/p
seq 1 10 >h/store/nums.csv
printf 'import sys\nprint(sum(float(x) for x in sys.stdin))\n' >h/p/sum.py
cd h/p
record A sh -c "\"$PY\" sum.py < $T/h/store/nums.csv"
sed -i 5s/5/55/ ../store/nums.csv
record B sh -c "\"$PY\" sum.py < $T/h/store/nums.csv"
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -qF "[dataset] $T/h/store/nums.csv: line 5 changed" "$T/out" || fail "(h) the redirected table: $(cat "$T/out")"
cd "$T"

# (i) consume.txt read, then removed by the program; 50 then 51 lines.
mkdir i && cd i
printf 'import os\nprint(sum(int(x) for x in open("consume.txt")))\nos.remove("consume.txt")\n' >del.py
seq 1 50 >consume.txt
record A "$PY" del.py
seq 1 51 >consume.txt
record B "$PY" del.py
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -qF "[dataset] consume.txt: 141 -> 144 bytes at the first open" "$T/out" || fail "(i) the consumed file: $(cat "$T/out")"
seq 1 51 >consume.txt
record C "$PY" del.py
expect_rc 0 "$REPRUN" diff B/run-1 C/run-1
grep -qF "consume.txt not compared: gone before reprun read it after the run" "$T/out" || fail "(i) the note: $(cat "$T/out")"
# (j) configs/train.yaml, lr changed.
mkdir -p j/configs && cd j
printf 'epochs: 3\nlr: 0.1\n' >configs/train.yaml
printf 'cfg = dict(l.strip().split(": ") for l in open("configs/train.yaml"))\nprint(float(cfg["lr"]) * 2)\n' >t.py
record A "$PY" t.py
sed -i 's/lr: 0.1/lr: 0.2/' configs/train.yaml
record B "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -qF "[configuration] configs/train.yaml: line 2 changed" "$T/out" &&
  grep -qF "1. a configuration file the program read changed: configs/train.yaml (line 2 changed" "$T/out" && grep -q '2 - lr: 0.1' "$T/out" && grep -q '2 + lr: 0.2' "$T/out" ||
  fail "(j) the configuration file: $(cat "$T/out")"
# A credential's value changed with the learning rate: its line marked, the value never shown.
printf 'epochs: 3\nlr: 0.3\napi_key: abc123\n' >configs/train.yaml
record C "$PY" t.py
printf 'epochs: 3\nlr: 0.4\napi_key: zzz999\n' >configs/train.yaml
record D "$PY" t.py
expect_rc 1 "$REPRUN" diff C/run-1 D/run-1
grep -q '^ *3 ~ api_key: (redacted): its value changed$' "$T/out" || fail "(j) the credential's line: $(cat "$T/out")"
grep -q 'abc123\|zzz999' "$T/out" && fail "(j) a credential's value shown: $(cat "$T/out")"
cd "$T"

# (k) results.json: read when there, appended to, rewritten.
mkdir k && cd k
printf 'import json, os\nh = json.load(open("results.json")) if os.path.exists("results.json") else []\nh.append(len(h))\njson.dump(h, open("results.json", "w"))\nprint("ok")\n' >t.py
record A "$PY" t.py
record B "$PY" t.py
record C "$PY" t.py
expect_rc 0 "$REPRUN" diff A/run-1 B/run-1
grep -qF "inputs.files.results.json: written -> read (B read the file A wrote: the same size and time at B's first open (B rewrote it))" "$T/out" ||
  fail "(k) the history A left, read by B: $(cat "$T/out")"
# C read what B left, though both rewrote it: no difference either (before: "line 1 changed", exit 1,
# every run from the third on against the one before it).
expect_rc 0 "$REPRUN" diff B/run-1 C/run-1
grep -qF "inputs.files.results.json: 3 bytes -> 6 bytes (B read the file as A left it: the same size and time at B's first open (each run rewrote it))" "$T/out" ||
  fail "(k) the history B left, read by C: $(cat "$T/out")"
expect_rc 0 "$REPRUN" diff C/run-1 B/run-1
grep -qF "(A read the file as B left it" "$T/out" || fail "(k) C against B: $(cat "$T/out")"
# Edited between two runs that both rewrite it: D did not read what C left.
printf '[7, 7, 7]' >results.json
record D "$PY" t.py
expect_rc 1 "$REPRUN" diff C/run-1 D/run-1
grep -qF "[dataset] results.json: line 1 changed (1 line in both) (as each run left it: the program rewrote it after reading it)" "$T/out" ||
  fail "(k) two runs that rewrote the history, edited between them: $(cat "$T/out")"
cd "$T"

# (l) queue/ consumed by A, left by B.
mkdir l && cd l
printf 'import os, glob\nfor p in sorted(glob.glob("queue/*.txt")):\n    open(p).read()\n    if os.environ.get("CONSUME"):\n        os.remove(p)\nprint("ok")\n' >t.py
mkdir queue && echo one >queue/1.txt && echo two >queue/2.txt
CONSUME=1 record A "$PY" t.py
mkdir -p queue && echo one >queue/1.txt && echo two >queue/2.txt
record B "$PY" t.py
expect_rc 0 "$REPRUN" diff A/run-1 B/run-1
grep -qF '"path":"queue","class":"data","folder":true' A/run-1/inputs.jsonl && grep -F '"path":"queue"' A/run-1/inputs.jsonl | grep -qF '"names":["1.txt","2.txt"]' ||
  fail "(l) the consumed queue's listing: $(grep -F '"path":"queue"' A/run-1/inputs.jsonl)"
cd "$T"

# (m) python3 train, no extension, no "#!".
mkdir m && cd m
printf 'lr = 0.1\nprint(lr)\n' >train
record A "$PY" train
[[ $(class_of A/run-1 train) == code ]] || fail "(m) python3 train: $(grep '"train"' A/run-1/inputs.jsonl)"
cd "$T"

# (n) pa/abs -> sA/ds, pb/abs -> sB/ds, identical copies; then one file of sB changed.
mkdir -p n/sA/ds n/sB/ds n/pa n/pb
for i in 1 2 3; do seq "$i" 9 >"n/sA/ds/p$i.csv" && cp "n/sA/ds/p$i.csv" n/sB/ds/; done
printf 'import os\ne = os.path.realpath("abs")\nprint(sum(int(x) for n in sorted(os.listdir(e)) for x in open(os.path.join(e, n))))\n' >n/t.py
ln -s "$T/n/sA/ds" n/pa/abs
ln -s "$T/n/sB/ds" n/pb/abs
(cd n/pa && record A "$PY" ../t.py)
(cd n/pb && record B "$PY" ../t.py)
expect_rc 0 "$REPRUN" diff n/pa/A/run-1 n/pb/B/run-1
grep -qF "read outside the working directory at another path with the same name and bytes (A's = B's), compared as the same: $T/n/sA/ds = $T/n/sB/ds" "$T/out" ||
  fail "(n) two copies of one data set: $(cat "$T/out")"
echo 99 >>n/sB/ds/p2.csv
(cd n/pb && record C "$PY" ../t.py)
expect_rc 1 "$REPRUN" diff n/pa/A/run-1 n/pb/C/run-1
grep -qF "[dataset] $T/n/sA/ds/p2.csv: 8 -> 9 lines; the first 8 are identical (1 appended)" "$T/out" ||
  fail "(n) a file changed in one copy: $(cat "$T/out")"

# (o) $T/o/store/t.csv read by its absolute path from o/p, grown by one line between two records.
mkdir -p o/store o/p
seq 1 30 >o/store/t.csv
printf 'import sys\nrows = open(sys.argv[1] if len(sys.argv) > 1 else "%s/o/store/t.csv").read().split()\nprint(sum(int(x) for x in rows))\n' "$T" >o/p/t.py
cd o/p
record A "$PY" t.py
[[ $(class_of A/run-1 "$T/o/store/t.csv") == other ]] || fail "(o) the outside table: $(grep t.csv A/run-1/inputs.jsonl)"
echo 31 >>../store/t.csv
record B "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -qF "inputs.files.$T/o/store/t.csv: 81 bytes -> 84 bytes (read outside the places of data (opened at t.py:2): its bytes not compared (--data-dir $T/o/store compares them))" "$T/out" ||
  fail "(o) the outside table not said: $(cat "$T/out")"
sed -n '/^Likely cause/,$p' "$T/out" >causes.txt
grep -qF "1. files the program read outside the places of data changed between the runs (recorded by size and time only, their bytes not compared): $T/o/store/t.csv (81 -> 84 bytes, opened at t.py:2)" causes.txt ||
  fail "(o) the first cause: $(cat causes.txt)"
grep -qF "fix: record both runs with --data-dir $T/o/store so that diff compares their bytes" causes.txt ||
  fail "(o) the fix: $(cat causes.txt)"
grep -qi "same inputs" causes.txt && fail "(o) a cause claims the same inputs: $(cat causes.txt)"
# The fix works: recorded with --data-dir, the change is named with its lines and counted.
"$REPRUN" exec -o C --runs 1 -q --data-dir "$T/o/store" -- "$PY" t.py >/dev/null 2>&1 || fail "(o) exec --data-dir C"
echo 32 >>../store/t.csv
"$REPRUN" exec -o D --runs 1 -q --data-dir "$T/o/store" -- "$PY" t.py >/dev/null 2>&1 || fail "(o) exec --data-dir D"
expect_rc 1 "$REPRUN" diff C/run-1 D/run-1
grep -qF "[dataset] $T/o/store/t.csv: 31 -> 32 lines; the first 31 are identical (1 appended)" "$T/out" ||
  fail "(o) with --data-dir: $(cat "$T/out")"
# Rewritten with the same bytes (another time): said, not counted; the runs identical.
record E "$PY" t.py
cp ../store/t.csv ../store/t.tmp && mv ../store/t.tmp ../store/t.csv && touch -d "+1 hour" ../store/t.csv
record G "$PY" t.py
expect_rc 0 "$REPRUN" diff E/run-1 G/run-1
grep -q "^IDENTICAL" "$T/out" || fail "(o) the same bytes, another time: $(cat "$T/out")"
grep -qF "inputs.files.$T/o/store/t.csv: 87 bytes -> 87 bytes, modified at another time" "$T/out" ||
  fail "(o) the same bytes, another time, not said: $(cat "$T/out")"
# 22 such files touched, the same sizes: 3 listed, the rest counted in a note.
mkdir -p ../many && for i in $(seq 10 31); do echo "$i" >"../many/$i.txt"; done
printf 'import os\nd = "%s/o/many"\nprint(sum(int(open(os.path.join(d, n)).read()) for n in sorted(os.listdir(d))))\n' "$T" >many.py
record H "$PY" many.py
touch -d "+1 hour" ../many/*.txt
record I "$PY" many.py
expect_rc 0 "$REPRUN" diff H/run-1 I/run-1
[[ $(grep -c "inputs.files.$T/o/many/[0-9]*.txt: 3 bytes -> 3 bytes, modified at another time" "$T/out") == 3 ]] ||
  fail "(o) 22 files touched, not 3 listed: $(cat "$T/out")"
grep -qF "19 more files read outside the places of data differ in size or time between the runs (not listed" "$T/out" ||
  fail "(o) no note of the 19 more: $(cat "$T/out")"
cd "$T"
pass
