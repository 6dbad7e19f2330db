# What a program read, on bad input (issue 36 item 5): each recorded or refused as what it is, with
# a note, never a crash or a hang:
#  (a) a file deleted by the program before reprun hashes it, a FIFO, a device, a symbolic-link loop,
#      a data file reached through a symbolic link, names with a newline and with bytes that are not
#      UTF-8: inputs.jsonl is valid JSON, every one recorded, the notes say why one has no digest;
#  (b) a program that opens one file 50,000 times: one record of it;
#  (c) an install path with a space (which LD_PRELOAD cannot carry): a note, the run recorded, its
#      Python process's files still recorded by the audit hook;
#  (d) a file made unreadable after the program read it (not as root): a note, no digest;
#  (e) a record whose inputs.jsonl was lost or cut: diff refuses it (exit 2), never reads it as a
#      program that read nothing;
#  (f) a record edited by hand where no digest guards it (summary.json's inputs_log removed too, as
#      in a run of an older reprun): a key of another type, a class reprun does not know, no path, a
#      last line cut, the manifest's inputs section removed or of another type, its kind a number,
#      the folder of code copies a link to another: diff refuses each with the file, the line and
#      the key (before: a JSON library's type error naming nothing, a record dropped in silence,
#      IDENTICAL, or a link followed);
#  (g) --data-dir or --stat-only empty, naming no folder, or given with --no-inputs: one error line
#      naming the option, exit 2, before the program runs and with no run directory made (before: an
#      empty one ran the program, then failed with a file system error naming nothing, its run
#      directory left half made; a mistyped one made nothing data, in silence).
source "$(dirname "$0")/lib.sh"
PY=$(command -v python3) || skip "no python3"

cat >bad.py <<'PYSRC'
import os
def read(p):
    with open(p, "rb") as f:
        f.read()
read("gone.csv")
os.remove("gone.csv")
os.mkfifo("pipe")
os.close(os.open("pipe", os.O_RDONLY | os.O_NONBLOCK))
open("/dev/zero", "rb").read(16)
try:
    open("loop")
except OSError:
    pass
read("linked.csv")
read("new\nline.csv")
read(b"latin\xff.csv")
PYSRC
echo "1,2" >gone.csv
echo "3,4" >real.csv
ln -s real.csv linked.csv
ln -s loop loop
echo "5,6" >"new
line.csv"
"$PY" -c "open(b'latin\xff.csv', 'w').write('7,8\n')"
timeout 120 "$REPRUN" exec -o "$T/a" --runs 1 -q -- "$PY" bad.py >"$T/out" 2>"$T/err"
RC=$?
[[ $RC == 0 ]] || fail "(a) exit $RC: $(cat "$T/out" "$T/err")"
"$PY" - "$T/a/run-1/inputs.jsonl" <<'PYCHECK' || fail "(a) $(cut -c1-300 "$T/a/run-1/inputs.jsonl" | grep -v '"other"')"
import json, sys
files = {}
for line in open(sys.argv[1], encoding="utf-8"):
    j = json.loads(line)
    files[j["path"]] = j
def has(p, cls):
    assert p in files, (p, sorted(k for k in files if not k.startswith("/")))
    assert files[p]["class"] == cls, files[p]
    return files[p]
assert "gone before reprun read it" in has("gone.csv", "data").get("note", ""), files["gone.csv"]
assert "FIFO" in has("pipe", "data").get("note", ""), files["pipe"]
assert files["/dev/zero"]["class"] == "other", files["/dev/zero"]
assert has("loop", "data")["existed"] is False, files["loop"]
assert "content" in has("linked.csv", "data"), files["linked.csv"]
assert "content" in has("new\nline.csv", "data"), files["new\nline.csv"]
latin = [p for p in files if p.startswith("latin")]
assert len(latin) == 1 and "content" in files[latin[0]], latin
PYCHECK

# (b) one file opened 50,000 times.
cat >many.py <<'PYSRC'
for i in range(50000):
    with open("real.csv") as f:
        f.read()
PYSRC
timeout 300 "$REPRUN" exec -o "$T/b" --runs 1 -q -- "$PY" many.py >"$T/out" 2>"$T/err" || fail "(b) exit $?: $(cat "$T/err")"
[[ $(grep -c '"path":"real.csv"' "$T/b/run-1/inputs.jsonl") == 1 ]] || fail "(b) real.csv not recorded once"

