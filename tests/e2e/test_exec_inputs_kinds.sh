# Files of other kinds than a plain read (issue 36, a third trial as a user): each case was a
# false statement or a change not named before.
#  (a) a file opened for reading and writing but only read (open(..., "r+b"), as np.memmap's default
#      mode, sqlite and torch.from_file(shared=True) open theirs): unchanged, exit 0; changed between
#      two records, named without "the program rewrote it", which it did not;
#  (b) a data set on /dev/shm (a file system of plain files) named with --data-dir: data, and a
#      change is named (before, /dev was the kernel's and the folder was silently not data);
#  (c) a path through a symbolic link followed by ".." (cat link/../y.txt): the kernel resolves the
#      link first, and so does the record: the file read is named, not the one beside the link;
#  (d) -o ../A from a subfolder: RECORDED names the run as .../A/run-1, not .../src/../A/run-1;
#  (e) a tree walked with os.fwalk (each folder opened, then listed through its descriptor): the
#      folders are listings, not data files "not a regular file"; a file added deep in the tree is
#      named as added;
#  (f) a folder opened only as the base of openat (os.open(dir, O_DIRECTORY), then open(name,
#      dir_fd=...)), and a folder opened to sync it: no listing, so a file added there that the
#      program does not read is no difference;
#  (g) programs built in the project: ./prep run by exec, and run by the script with a library
#      ./libop.so it loads through ctypes (as torch.ops.load_library does): code, and a rebuilt one
#      is [code] "the program's code changed" (before: not recorded, "not deterministic"; exec's own
#      program "[libraries] program.executable_file", "different library versions");
#  (h) the data beside the working directory, named by a path going up (cd proj/src; python3
#      train.py reads ../data/t.csv): data (before: "other", not compared, and the diff of a changed
#      table said "not deterministic"); two checkouts of the project diff to exit 0; a row appended
#      is named; ../.cache beside it stays other;
#  (i) a program that empties its own input after reading it: each run leaves the same (empty) file,
#      but the next run read 0 bytes where the first read 21: named (before: exit 0, IDENTICAL);
#  (j) --config conf.json against --config=conf.json: the same arguments, no difference (before:
#      exit 1, "the program's arguments changed: --config -> --config=conf.json and conf.json ->
#      (none)"); another file after "=" is named as the option's value;
#  (k) the same script under another Python interpreter (a virtual environment beside the system's
#      Python): one cause, "another Python interpreter", with its distributions named with it (before:
#      "a different build ... build both runs from the same commit with the same compiler");
#  (l) a data set read through glob, one file removed: counted once, with its folder (before: the
#      folder and the file "read by A only", two differences for one change).
source "$(dirname "$0")/lib.sh"
PY=$(command -v python3) || skip "no python3"
[[ -f "$(dirname "$REPRUN")/libreprun_preload.so" ]] || fail "the preload library was not built beside $REPRUN"

# (a) data/t.bin opened "r+b" and only read.
mkdir a && cd a
mkdir data && seq 1 50 >data/t.bin
printf 'with open("data/t.bin", "r+b") as f:\n    print(len(f.read()))\n' >t.py
record A "$PY" t.py
record B "$PY" t.py
expect_rc 0 "$REPRUN" diff A/run-1 B/run-1
echo 51 >>data/t.bin
record C "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 C/run-1
grep -qF "[dataset] data/t.bin: 50 -> 51 lines; the first 50 are identical (1 appended)" "$T/out" ||
  fail "(a) the file opened r+b: $(cat "$T/out")"
! grep -qF "rewrote it" "$T/out" || fail "(a) a file only read is said rewritten: $(grep -F 'rewrote' "$T/out")"
cd "$T"

