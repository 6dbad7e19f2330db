# The default label column (the last) is refused when it reads like a feature next to a column that
# reads like a label: a digits-like table (8x8 images, pixel values 0-16) with its label moved to the
# first column and no header, where the last column is a pixel that is 0 in most rows. The refusal
# names both columns and data.label_column; naming the column in the config trains on it as told.
# A real imbalanced label trains: 95/5 labels next to a weekday 0-6 and a one-hot 0/1 column, and
# a 3-class 90/8/2 label beside them; so does the digits-like table with its label last.
source "$(dirname "$0")/lib.sh"

# digits FILE first|last: 1,797 rows, 10 balanced classes; 64 pixels, each 0 with a probability
# that depends on its place (the border is almost always 0), else 1-16.
digits() {
  python3 - "$@" <<'PY'
import random, sys
path, where = sys.argv[1], sys.argv[2]
rng = random.Random(3)
rows = []
for i in range(1797):
    y = i % 10
    pix = []
    for p in range(64):
        r, c = divmod(p, 8)
        border = r in (0, 7) or c in (0, 7)
        zero = 0.94 if border else 0.3 + 0.05 * ((p + y) % 7)
        pix.append(0 if rng.random() < zero else rng.randint(1, 16))
    rows.append([y] + pix if where == "first" else pix + [y])
rng.shuffle(rows)
with open(path, "w") as f:
    for r in rows:
        f.write(",".join(map(str, r)) + "\n")
PY
}

digits "$T/first.csv" first
echo '{"seed": 1, "data": {"kind": "csv", "path": "first.csv"}, "training": {"epochs": 2}}' >"$T/first.json"
expect_error "first.csv: column 65 \(the default data.label_column, the last\) looks like a feature, not a label: its class 0 holds [0-9]+ of 1797 rows.*column 1 has 10 values held by 1[78][0-9] to 1[78][0-9] rows each.*set data.label_column to 0" \
  "$REPRUN" train "$T/first.json" -o "$T/r-first"
[[ ! -e $T/r-first/summary.json ]] || fail "a refused run left a summary"
# Told which column: trains (0: the real label; 64: the pixel, as the user asked).
for col in 0 64 -1; do
  echo "{\"seed\": 1, \"data\": {\"kind\": \"csv\", \"path\": \"first.csv\", \"label_column\": $col}, \"training\": {\"epochs\": 2}}" >"$T/c$col.json"
  expect_rc 0 "$REPRUN" train "$T/c$col.json" -o "$T/r$col" -q
done
[[ $(json_get "$T/r0/manifest.json" data.classes) == 10 ]] || fail "label column 0: classes"
# The label last: trains as before.
digits "$T/last.csv" last
echo '{"seed": 1, "data": {"kind": "csv", "path": "last.csv"}, "training": {"epochs": 2}}' >"$T/last.json"
expect_rc 0 "$REPRUN" train "$T/last.json" -o "$T/r-last" -q
[[ $(json_get "$T/r-last/manifest.json" data.classes) == 10 ]] || fail "label last: classes"

# imbalanced FILE CLASSES: 2,000 rows; a weekday 0-6, a one-hot 0/1 pair, two measurements, then
# the label: 95/5 for 2 classes, 90/8/2 for 3.
imbalanced() {
  python3 - "$@" <<'PY'
import random, sys
path, k = sys.argv[1], int(sys.argv[2])
rng = random.Random(5)
with open(path, "w") as f:
    f.write("weekday,is_web,is_store,amount,duration,label\n")
    for i in range(2000):
        u = rng.random()
        y = (1 if u < 0.05 else 0) if k == 2 else (2 if u < 0.02 else 1 if u < 0.10 else 0)
        web = rng.randint(0, 1)
        f.write(f"{i % 7},{web},{1 - web},{rng.gauss(50 + 30 * y, 10):.2f},{rng.gauss(3, 1):.2f},{y}\n")
PY
}
for k in 2 3; do
  imbalanced "$T/imb$k.csv" $k
  echo "{\"seed\": 1, \"data\": {\"kind\": \"csv\", \"path\": \"imb$k.csv\"}, \"training\": {\"epochs\": 2}}" >"$T/imb$k.json"
  expect_rc 0 "$REPRUN" train "$T/imb$k.json" -o "$T/imb$k" -q
  [[ $(json_get "$T/imb$k/manifest.json" data.classes) == "$k" ]] || fail "imbalanced $k: classes"
done
pass
