# Every bad input gets exit 2, one line naming the file and the key or line, and no run directory
# that looks complete.
source "$(dirname "$0")/lib.sh"

check_no_run() {
  [[ ! -e "$T/run/manifest.json" ]] || fail "a manifest was written for bad input: $*"
}

bad() { # bad PATTERN CONFIG_TEXT [extra args]
  local pattern=$1 text=$2
  shift 2
  printf '%s' "$text" >"$T/bad.json"
  expect_error "$pattern" "$REPRUN" train "$T/bad.json" -o "$T/run" "$@"
  check_no_run "$text"
}

bad 'bad.json:1:[0-9]+: invalid JSON' '{"seed": 1,'
bad 'bad.json:3:[0-9]+: invalid JSON' $'{\n "seed": 1\n "model": {}}'
bad 'bad.json: expected a JSON object' '[1, 2]'
bad 'bad.json: optimizer.lr: given twice in one object' '{"optimizer": {"lr": 0.1, "name": "sgd", "lr": 0.2}}'
# A number beyond a double is bad JSON too, named with its file and line like any other.
bad 'bad.json:2:[0-9]+: invalid JSON: the number 1e400 is beyond the range of a double' $'{"seed": 1,\n "optimizer": {"lr": 1e400}}'
bad "bad.json: optimzer: unknown key \(did you mean 'optimizer'\?\)" '{"optimzer": {}}'
bad "bad.json: optimizer.lrr: unknown key \(did you mean 'lr'\?\)" '{"optimizer": {"lrr": 0.1}}'
bad 'bad.json: optimizer.lr: expected a number, got "fast"' '{"optimizer": {"lr": "fast"}}'
bad 'bad.json: optimizer.lr: must be > 0' '{"optimizer": {"lr": -1}}'
bad 'bad.json: seed: must be between 0 and 2147483647' '{"seed": 2147483648}'
bad 'bad.json: seed: expected an integer' '{"seed": 1.5}'
bad "bad.json: data.kind: expected one of .* \(did you mean 'synthetic'\?\)" '{"data": {"kind": "synthetc"}}'
bad 'bad.json: model.hidden: expected a list' '{"model": {"hidden": 64}}'
bad 'bad.json: model.hidden\[1\]: expected an integer width' '{"model": {"hidden": [64, 0]}}'
bad 'bad.json: model.activation: expected one of "relu", "tanh"' '{"model": {"activation": "gelu"}}'
bad 'bad.json: model.dropout: must be >= 0 and <= 0.95' '{"model": {"dropout": 1.0}}'
bad 'bad.json: training.batch_size: must be between 1' '{"training": {"batch_size": 0}}'
bad 'bad.json: training.steps: give either "epochs" or "steps"' '{"training": {"epochs": 1, "steps": 5}}'
bad 'bad.json: training.accumulation: must not exceed' '{"training": {"batch_size": 4, "accumulation": 8}}'
bad 'bad.json: determinism.reduction: expected one of' '{"determinism": {"reduction": "fast"}}'
bad 'bad.json: data: expected an object' '{"data": "mnist"}'
bad 'bad.json: training.batch_size: 5000 is larger than the [0-9]+ training samples' \
  '{"data": {"samples": 1000}, "training": {"batch_size": 5000}}'
bad 'bad.json: data.path: missing \(required\)' '{"data": {"kind": "csv"}}'

# Data files.
mkdir -p "$T/d"
printf 'a,b,label\n1,2,0\n3,4\n' >"$T/d/ragged.csv"
bad 'ragged.csv:3: row has 2 columns, expected 3 \(ragged row\)' '{"data": {"kind": "csv", "path": "d/ragged.csv"}}'
printf 'a,b,label\n1,x,0\n' >"$T/d/nonnum.csv"
bad "nonnum.csv:2:3: column 2: not a finite number: 'x'" '{"data": {"kind": "csv", "path": "d/nonnum.csv"}}'
# A double that no float32 holds would train as infinity (a non-finite loss, a run left behind).
printf 'a,b,label\n1,2,0\n3,1e39,1\n1,3,0\n2,2,1\n' >"$T/d/huge.csv"
bad "huge.csv:3:3: column 2: 1e39 is beyond the float32 range" '{"data": {"kind": "csv", "path": "d/huge.csv"}}'
# A folder whose first file has a header and a later one none: that file's first row was dropped.
mkdir -p "$T/parts" "$T/parts2"
printf 'a,b,label\n1,2,0\n2,3,1\n3,1,0\n' >"$T/parts/p1.csv"
printf '4,2,1\n5,3,0\n6,1,1\n' >"$T/parts/p2.csv"
bad 'parts/p2.csv:1: the first line is a row of numbers, not a header, but .*parts/p1.csv has one \(data.header "auto"' \
  '{"data": {"kind": "csv", "path": "parts"}}'
