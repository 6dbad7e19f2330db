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
pass
