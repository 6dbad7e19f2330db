# What a program read when it reads what it made (issue 36): a script that builds a cache from its
# raw table on its first run and reads the cache from then on (a download, a preprocessing step):
#  (a) one exec of it: run-1 reads raw.csv and makes cache.txt, run-2 reads cache.txt: PASS, never
#      "raw.csv: read by A only" (before: FAIL, the training data changed);
#  (b) a reference run that made the cache and a later run that read it: diff exits 0, saying that
#      B read the file A wrote (the same bytes) and that B read it instead of raw.csv;
#  (c) the cache made again by someone else, with other bytes: diff exits 1, the first difference and
#      the first cause name cache.txt (A wrote it, B read other bytes: the line that changed); what
#      changed is said from A to B also when B is the writer;
#  (d) the record keeps the state each run left its written files in ("left": size, time, content);
#  (e) under --stat-only, the cache is matched by its size and time; a data file there rewritten with
#      as many bytes is no difference, and a note says its bytes were not compared;
#  (f) a folder the first run fills (a download, unpacked) and then lists: the next run, which finds
#      the files there, lists what the first one made: no difference (before: "a folder of 0 -> 3
#      entries: 3 added"); a file added there since is counted;
#  (g) the cache kept outside the working directory (~/.cache/...): the same as (b) (before: "raw.csv:
#      read by A only", the training data changed); also when it is written under a temporary name
#      and renamed into place (Hugging Face's datasets), which the record does not follow: the run
#      that made it read it after, changed since the program started ("made_during_run");
#  (h) a file the maker read only after it made what the other run read (a library's cache made at
#      its import, then the data read) still counts: B, told to skip the data, differs (before: no
#      difference, "B read instead what A made");
#  (i) a program that lists its working directory, recorded twice with -o beside it: the second
#      record finds the first's folder there, which is reprun's, not the program's data (before: "a
#      folder of 2 -> 3 entries: 1 added (ref)").
source "$(dirname "$0")/lib.sh"
PY=$(command -v python3) || skip "no python3"
[[ -f "$(dirname "$REPRUN")/libreprun_preload.so" ]] || fail "the preload library was not built beside $REPRUN"

first_meta() { sed -n '/^Metadata differences/{n;p;q}' "$1"; }
first_cause() { sed -n '/^Likely cause/{n;p;q}' "$1"; }

printf 'x,y\n1,2\n2,4\n3,6.5\n4,8\n' >raw.csv
cat >prep.py <<'PYSRC'
import os
if not os.path.exists("cache.txt"):
    rows = [line.strip().split(",") for line in open("raw.csv")][1:]
    with open("cache.txt", "w") as f:
        for x, y in rows:
            f.write("%s %s\n" % (float(x), float(y)))
pairs = [tuple(map(float, line.split())) for line in open("cache.txt")]
w = 0.0
for step in range(1, 11):
    g = sum((w * x - y) * x for x, y in pairs) / len(pairs)
    w -= 0.05 * g
    print("step", step, "w", repr(w))
PYSRC

# (a) one exec: run-1 makes the cache, run-2 reads it.
expect_rc 0 "$REPRUN" exec -o "$T/E" -q -- "$PY" prep.py
grep -q '^PASS: 2 runs of the program identical' "$T/out" || fail "(a) $(cat "$T/out")"
grep -q 'raw.csv' "$T/out" && fail "(a) raw.csv named: $(cat "$T/out")"

# (d) what run-1 left: the cache's size, time and content.
"$PY" - "$T/E/run-1/inputs.jsonl" <<'PYCHECK' || fail "(d) $(grep cache.txt "$T/E/run-1/inputs.jsonl")"
import json, sys
rec = {r["path"]: r for r in map(json.loads, open(sys.argv[1]))}
c = rec["cache.txt"]
assert c["class"] == "written" and c["written"], c
left = c["left"]
assert left["size"] == 32 and left["mtime_ns"] > 0, left
assert left["content"]["size"] == 32 and len(left["content"]["sha256"]) == 64, left
assert rec["raw.csv"]["class"] == "data", rec["raw.csv"]
PYCHECK

