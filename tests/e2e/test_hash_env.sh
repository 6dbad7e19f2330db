# reprun hash and reprun env as a user runs them: the root matches an independent computation,
# --json lists every file, --explain shows the transcript, the cache makes a re-hash hit, errors
# exit 2; reprun env --json carries every section.
source "$(dirname "$0")/lib.sh"
export XDG_CACHE_HOME="$T/cache"
mkdir -p "$T/tree/sub"
printf 'abc' >"$T/tree/a.txt"
printf 'hello\n' >"$T/tree/sub/b.txt"
touch -d '2020-01-01' "$T/tree/a.txt" "$T/tree/sub/b.txt"
want=$(python3 - "$T/tree" <<'PYEOF'
import hashlib, os, sys
def field(tag, value):
    v = value.encode()
    return tag.encode() + b"\0" + str(len(v)).encode() + b":" + v
root = sys.argv[1]
entries = []
for d, _, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        entries.append((os.path.relpath(p, root), open(p, "rb").read()))
h = hashlib.sha256(field("format", "reprun.tree/1"))
for p, data in sorted(entries):
    for t, v in (("type", "file"), ("path", p), ("size", str(len(data))), ("sha256", hashlib.sha256(data).hexdigest())):
        h.update(field(t, v))
print("sha256:" + h.hexdigest())
PYEOF
)
expect_rc 0 "$REPRUN" hash "$T/tree"
grep -q "^$want  (2 entries, 9 bytes)" "$T/out" || fail "root $(cat "$T/out") != independent $want"
echo x >"$T/one.txt"
expect_rc 0 "$REPRUN" hash "$T/one.txt"
grep -q '(1 entry, 2 bytes)$' "$T/out" || fail "one entry: $(cat "$T/out")"
expect_rc 0 "$REPRUN" hash "$T/tree" --explain
grep -q 'file path="sub/b.txt" size=6 sha256=5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03' "$T/out" ||
  fail "transcript: $(cat "$T/out")"
expect_rc 0 "$REPRUN" hash "$T/tree" --json
python3 - "$T/out" <<'PYEOF' || fail "hash --json: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert [f["path"] for f in r["files"]] == ["a.txt", "sub/b.txt"], r["files"]
assert r["cache"]["hits"] == 2 and r["cache"]["misses"] == 0, r["cache"]
PYEOF
[[ -f "$T/cache/reprun/hash-cache-v1.log" ]] || fail "cache not under XDG_CACHE_HOME"
expect_rc 0 "$REPRUN" hash "$T/tree" --json --no-cache
grep -q '"hits": 0' "$T/out" || fail "--no-cache used the cache"
expect_error 'nope: no such file or directory' "$REPRUN" hash "$T/nope"

expect_rc 0 "$REPRUN" env --json --env-allow 'REPRUN_TEST_*'
python3 - "$T/out" <<'PYEOF' || fail "env --json: $(head -c 2000 "$T/out")"
import json, sys
e = json.load(open(sys.argv[1]))
for k in ["reprun", "host", "gpu", "env", "code"]:
    assert k in e, k
for k in ["version", "git_commit", "build_type", "compiler", "flags", "libraries"]:
    assert k in e["reprun"], k
for k in ["CLI11", "fmt", "nlohmann_json", "openssl", "xxhash"]:
    assert k in e["reprun"]["libraries"], k
for k in ["os", "kernel", "libc", "cpu_model", "isa", "logical_cores", "memory"]:
    assert k in e["host"], k
assert "count" in e["gpu"]
assert e["env"]["PYTHONHASHSEED"] is None or isinstance(e["env"]["PYTHONHASHSEED"], str)
PYEOF
expect_rc 0 "$REPRUN" env
grep -q '^host:' "$T/out" || fail "env text output"
pass