# (c) reprun installed under a path with a space.
inst="$T/with space"
mkdir -p "$inst"
cp "$REPRUN" "$(dirname "$REPRUN")/libreprun_preload.so" "$inst/"
cp -r "$(dirname "$REPRUN")/python" "$inst/" 2>/dev/null || true
"$inst/reprun" exec -o "$T/c" --runs 1 -- "$PY" -c "open('real.csv').read()" >"$T/out" 2>"$T/err" || fail "(c) exit $?: $(cat "$T/err")"
grep -q "holds a space or a colon, which LD_PRELOAD cannot carry" "$T/err" || fail "(c) no note: $(cat "$T/err")"
"$PY" - "$T/c/run-1/manifest.json" <<'PYCHECK' || fail "(c) $(cat "$T/c/run-1/manifest.json" | head -c 2000)"
import json, sys
m = json.load(open(sys.argv[1]))
assert m.get("env", {}).get("LD_PRELOAD") is None, m.get("env")  # never recorded as the program's
assert "space or a colon" in m["inputs"].get("preload", ""), m["inputs"]
assert any(f["path"] == "real.csv" for f in m["inputs"]["files"]), m["inputs"]
PYCHECK

# (d) unreadable after the read (root reads anything: not tested as root).
if [[ $(id -u) != 0 ]]; then
  echo "9,9" >locked.csv
  cat >lock.py <<'PYSRC'
import os
open("locked.csv").read()
os.chmod("locked.csv", 0)
PYSRC
  "$REPRUN" exec -o "$T/d" --runs 1 -q -- "$PY" lock.py >"$T/out" 2>"$T/err" || fail "(d) exit $?: $(cat "$T/err")"
  grep -q '"path":"locked.csv".*"note":"[^"]*cannot read' "$T/d/run-1/inputs.jsonl" || fail "(d) $(grep locked "$T/d/run-1/inputs.jsonl")"
  chmod 644 locked.csv
fi

# (e) inputs.jsonl lost or cut after the record: before, a lost one was "read nothing" and every file
# the other run read a difference.
"$REPRUN" exec -o "$T/e" --runs 1 -q -- "$PY" -c 'open("real.csv").read()' >"$T/out" 2>"$T/err" || fail "(e) exit $?: $(cat "$T/err")"
cp -r "$T/e" "$T/e2"
rm "$T/e2/run-1/inputs.jsonl"
expect_error "^reprun: error: .*e2/run-1/inputs.jsonl: missing: summary.json records [0-9]+ lines of what the program read" \
  "$REPRUN" diff "$T/e/run-1" "$T/e2/run-1"
head -n 1 "$T/e/run-1/inputs.jsonl" >"$T/e2/run-1/inputs.jsonl"
expect_error "^reprun: error: .*e2/run-1/inputs.jsonl: damaged: its 1 record does not match the digest in summary.json" \
  "$REPRUN" diff "$T/e/run-1" "$T/e2/run-1"

# (f) hand-edited records that no digest guards.
edit() { # edit RUN PYTHON: runs PYTHON with m (manifest), s (summary) and lines (inputs.jsonl's) loaded, then writes them back
  "$PY" - "$1" "$2" <<'PYSRC'
import json, os, sys
run, code = sys.argv[1], sys.argv[2]
m = json.load(open(run + "/manifest.json"))
s = json.load(open(run + "/summary.json"))
lines = open(run + "/inputs.jsonl").read().splitlines(keepends=True)
s.pop("inputs_log", None)
exec(code)
json.dump(m, open(run + "/manifest.json", "w"))
json.dump(s, open(run + "/summary.json", "w"))
open(run + "/inputs.jsonl", "w").write("".join(lines))
PYSRC
}
bad() { # bad PATTERN PYTHON: a fresh copy of e edited by PYTHON, then diff refuses it with PATTERN
  rm -rf "$T/f" && cp -r "$T/e" "$T/f"
  edit "$T/f/run-1" "$2" || fail "(f) edit: $2"
  expect_error "$1" "$REPRUN" diff "$T/e/run-1" "$T/f/run-1"
}
bad "f/run-1/inputs.jsonl:1: path: must be a file's path \(a string\), not a number" \
  'r = json.loads(lines[0]); r["path"] = 5; lines[0] = json.dumps(r) + "\n"'
