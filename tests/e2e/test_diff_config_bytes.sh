# A config file that differs only in its bytes is not a difference: two runs of the same config,
# one file re-saved with other whitespace, or with another description, or with another execution
# setting (trace level, accumulation split), diff as IDENTICAL (exit 0) with config_file.sha256
# listed as not counted; a real hyperparameter change still fails, naming the key, and counts one
# field (the key), not the digests that follow it.
source "$(dirname "$0")/lib.sh"

small_config "$T/c.json"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/base" -q

# variant NAME PYTHON-EDIT: the config re-saved by json.dump (other whitespace) after an edit.
variant() {
  python3 - "$T/c.json" "$T/$1.json" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"))
PY
  expect_rc 0 "$REPRUN" train "$T/$1.json" -o "$T/$1" -q
}

for v in "whitespace|pass" \
         "description|c['description'] = 'the same run, described'" \
         "trace|c['determinism'] = {'trace': 'loss'}" \
         "accumulation|c['training']['accumulation'] = 2"; do
  name=${v%%|*}
  variant "$name" "${v#*|}"
  cmp -s "$T/c.json" "$T/$name.json" && fail "$name: the re-saved config has the same bytes"
  run_rc "$REPRUN" diff "$T/base" "$T/$name"
  [[ $RC == 0 ]] || fail "$name: expected IDENTICAL (exit 0), got $RC: $(head -30 "$T/out")"
  grep -q '^IDENTICAL: ' "$T/out" || fail "$name: $(head -1 "$T/out")"
  grep -qE "^ +config_file.sha256: .*\(the file's bytes only: the resolved configs are equal but for execution settings\)" "$T/out" ||
    fail "$name: config_file.sha256 not listed as not counted: $(cat "$T/out")"
done
run_rc "$REPRUN" diff "$T/base" "$T/whitespace" --format json
python3 - "$T/out" <<'PY' || fail "json: $(head -c 3000 "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["identical"], r["verdict"]
m = [d for d in r["metadata"] if d["key"] == "config_file.sha256"]
assert m and m[0]["kind"] == "informational" and "bytes only" in m[0]["why"], m
PY

# A real change: exit 1, named, one field counted.
variant lr "c['optimizer'] = {'lr': 0.07}"
expect_rc 1 "$REPRUN" diff "$T/base" "$T/lr"
grep -q '^DIFFERENT: runs part at step 1 (computation); 1 metadata field differs$' "$T/out" ||
  fail "lr: $(head -1 "$T/out")"
grep -qE '^  \[config\] config.optimizer.lr: 0.05 -> 0.07' "$T/out" || fail "lr: not named: $(cat "$T/out")"
grep -qE "^ +config_file.sha256: .*\(a digest of the config keys listed\)" "$T/out" ||
  fail "lr: the digest is not listed as following the keys: $(cat "$T/out")"
grep -q 'hyperparameters changed: optimizer.lr 0.05 -> 0.07' "$T/out" || fail "lr: cause: $(cat "$T/out")"
pass