# (b) --data-dir /dev/shm/..., where /dev/shm is a writable folder.
if [[ -d /dev/shm && -w /dev/shm ]]; then
  shm=$(mktemp -d /dev/shm/reprun-test.XXXXXX)
  trap 'rm -rf "$shm"' EXIT
  mkdir b && cd b
  seq 1 30 >"$shm/t.csv"
  printf 'import sys\nprint(sum(int(x) for x in open(sys.argv[1] + "/t.csv")))\n' >t.py
  "$REPRUN" exec -o A --runs 1 -q --data-dir "$shm" -- "$PY" t.py "$shm" >"$T/rec.out" 2>&1 || fail "(b) exec: $(cat "$T/rec.out")"
  grep -qF "read 1 data file" "$T/rec.out" || fail "(b) the table on /dev/shm is not data: $(cat "$T/rec.out")"
  echo 31 >>"$shm/t.csv"
  "$REPRUN" exec -o C --runs 1 -q --data-dir "$shm" -- "$PY" t.py "$shm" >"$T/rec.out" 2>&1 || fail "(b) exec: $(cat "$T/rec.out")"
  expect_rc 1 "$REPRUN" diff A/run-1 C/run-1
  grep -qF "[dataset] $shm/t.csv: 30 -> 31 lines; the first 30 are identical (1 appended)" "$T/out" ||
    fail "(b) a change on /dev/shm: $(cat "$T/out")"
  cd "$T"
else
  echo "(b) skipped: no writable /dev/shm here"
fi

# (c) cat link/../y.txt, link -> elsewhere/dir: elsewhere/y.txt is read, not ./y.txt.
mkdir -p c/elsewhere/dir && cd c
ln -s elsewhere/dir link
seq 1 5 >elsewhere/y.txt
echo decoy >y.txt
record A sh -c 'cat link/../y.txt'
grep -qF '"path":"elsewhere/y.txt","class":"data"' A/run-1/inputs.jsonl ||
  fail "(c) the file read through link/..: $(grep -F 'y.txt' A/run-1/inputs.jsonl)"
! grep -qF '"path":"y.txt"' A/run-1/inputs.jsonl || fail "(c) the file beside the link recorded: $(grep -F '"y.txt"' A/run-1/inputs.jsonl)"
echo 6 >>elsewhere/y.txt
record C sh -c 'cat link/../y.txt'
expect_rc 1 "$REPRUN" diff A/run-1 C/run-1
grep -qF "[dataset] elsewhere/y.txt: 5 -> 6 lines; the first 5 are identical (1 appended)" "$T/out" ||
  fail "(c) the change through link/..: $(cat "$T/out")"
cd "$T"

# (d) -o ../A from a subfolder.
mkdir -p d/src && cd d/src
printf 'print(1)\n' >t.py
"$REPRUN" exec -o ../A --runs 1 -q -- "$PY" t.py >"$T/rec.out" 2>&1 || fail "(d) exec: $(cat "$T/rec.out")"
grep -qF "RECORDED: run-1 of the program in $(cd .. && pwd -P)/A/run-1 " "$T/rec.out" || fail "(d) $(head -1 "$T/rec.out")"
cd "$T"

# (e) os.fwalk over data/tree.
mkdir -p e/data/tree/sub && cd e
seq 1 3 >data/tree/a.txt && seq 1 4 >data/tree/sub/b.txt
cat >t.py <<'PYSRC'
import os
total = 0
for root, dirs, files, rootfd in os.fwalk("data/tree"):
    for name in sorted(files):
        with open(os.open(name, os.O_RDONLY, dir_fd=rootfd)) as f:
            total += sum(int(x) for x in f)
print(total)
PYSRC
record A "$PY" t.py
for d in data/tree data/tree/sub; do
  grep -F "\"path\":\"$d\"" A/run-1/inputs.jsonl | grep -qF '"folder":true' ||
    fail "(e) $d is not a listing: $(grep -F "\"path\":\"$d\"" A/run-1/inputs.jsonl)"
done
grep -qF "read 2 data files (and listed 2 folders)" "$T/rec.out" || fail "(e) the counts: $(head -1 "$T/rec.out")"
seq 1 5 >data/tree/sub/c.txt
record C "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 C/run-1
grep -qF "[dataset] data/tree/sub: a folder of 1 -> 2 entries: 1 added (c.txt)" "$T/out" || fail "(e) the added file: $(cat "$T/out")"
cd "$T"