# (b) a reference that made the cache, a later run that read it.
rm -f cache.txt
expect_rc 0 "$REPRUN" exec -o "$T/A" --runs 1 -q -- "$PY" prep.py
expect_rc 0 "$REPRUN" exec -o "$T/B" --runs 1 -q -- "$PY" prep.py
expect_rc 0 "$REPRUN" diff "$T/A/run-1" "$T/B/run-1"
grep -q '^IDENTICAL' "$T/out" || fail "(b) $(cat "$T/out")"
grep -qF 'inputs.files.cache.txt: written -> read (B read the file A wrote: the same bytes)' "$T/out" ||
  fail "(b) the cache: $(cat "$T/out")"
grep -qF 'inputs.files.raw.csv: read -> (not read) (read by A only: B read instead what A made (cache.txt))' "$T/out" ||
  fail "(b) the raw table: $(cat "$T/out")"
# The other way round, the same.
expect_rc 0 "$REPRUN" diff "$T/B/run-1" "$T/A/run-1"
grep -qF 'inputs.files.cache.txt: read -> written (A read the file B wrote: the same bytes)' "$T/out" ||
  fail "(b) B against A: $(cat "$T/out")"

# (c) the cache made again with other bytes (line 3 changed), then read by a later run.
printf '1.0 2.0\n2.0 4.0\n3.0 6.0\n4.0 8.0\n' >cache.txt
expect_rc 0 "$REPRUN" exec -o "$T/C" --runs 1 -q -- "$PY" prep.py
expect_rc 1 "$REPRUN" diff "$T/A/run-1" "$T/C/run-1"
first_meta "$T/out" | grep -qF '[dataset] cache.txt: A wrote it and B read other bytes: line 3 changed (4 lines in both)' ||
  fail "(c) first difference: $(cat "$T/out")"
first_cause "$T/out" | grep -qF 'the training data changed (cache.txt: A wrote it and B read other bytes' ||
  fail "(c) first cause: $(cat "$T/out")"
grep -q 'raw.csv: read by A only' "$T/out" || fail "(c) raw.csv, read by A only, counted: $(cat "$T/out")"
# What changed is said from A to B whichever run wrote it (before, from the writer to the reader:
# a cache that grew in B was "4 -> 3 lines" when B wrote it).
printf '1.0 2.0\n2.0 4.0\n3.0 6.5\n' >cache.txt
expect_rc 0 "$REPRUN" exec -o "$T/C3" --runs 1 -q -- "$PY" prep.py
rm cache.txt
expect_rc 0 "$REPRUN" exec -o "$T/C4" --runs 1 -q -- "$PY" prep.py
expect_rc 1 "$REPRUN" diff "$T/C3/run-1" "$T/C4/run-1"
first_meta "$T/out" | grep -qF '[dataset] cache.txt: B wrote it and A read other bytes: 3 -> 4 lines; the first 3 are identical (1 appended)' ||
  fail "(c) B the writer: $(cat "$T/out")"
expect_rc 1 "$REPRUN" diff "$T/C4/run-1" "$T/C3/run-1"
first_meta "$T/out" | grep -qF '[dataset] cache.txt: A wrote it and B read other bytes: 4 -> 3 lines' ||
  fail "(c) A the writer: $(cat "$T/out")"

# (e) --stat-only: the cache's size and time, never its content.
rm -f cache.txt
expect_rc 0 "$REPRUN" exec -o "$T/SA" --runs 1 -q --stat-only . -- "$PY" prep.py
grep -q '"path":"cache.txt","class":"written".*"stat_only":true,"left":{"size":32,"mtime_ns":[0-9]*}}' "$T/SA/run-1/inputs.jsonl" ||
  fail "(e) $(grep cache.txt "$T/SA/run-1/inputs.jsonl")"
