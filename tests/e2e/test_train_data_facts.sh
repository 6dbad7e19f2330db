# The data the trainer sees is shown and recorded: rows, features, classes with their sizes, the
# label column, validation rows; a label column that holds a feature (the label is in another
# column) is refused naming the column and data.label_column; the default training length learns
# an iris-like 150-row table.
source "$(dirname "$0")/lib.sh"

# iris_csv FILE SEED [first]: 3 classes x 50 rows, 4 measurements in cm with one decimal, label
# last ("species"); with "first", the label comes first and the last column is the petal width
# in whole millimetres (an integer feature, where the default label column looks).
iris_csv() {
  python3 - "$@" <<'PY'
import random, sys
path, seed = sys.argv[1], int(sys.argv[2])
first = len(sys.argv) > 3 and sys.argv[3] == "first"
rng = random.Random(seed)
means = [(5.0, 3.4, 1.5, 0.25), (5.9, 2.8, 4.3, 1.3), (6.6, 3.0, 5.6, 2.0)]
sds = [(0.35, 0.38, 0.17, 0.10), (0.52, 0.31, 0.47, 0.20), (0.64, 0.32, 0.55, 0.27)]
with open(path, "w") as f:
    f.write("species,sepal_length,sepal_width,petal_length,petal_width_mm\n" if first else
            "sepal_length,sepal_width,petal_length,petal_width,species\n")
    for c in range(3):
        for _ in range(50):
            v = [max(0.1, rng.gauss(m, s)) for m, s in zip(means[c], sds[c])]
            if first:
                f.write(f"{c},{v[0]:.1f},{v[1]:.1f},{v[2]:.1f},{max(1, round(v[3] * 10))}\n")
            else:
                f.write(",".join(f"{x:.1f}" for x in v) + f",{c}\n")
PY
}

# Defaults only: the kind and the file.
iris_csv "$T/iris.csv" 11
cat >"$T/c.json" <<'JSON'
{"seed": 1, "data": {"kind": "csv", "path": "iris.csv"}}
JSON
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/run"
grep -qx 'reprun: data: 150 rows, 4 features, 3 classes (50 samples each), label column 5 "species"; 15 rows held out for validation' "$T/err" ||
  fail "data facts not shown at train start: $(head -5 "$T/err")"
[[ $(json_get "$T/run/manifest.json" data.samples) == 150 ]] || fail "manifest data.samples"
[[ $(json_get "$T/run/manifest.json" data.features) == 4 ]] || fail "manifest data.features"
[[ $(json_get "$T/run/manifest.json" data.classes) == 3 ]] || fail "manifest data.classes"
[[ $(json_get "$T/run/manifest.json" data.class_samples) == '{"min": 50, "max": 50}' ]] || fail "manifest data.class_samples"
[[ $(json_get "$T/run/manifest.json" data.label_column) == 4 ]] || fail "manifest data.label_column"
[[ $(json_get "$T/run/manifest.json" data.label_name) == species ]] || fail "manifest data.label_name"
[[ $(json_get "$T/run/manifest.json" data.validation_samples) == 15 ]] || fail "manifest data.validation_samples"
[[ $(json_get "$T/run/manifest.json" config.training.epochs) == 20 ]] || fail "default epochs not resolved into the manifest"
# The default training length learns it (one epoch, the old default, reached 60%).
a=$(json_get "$T/run/summary.json" val_accuracy)
awk -v a="$a" 'BEGIN { exit !(a >= 0.93) }' || fail "iris-like defaults: val_accuracy $a < 0.93"
# And on other draws of the table and other seeds: 95% over 300 validation rows together.
correct=0 total=0
for s in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  iris_csv "$T/iris.csv" $((100 + s))
  expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/r$s" -q --set seed=$s
  a=$(json_get "$T/r$s/summary.json" val_accuracy)
  correct=$(awk -v c="$correct" -v a="$a" 'BEGIN { printf "%d", c + a * 15 + 0.5 }')
  total=$((total + 15))
done
awk -v c="$correct" -v t="$total" 'BEGIN { exit !(c / t >= 0.95) }' || fail "iris-like defaults: $correct of $total correct"