# (f) a folder opened as the base of openat, and one opened to be synced: not listings.
mkdir -p f/data f/out && cd f
seq 1 3 >data/t.csv
cat >t.py <<'PYSRC'
import os
fd = os.open("data", os.O_RDONLY | os.O_DIRECTORY)
with open(os.open("t.csv", os.O_RDONLY, dir_fd=fd)) as f:
    print(sum(int(x) for x in f))
os.close(fd)
with open("out/r.txt", "w") as f:
    f.write("done\n")
d = os.open("out", os.O_RDONLY)
os.fsync(d)
os.close(d)
PYSRC
record A "$PY" t.py
grep -qF "read 1 data file and 1 code file" "$T/rec.out" || fail "(f) the counts: $(head -1 "$T/rec.out")"
echo unrelated >data/unrelated.txt
echo unrelated >out/other.txt
record B "$PY" t.py
expect_rc 0 "$REPRUN" diff A/run-1 B/run-1
cd "$T"

# (g) ./prep and ./libop.so built in the project.
if CC=$(command -v cc || command -v gcc); then
  mkdir g && cd g
  build() { # build VALUE: prep prints VALUE; libop.so's op returns VALUE
    printf '#include <stdio.h>\nint main(void) { printf("%%d\\n", %s); return 0; }\n' "$1" >prep.c
    printf 'int op(void) { return %s; }\n' "$1" >op.c
    "$CC" -o prep prep.c && "$CC" -shared -fPIC -o libop.so op.c || fail "(g) cc failed"
  }
  printf 'import ctypes, subprocess\nsubprocess.run(["./prep"], check=True)\nprint(ctypes.CDLL("./libop.so").op())\n' >t.py
  build 1
  record A ./prep
  record PA "$PY" t.py
  grep -F '"path":"libop.so"' PA/run-1/inputs.jsonl | grep -qF '"class":"code"' ||
    fail "(g) libop.so: $(grep -F 'libop' PA/run-1/inputs.jsonl)"
  build 2
  record B ./prep
  record PB "$PY" t.py
  expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
  grep -qE "^  \[code\] prep: [0-9,]+ -> [0-9,]+ bytes" "$T/out" || fail "(g) ./prep rebuilt: $(cat "$T/out")"
  ! grep -q "ELF" "$T/out" || fail "(g) a binary's bytes shown as lines: $(head -c 600 "$T/out")"
  grep -qF "1. the program's code changed" "$T/out" || fail "(g) ./prep's cause: $(cat "$T/out")"
  ! grep -qF "[libraries] program.executable_file" "$T/out" || fail "(g) counted as a library: $(cat "$T/out")"
  expect_rc 1 "$REPRUN" diff PA/run-1 PB/run-1
  grep -qF "[code] prep:" "$T/out" && grep -qF "[code] libop.so:" "$T/out" || fail "(g) rebuilt under the script: $(cat "$T/out")"
  cd "$T"
else
  echo "(g) skipped: no C compiler"
fi

# (h) cd proj/src && python3 train.py, reading ../data/t.csv.
for p in h/p1 h/p2; do
  mkdir -p "$p/src" "$p/data" "$p/.cache"
  seq 1 20 >"$p/data/t.csv"
  echo 7 >"$p/.cache/c.txt"
  printf 'print(sum(int(x) for x in open("../data/t.csv")) + int(open("../.cache/c.txt").read()))\n' >"$p/src/train.py"
done
(cd h/p1/src && record A "$PY" train.py)
grep -qF "read 1 data file and 1 code file" "$T/rec.out" || fail "(h) the counts: $(head -1 "$T/rec.out")"
grep -F "h/p1/.cache/c.txt" h/p1/src/A/run-1/inputs.jsonl | grep -qF '"class":"other"' ||
  fail "(h) ../.cache: $(grep -F 'c.txt' h/p1/src/A/run-1/inputs.jsonl)"