bad "f/run-1/inputs.jsonl:1: class: must be one of data, code, other, written, not \"weird\"" \
  'r = json.loads(lines[0]); r["class"] = "weird"; lines[0] = json.dumps(r) + "\n"'
bad "f/run-1/inputs.jsonl:1: path: missing" 'r = json.loads(lines[0]); del r["path"]; lines[0] = json.dumps(r) + "\n"'
bad "f/run-1/inputs.jsonl:[0-9]+: content.sha256: must be a string, not a number" \
  'i = next(i for i, l in enumerate(lines) if "\"content\"" in l); r = json.loads(lines[i]); r["content"]["sha256"] = 1; lines[i] = json.dumps(r) + "\n"'
bad "f/run-1/inputs.jsonl:1: read: must be true or false, not a string" \
  'r = json.loads(lines[0]); r["read"] = "yes"; lines[0] = json.dumps(r) + "\n"'
bad "f/run-1/inputs.jsonl:[0-9]+: cut short \(no end of line\)" 'lines[-1] = lines[-1].rstrip("\n")'
bad "f/run-1/manifest.json: inputs: missing, though the run directory holds inputs.jsonl" 'del m["inputs"]'
bad "f/run-1/manifest.json: inputs: must be an object, not a number" 'm["inputs"] = 5'
bad "f/run-1/manifest.json: inputs: recorded: must be the record's format \(a string\) or false, not a number" \
  'm["inputs"]["recorded"] = 7'
bad "f/run-1/manifest.json: kind: must be a string, not a number" 'm["kind"] = 5'
bad "f/run-1/manifest.json: format: must be a string, not a number" 'm["format"] = 7'
# The folder of code copies linked elsewhere: refused as any link inside a run directory.
printf 'x = 1\n' >helper.py
"$REPRUN" exec -o "$T/g" --runs 1 -q -- "$PY" -c 'import helper' >"$T/out" 2>"$T/err" || fail "(f) exec: $(cat "$T/err")"
printf 'x = 2\n' >helper.py
"$REPRUN" exec -o "$T/h" --runs 1 -q -- "$PY" -c 'import helper' >"$T/out" 2>"$T/err" || fail "(f) exec: $(cat "$T/err")"
[[ -d "$T/h/run-1/code" ]] || fail "(f) no code copies: $(ls "$T/h/run-1")"
mv "$T/h/run-1/code" "$T/elsewhere" && ln -s "$T/elsewhere" "$T/h/run-1/code"
expect_error "h/run-1/code: is a symbolic link; reprun does not follow links inside a run directory" \
  "$REPRUN" diff "$T/g/run-1" "$T/h/run-1"
rm -rf "$T/f" && cp -r "$T/e" "$T/f" && edit "$T/f/run-1" 'pass'
expect_rc 0 "$REPRUN" diff "$T/e/run-1" "$T/f/run-1" # the edit alone (inputs_log removed) changes nothing

# (g) the places of data named wrongly: refused before the program runs.
printf 'open("ran", "w").write("1")\n' >mark.py
for args in "--data-dir|--data-dir: an empty path: give a folder" "--data-dir $T/nowhere|--data-dir $T/nowhere: no such folder" \
  "--stat-only $T/nowhere/x|--stat-only $T/nowhere/x: no such folder" \
  "--no-inputs --data-dir $T|--data-dir $T: says how to record what the program read, which --no-inputs turns off"; do
  IFS='|' read -r opts said <<<"$args"
  read -ra words <<<"$opts"
  [[ ${#words[@]} == 1 ]] && words+=("") # --data-dir ''
  rm -rf "$T/g2" ran
  expect_error "^reprun: error: $said" "$REPRUN" exec -o "$T/g2" --runs 1 -q "${words[@]}" -- "$PY" mark.py
  [[ ! -e ran && ! -e $T/g2 ]] || fail "(g) $opts: the program ran or a run directory was made: $(ls "$T/g2" 2>&1)"
done
pass