# Quiet: nothing on stderr.
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/quiet" -q
[[ ! -s "$T/err" ]] || fail "-q printed: $(cat "$T/err")"

# The label in the first column: the last column is a feature of 20+ values, refused.
iris_csv "$T/first.csv" 11 first
printf '{"seed": 1, "data": {"kind": "csv", "path": "first.csv"}}' >"$T/first.json"
expect_error 'first.csv: column 5 "petal_width_mm" \(data.label_column is -1\) has [0-9]+ distinct labels in 150 rows, more than a label column has \(at most max\(20, rows/10\) = 20\); is the label in another column\? data.label_column picks it' \
  "$REPRUN" train "$T/first.json" -o "$T/bad"
[[ ! -e "$T/bad/manifest.json" ]] || fail "a run was written for a feature read as the label"
# ... and pointing data.label_column at it trains.
json_edit "$T/first.json" data.label_column+=0
expect_rc 0 "$REPRUN" train "$T/first.json" -o "$T/fixed"
grep -q 'label column 1 "species"' "$T/err" || fail "label column 1 not shown: $(cat "$T/err")"

# Few rows, each label seen once: a feature too (under the distinct-value limit).
printf 'a,b,c\n1,0.5,3\n2,0.1,4\n3,0.7,5\n4,0.2,6\n5,0.9,7\n6,0.3,8\n' >"$T/ids.csv"
printf '{"data": {"kind": "csv", "path": "ids.csv", "validation_fraction": 0}, "training": {"batch_size": 2}}' >"$T/ids.json"
expect_error 'ids.csv: column 3 "c" \(data.label_column is -1\): 6 classes have a single sample each \(labels 3, 4, \.\.\.\); is the label in another column\?' \
  "$REPRUN" train "$T/ids.json" -o "$T/bad"
# A fractional label names the key too.
printf 'a,b\n0.5,1.5\n' >"$T/frac.csv"
printf '{"data": {"kind": "csv", "path": "frac.csv", "header": true}}' >"$T/frac.json"
expect_error "frac.csv:2:5: label \(column 2, data.label_column\) must be a non-negative integer class, got '1.5'; is the label in another column\? data.label_column picks it" \
  "$REPRUN" train "$T/frac.json" -o "$T/bad"
[[ ! -e "$T/bad" ]] || fail "a run directory was created for bad data"
# A UTF-8 byte order mark (Excel's "CSV UTF-8") is not data: a numeric first row after it is a row,
# not a header, and a header's first name does not start with it.
printf '\xEF\xBB\xBF0.1,1.0,0\n0.2,1.1,1\n0.3,1.2,0\n0.4,1.3,1\n0.5,1.4,0\n0.6,1.5,1\n' >"$T/bom.csv"
printf '{"seed": 1, "data": {"kind": "csv", "path": "bom.csv", "validation_fraction": 0}, "training": {"batch_size": 2, "epochs": 1}}' >"$T/bom.json"
expect_rc 0 "$REPRUN" train "$T/bom.json" -o "$T/bom"
[[ $(json_get "$T/bom/manifest.json" data.samples) == 6 ]] || fail "BOM: the first row was dropped as a header: $(head -1 "$T/err")"
[[ $(json_get "$T/bom/manifest.json" config.data.header) == false ]] || fail "BOM: a numeric first row read as a header"
printf '\xEF\xBB\xBFkind,x,y\n0,1.0,2.0\n1,1.1,2.1\n0,1.2,2.2\n1,1.3,2.3\n' >"$T/bomh.csv"
printf '{"seed": 1, "data": {"kind": "csv", "path": "bomh.csv", "label_column": 0, "validation_fraction": 0}, "training": {"batch_size": 2, "epochs": 1}}' >"$T/bomh.json"
expect_rc 0 "$REPRUN" train "$T/bomh.json" -o "$T/bomh"
[[ $(json_get "$T/bomh/manifest.json" data.label_name) == kind ]] || fail "BOM: label name $(json_get "$T/bomh/manifest.json" data.label_name)"
pass
