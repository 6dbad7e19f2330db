# Learning works: quickstart reaches >= 95% validation accuracy, the wine CSV example >= 90%.
source "$(dirname "$0")/lib.sh"
acc() { json_get "$1/summary.json" val_accuracy; }
expect_rc 0 "$REPRUN" train "$EX/quickstart.json" -o "$T/q" -q
a=$(acc "$T/q")
awk -v a="$a" 'BEGIN { exit !(a >= 0.95) }' || fail "quickstart val_accuracy $a < 0.95"
expect_rc 0 "$REPRUN" train "$EX/wine-csv.json" -o "$T/w" -q
a=$(acc "$T/w")
awk -v a="$a" 'BEGIN { exit !(a >= 0.90) }' || fail "wine val_accuracy $a < 0.90"
grep -q '"path": "wine.csv"' "$T/w/manifest.json" || fail "data file not recorded"
pass
