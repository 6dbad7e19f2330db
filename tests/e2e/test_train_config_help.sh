# Config errors help: a file-format key without data.kind says data.kind is missing, an unknown key
# is matched against every key of every section, and an option of the other optimizer says whose
# it is. Each is exit 2, one line naming the file and the key, and no run directory.
source "$(dirname "$0")/lib.sh"
bad() { # bad PATTERN CONFIG_TEXT
  printf '%s' "$2" >"$T/bad.json"
  expect_error "$1" "$REPRUN" train "$T/bad.json" -o "$T/run"
  [[ ! -e "$T/run" ]] || fail "a run directory was created for: $2"
}
bad 'bad.json: data.kind: missing: data.path is read for data.kind "csv" \(the default is "synthetic"\); add "kind": "csv" to data' \
  '{"data": {"path": "d.csv"}}'
bad 'bad.json: data.kind: missing: data.images is read for data.kind "idx"' '{"data": {"images": "i", "labels": "l"}}'
bad 'bad.json: data.samples: read only for data.kind "synthetic" \(data.kind is "csv"\)' \
  '{"data": {"kind": "csv", "path": "d.csv", "samples": 10}}'
bad "bad.json: learning_rate: unknown key \(did you mean 'optimizer.lr'\?\)" '{"learning_rate": 0.1}'
bad "bad.json: training.learning_rate: unknown key \(did you mean 'optimizer.lr'\?\)" '{"training": {"learning_rate": 0.1}}'
bad "bad.json: training.momentum: unknown key \(did you mean 'optimizer.momentum'\?\)" '{"training": {"momentum": 0.9}}'
bad "bad.json: epochs: unknown key \(did you mean 'training.epochs'\?\)" '{"epochs": 3}'
bad "bad.json: optimizer.lrr: unknown key \(did you mean 'lr'\?\)" '{"optimizer": {"lrr": 0.1}}'
bad 'bad.json: optimizer.momentum: momentum is an SGD option \(optimizer.name is "adam"\); Adam.s momentum is optimizer.beta1' \
  '{"optimizer": {"name": "adam", "momentum": 0.9}}'
bad 'bad.json: optimizer.beta2: beta2 is an Adam option \(optimizer.name is "sgd"\)' '{"optimizer": {"beta2": 0.99}}'
# Through --set too.
small_config "$T/ok.json"
expect_error "ok.json: training.lr: unknown key \(did you mean 'optimizer.lr'\?\)" \
  "$REPRUN" train "$T/ok.json" -o "$T/run" --set training.lr=0.1
pass
