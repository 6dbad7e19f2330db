# The JSON helpers of lib.sh fail loudly on a key that is not there (sed would silently do
# nothing), and edit exactly what they are told.
. "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
json_edit "$T/c.json" training.epochs=7 'model.hidden=[4]' model.activation+=tanh model.dropout+=0.1
[[ $(json_get "$T/c.json" training.epochs) == 7 ]] || fail "epochs not edited"
[[ $(json_get "$T/c.json" model.hidden) == "[4]" ]] || fail "hidden not edited"
[[ $(json_get "$T/c.json" model.activation) == tanh ]] || fail "a string value"
[[ $(json_get "$T/c.json" model.dropout) == 0.1 ]] || fail "an added key"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/run" -q
# A moved or misspelt key is an error, in a subshell so that this test goes on.
( json_edit "$T/c.json" training.epoch=3 ) 2>"$T/e1" && fail "json_edit accepted a missing key"
grep -q "no key 'training.epoch'" "$T/e1" || fail "json_edit error: $(cat "$T/e1")"
( json_edit "$T/c.json" optim.lr=3 ) 2>"$T/e2" && fail "json_edit accepted a missing parent"
grep -q "no key 'optim'" "$T/e2" || fail "json_edit error: $(cat "$T/e2")"
( json_get "$T/c.json" training.steps ) 2>"$T/e3" && fail "json_get printed a missing key"
grep -q "no key 'training.steps'" "$T/e3" || fail "json_get error: $(cat "$T/e3")"
# KEY:delete removes a key that is there, and fails on one that is not; KEY=null sets null.
json_edit "$T/c.json" model.dropout:delete training.eval_every=null
( json_get "$T/c.json" model.dropout ) 2>/dev/null && fail "model.dropout was not deleted"
[[ $(json_get "$T/c.json" training.eval_every) == null ]] || fail "KEY=null should set null"
( json_edit "$T/c.json" model.dropout:delete ) 2>"$T/e4" && fail "json_edit deleted a missing key"
grep -q "no key 'model.dropout'" "$T/e4" || fail "json_edit error: $(cat "$T/e4")"
( json_edit "$T/c.json" optim.lr:delete ) 2>"$T/e5" && fail "json_edit deleted under a missing parent"
grep -q "no key 'optim'" "$T/e5" || fail "json_edit error: $(cat "$T/e5")"
# Not even += creates a missing parent, nor goes through a value that is not an object.
( json_edit "$T/c.json" optim.lr+=3 ) 2>"$T/e6" && fail "json_edit created a missing parent"
grep -q "no key 'optim'" "$T/e6" || fail "json_edit error: $(cat "$T/e6")"
( json_edit "$T/c.json" seed.x+=1 ) 2>"$T/e7" && fail "json_edit went through a number"
grep -q "seed is not an object" "$T/e7" || fail "json_edit error: $(cat "$T/e7")"
# A bad edit writes nothing, not even the good edits before it.
cp "$T/c.json" "$T/before.json"
( json_edit "$T/c.json" training.epochs=9 training.epoch=9 ) 2>/dev/null && fail "json_edit accepted a missing key"
cmp -s "$T/c.json" "$T/before.json" || fail "a failed json_edit changed the file"
( json_edit "$T/c.json" training.epochs ) 2>"$T/e8" && fail "json_edit accepted an edit with no value"
grep -q "none of KEY=VALUE" "$T/e8" || fail "json_edit error: $(cat "$T/e8")"
# The failure reaches the test: json_edit in a test of its own ends it with FAIL.
( json_edit "$T/c.json" training.epoch=3; echo "went on" ) >"$T/o9" 2>"$T/e9"
[[ $? != 0 ]] || fail "a failed json_edit did not end the test"
grep -q "went on" "$T/o9" && fail "the test went on after a failed json_edit"
grep -q "^FAIL: json_edit" "$T/e9" || fail "no FAIL line: $(cat "$T/e9")"
pass