expect_rc 0 "$REPRUN" exec -o "$T/SB" --runs 1 -q --stat-only . -- "$PY" prep.py
expect_rc 0 "$REPRUN" diff "$T/SA/run-1" "$T/SB/run-1"
grep -qF 'inputs.files.cache.txt: written -> read (B read the file A wrote: the same size and time (its content was not read after the run))' "$T/out" ||
  fail "(e) $(cat "$T/out")"
# A data file under --stat-only rewritten with as many bytes: no difference can be shown, but the
# other time is said (before: a plain IDENTICAL); unchanged, no note.
mkdir -p st && printf 'abc\n' >st/d.txt && touch -d '2020-01-01 00:00:00' st/d.txt
expect_rc 0 "$REPRUN" exec -o "$T/SC" --runs 1 -q --stat-only st -- wc -c st/d.txt
expect_rc 0 "$REPRUN" exec -o "$T/SD" --runs 1 -q --stat-only st -- wc -c st/d.txt
expect_rc 0 "$REPRUN" diff "$T/SC/run-1" "$T/SD/run-1"
grep -q 'stat-only' "$T/out" && fail "(e) unchanged --stat-only file noted: $(cat "$T/out")"
printf 'xyz\n' >st/d.txt
expect_rc 0 "$REPRUN" exec -o "$T/SE" --runs 1 -q --stat-only st -- wc -c st/d.txt
expect_rc 0 "$REPRUN" diff "$T/SC/run-1" "$T/SE/run-1"
grep -qF 'st/d.txt was recorded by size and time only (--stat-only): the same size in both runs, modified at other times; its bytes were not compared' "$T/out" ||
  fail "(e) same size, other time: $(cat "$T/out")"

# (f) a folder filled, then listed.
cat >get.py <<'PYSRC'
import os
root = "dl/imgs"
if not os.path.isdir(root):
    os.makedirs(root)
    for i in range(3):
        with open(os.path.join(root, "%d.txt" % i), "w") as f:
            f.write("%d %d\n" % (i, i * i))
total = 0
for name in sorted(os.listdir(root)):
    with open(os.path.join(root, name)) as f:
        total += sum(int(v) for v in f.read().split())
print("total", total)
PYSRC
expect_rc 0 "$REPRUN" exec -o "$T/DA" --runs 1 -q -- "$PY" get.py
expect_rc 0 "$REPRUN" exec -o "$T/DB" --runs 1 -q -- "$PY" get.py
expect_rc 0 "$REPRUN" diff "$T/DA/run-1" "$T/DB/run-1"
grep -qF 'inputs.files.dl/imgs: 0 entries -> 3 entries (B found the 3 files A made there (0.txt, 1.txt, 2.txt))' "$T/out" ||
  fail "(f) $(cat "$T/out")"
printf '7 7\n' >dl/imgs/9.txt
expect_rc 0 "$REPRUN" exec -o "$T/DC" --runs 1 -q -- "$PY" get.py
expect_rc 1 "$REPRUN" diff "$T/DA/run-1" "$T/DC/run-1"
first_meta "$T/out" | grep -qF '[dataset] dl/imgs: a folder of 0 -> 4 entries: 1 added (9.txt)' || fail "(f) an added file: $(cat "$T/out")"

# (g) the cache outside the working directory ($T/g), where the data is not.
mkdir -p "$T/g" "$T/home/.cache/prep"
cp raw.csv "$T/g/"
sed 's|"cache.txt"|os.environ["PREP_CACHE"]|g' prep.py >"$T/g/prep.py"
cd "$T/g" || fail "cd $T/g"
export PREP_CACHE=$T/home/.cache/prep/cache.txt
expect_rc 0 "$REPRUN" exec -o "$T/GA" --runs 1 -q -- "$PY" prep.py
grep -q "\"path\":\"$PREP_CACHE\",\"class\":\"written\".*\"left\":{\"size\":32," "$T/GA/run-1/inputs.jsonl" ||
  fail "(g) the cache A left: $(grep cache.txt "$T/GA/run-1/inputs.jsonl")"