printf '1,2,0\n2,3,1\n3,1,0\n' >"$T/parts2/p1.csv"
printf 'a,b,label\n4,2,1\n5,3,0\n6,1,1\n' >"$T/parts2/p2.csv"
bad 'parts2/p2.csv:1: the first line is a header, but .*parts2/p1.csv has none' '{"data": {"kind": "csv", "path": "parts2"}}'
# A binary file's bytes are quoted escaped: no escape sequence reaches the terminal.
printf 'a,b,label\n\x1b[31mred,1,0\n' >"$T/d/ctl.csv"
bad "ctl.csv:2:1: column 1: not a finite number: '\\\\x1b\\[31mred'" '{"data": {"kind": "csv", "path": "d/ctl.csv"}}'
grep -q $'\x1b' "$T/err" && fail "a control byte of the data reached stderr: $(od -c "$T/err" | head -3)"
printf 'a,b,label\n1,2,0.5\n' >"$T/d/frac.csv"
bad 'frac.csv:2:5: label \(column 3, data.label_column\) must be a non-negative integer' '{"data": {"kind": "csv", "path": "d/frac.csv"}}'
printf 'a,b,label\n1,2,0\n1,2,7\n' >"$T/d/range.csv"
bad 'range.csv:3:5: label 7 out of range: data.classes is 3' '{"data": {"kind": "csv", "path": "d/range.csv", "classes": 3}}'
printf 'a,b,label\n' >"$T/d/empty.csv"
bad 'empty.csv: no data rows' '{"data": {"kind": "csv", "path": "d/empty.csv"}}'
bad 'd/missing.csv: no such file or directory' '{"data": {"kind": "csv", "path": "d/missing.csv"}}'
mkdir -p "$T/emptydir"
bad 'emptydir: directory contains no \*.csv file' '{"data": {"kind": "csv", "path": "emptydir"}}'
printf 'x' >"$T/d/img.idx"
printf '\0\0\x08\x01\0\0\0\x01\x05' >"$T/d/lab.idx"
bad 'img.idx: truncated IDX header' '{"data": {"kind": "idx", "images": "d/img.idx", "labels": "d/lab.idx"}}'
printf '\0\0\x08\x02\0\0\0\x01\0\0\0\x02\0\0\0\x02abcd' >"$T/d/img2.idx"
bad 'img2.idx: not an IDX image file: magic 0x00000802' '{"data": {"kind": "idx", "images": "d/img2.idx", "labels": "d/lab.idx"}}'
printf '\0\0\x08\x03\0\0\0\x02\0\0\0\x02\0\0\0\x02abcd' >"$T/d/img3.idx"
bad 'img3.idx: size 20 bytes does not match header .* truncated' '{"data": {"kind": "idx", "images": "d/img3.idx", "labels": "d/lab.idx"}}'

# The command line.
small_config "$T/ok.json"
expect_error 'nope.json: cannot open' "$REPRUN" train "$T/nope.json" -o "$T/run"
expect_error "--set optimizer.lr: expected KEY=VALUE" "$REPRUN" train "$T/ok.json" -o "$T/run" --set optimizer.lr
expect_error "ok.json: optimizer.lr: expected a number" "$REPRUN" train "$T/ok.json" -o "$T/run" --set optimizer.lr=abc
expect_error 'ok.json: optimizer.lr: expected a number, got "1e400"' "$REPRUN" train "$T/ok.json" -o "$T/run" --set optimizer.lr=1e400
expect_error "unknown command 'trian' \(did you mean 'train'\?\)" "$REPRUN" trian "$T/ok.json"
expect_rc 2 "$REPRUN" train "$T/ok.json" --threads 0
expect_error "give a CONFIG.json, or --resume" "$REPRUN" train
# A mistyped kernel cap is an error, not "no cap".
expect_error "REPRUN_GEMM_KERNEL: unknown kernel set 'avx5122'" env REPRUN_GEMM_KERNEL=avx5122 "$REPRUN" train "$T/ok.json" -o "$T/run"
check_no_run
expect_error 'not a run directory \(no manifest.json\)' "$REPRUN" train --resume "$T/d"

# An existing run is never overwritten.
expect_rc 0 "$REPRUN" train "$T/ok.json" -o "$T/done" -q
expect_error 'done: already holds a run' "$REPRUN" train "$T/ok.json" -o "$T/done" -q
# A hand-edited summary of the wrong type: one line naming the file and the key, for diff and resume.
cp -r "$T/done" "$T/edited"
python3 -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d["steps"] = "many"; json.dump(d, open(p, "w"))' \
  "$T/edited/summary.json"
expect_error 'edited/summary.json: corrupt summary: "steps" is "many", expected an integer' "$REPRUN" train --resume "$T/edited"
expect_error 'edited/summary.json: corrupt summary: "steps" is "many", expected an integer' "$REPRUN" diff "$T/done" "$T/edited"
# -o: a folder holding files that are not a run is refused, untouched; an empty one, or one left by
# a run that never started (.lock, an empty checkpoints/), is used.
mkdir "$T/mine" && echo "my notes" >"$T/mine/steps.jsonl"
expect_error 'mine: not empty and not a run directory \(it holds steps.jsonl\)' "$REPRUN" train "$EX/quickstart.json" \
  -o "$T/mine" -q --set training.epochs=1
[[ $(cat "$T/mine/steps.jsonl") == "my notes" && $(ls -A "$T/mine") == steps.jsonl ]] || fail "-o wrote into a foreign folder"
mkdir -p "$T/empty" "$T/left/checkpoints" && touch "$T/left/.lock"
expect_rc 0 "$REPRUN" train "$EX/quickstart.json" -o "$T/empty" -q --set training.epochs=1
expect_rc 0 "$REPRUN" train "$EX/quickstart.json" -o "$T/left" -q --set training.epochs=1
pass