(cd h/p2/src && record B "$PY" train.py)
expect_rc 0 "$REPRUN" diff h/p1/src/A/run-1 h/p2/src/B/run-1
echo 21 >>h/p2/data/t.csv
(cd h/p2/src && record C "$PY" train.py)
expect_rc 1 "$REPRUN" diff h/p1/src/A/run-1 h/p2/src/C/run-1
grep -qF "[dataset] ../data/t.csv: 20 -> 21 lines; the first 20 are identical (1 appended)" "$T/out" ||
  fail "(h) a row appended to ../data/t.csv: $(cat "$T/out")"
grep -qF "1. the training data changed" "$T/out" || fail "(h) the cause: $(cat "$T/out")"

# (i) data.txt read, then emptied by the program.
mkdir i && cd i
seq 1 10 >data.txt
printf 'n = len(open("data.txt").read().splitlines())\nopen("data.txt", "w").close()\nprint("ok")\n' >t.py
record A "$PY" t.py
record B "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -qF "[dataset] data.txt: 21 -> 0 bytes at the first open; each run left the same bytes (the program rewrote it after reading it)" "$T/out" ||
  fail "(i) an input the program emptied: $(cat "$T/out")"
record C "$PY" t.py
expect_rc 0 "$REPRUN" diff B/run-1 C/run-1
cd "$T"

# (j) an option's value apart, then after "=".
mkdir j && cd j
printf 'import sys\nprint(open(sys.argv[-1].split("=")[-1]).read())\n' >t.py
echo '{"lr": 0.1}' >conf.json
cp conf.json other.json
record A "$PY" t.py --config conf.json
record B "$PY" t.py --config=conf.json
expect_rc 0 "$REPRUN" diff A/run-1 B/run-1
grep -qF "(the same arguments: an option's value written after '=' in one run and apart in the other)" "$T/out" ||
  fail "(j) --config=: $(cat "$T/out")"
record C "$PY" t.py --config=other.json
expect_rc 1 "$REPRUN" diff A/run-1 C/run-1
grep -qF "the program's arguments changed: --config conf.json -> other.json" "$T/out" || fail "(j) another file: $(cat "$T/out")"
cd "$T"

# (k) python3, then a virtual environment's python3 (no packages of its own).
mkdir k && cd k
if "$PY" -m venv --without-pip venv 2>/dev/null && [[ -x venv/bin/python3 ]]; then
  printf 'print(1)\n' >t.py
  record A "$PY" t.py
  record B venv/bin/python3 t.py
  expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
  grep -qE "^  1\. another Python interpreter: .* \(Python [0-9.]+\) -> venv/bin/python3 \(Python [0-9.]+\)" "$T/out" ||
    fail "(k) the cause: $(cat "$T/out")"
  grep -qF "a different build" "$T/out" && fail "(k) 'a different build': $(cat "$T/out")"
  grep -qF "[libraries] framework.distributions.packages." "$T/out" && fail "(k) packages counted: $(cat "$T/out")"
  # Past 12 lines of one reason, the text report shows 5 and a count.
  (($(grep -c '^    framework.distributions.packages\.' "$T/out") <= 5)) || fail "(k) every package listed: $(cat "$T/out")"
else
  echo "(k) skipped: python3 -m venv is not available"
fi
cd "$T"

# (l) imgs/*.txt through glob; imgs/0.txt removed.
mkdir -p l/imgs && cd l
for i in 0 1 2; do echo "$i" >"imgs/$i.txt"; done
printf 'import glob\nprint(len([open(p).read() for p in sorted(glob.glob("imgs/*.txt"))]) > 0)\n' >t.py
record A "$PY" t.py
rm imgs/0.txt
record B "$PY" t.py
expect_rc 1 "$REPRUN" diff A/run-1 B/run-1
grep -q "^DIFFERENT: .* 1 metadata field differs" "$T/out" || fail "(l) counted other than once: $(cat "$T/out")"
grep -qF "[dataset] imgs: a folder of 3 -> 2 entries: 1 removed (0.txt)" "$T/out" || fail "(l) the folder: $(cat "$T/out")"
grep -qF "removed from the folder between the runs: counted with imgs" "$T/out" || fail "(l) the file: $(cat "$T/out")"
cd "$T"

pass