expect_rc 0 "$REPRUN" exec -o "$T/GB" --runs 1 -q -- "$PY" prep.py
expect_rc 0 "$REPRUN" diff "$T/GA/run-1" "$T/GB/run-1"
grep -qF "inputs.files.raw.csv: read -> (not read) (read by A only: B read instead what A made ($PREP_CACHE))" "$T/out" ||
  fail "(g) $(cat "$T/out")"
cat >prep_mv.py <<'PYSRC'
import os
cache = os.environ["PREP_CACHE"] + ".mv"
if not os.path.exists(cache):
    rows = [line.strip().split(",") for line in open("raw.csv")][1:]
    with open(cache + ".incomplete", "w") as f:
        for x, y in rows:
            f.write("%s %s\n" % (float(x), float(y)))
    os.replace(cache + ".incomplete", cache)
print(sum(float(v) for line in open(cache) for v in line.split()))
PYSRC
expect_rc 0 "$REPRUN" exec -o "$T/GC" --runs 1 -q -- "$PY" prep_mv.py
grep -q "\"path\":\"$PREP_CACHE.mv\",\"class\":\"other\".*\"made_during_run\":true" "$T/GC/run-1/inputs.jsonl" ||
  fail "(g) the renamed cache: $(grep cache.txt.mv "$T/GC/run-1/inputs.jsonl")"
expect_rc 0 "$REPRUN" exec -o "$T/GD" --runs 1 -q -- "$PY" prep_mv.py
expect_rc 0 "$REPRUN" diff "$T/GC/run-1" "$T/GD/run-1"
grep -qF "inputs.files.raw.csv: read -> (not read) (read by A only: B read instead what A made ($PREP_CACHE.mv))" "$T/out" ||
  fail "(g) renamed: $(cat "$T/out")"
cd "$T" || fail "cd $T"

# (h) what the maker read after it made the file the other read.
cat >late.py <<'PYSRC'
import os
if not os.path.exists("fonts.txt"):  # a library's cache, made when it is imported
    with open("fonts.txt", "w") as f:
        f.write("serif\n")
open("fonts.txt").read()
if not os.environ.get("SKIP_DATA"):
    print(sum(float(line.split(",")[1]) for line in open("raw.csv").readlines()[1:]))
PYSRC
rm -f fonts.txt
expect_rc 0 "$REPRUN" exec -o "$T/HA" --runs 1 -q -- "$PY" late.py
SKIP_DATA=1 expect_rc 0 "$REPRUN" exec -o "$T/HB" --runs 1 -q -- "$PY" late.py
expect_rc 1 "$REPRUN" diff "$T/HA/run-1" "$T/HB/run-1"
first_meta "$T/out" | grep -qF '[dataset] raw.csv: read by A only (python3' || fail "(h) $(cat "$T/out")"
grep -qF 'inputs.files.fonts.txt: written -> read (B read the file A wrote: the same bytes)' "$T/out" ||
  fail "(h) the font cache: $(cat "$T/out")"

# (i) the working directory listed, the records kept in it.
mkdir -p "$T/i"
cd "$T/i" || fail "cd $T/i"
printf '1\n2\n' >a.csv
cat >ls.py <<'PYSRC'
import os
print(sum(float(v) for n in sorted(os.listdir(".")) if n.endswith(".csv") for v in open(n)))
PYSRC
expect_rc 0 "$REPRUN" exec -o ref --runs 1 -q -- "$PY" ls.py
expect_rc 0 "$REPRUN" exec -o new --runs 1 -q -- "$PY" ls.py
expect_rc 0 "$REPRUN" diff ref/run-1 new/run-1
grep -q '^IDENTICAL' "$T/out" || fail "(i) $(cat "$T/out")"
grep -qF "\"path\":\".\",\"class\":\"data\",\"folder\":true" new/run-1/inputs.jsonl ||
  fail "(i) no listing of the working directory: $(grep folder new/run-1/inputs.jsonl)"
grep -F "\"path\":\".\"," new/run-1/inputs.jsonl | grep -qF '"names":["a.csv","ls.py"]' ||
  fail "(i) the listing: $(grep -F "\"path\":\".\"," new/run-1/inputs.jsonl)"
cd "$T" || fail "cd $T"
pass
