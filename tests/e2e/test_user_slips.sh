# A new user's slips get a word, not silence or a parser's message (issue 41, item 9): a CSV's ID
# column trained as a feature is warned of; a config with comments is told JSON has none; an
# --ignore-meta key that matches nothing is refused with the nearest key; a run diffed with itself
# is said to be one directory; exec's stdin redirected from a file (which each run never reads) is
# warned of.
source "$(dirname "$0")/lib.sh"

# An ID column: unique, increasing integers, here the first column of a table sorted by class.
python3 - "$T/ids.csv" <<'PY'
import sys
rows = ["id,a,b,label"]
for i in range(60):
    c = i * 3 // 60
    rows.append(f"{1001 + i},{(i * 7) % 13 / 3 + c},{(i * 5) % 11 / 4 - c},{c}")
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
PY
cat >"$T/ids.json" <<JSON
{"seed": 1, "data": {"kind": "csv", "path": "ids.csv"}, "model": {"hidden": [4]},
 "training": {"batch_size": 8, "epochs": 1}}
JSON
expect_rc 0 "$REPRUN" train "$T/ids.json" -o "$T/ids"
grep -q '^reprun: warning: data: column 1 "id" holds unique integers increasing from row to row (1001 to 1060), as a row ID does: it is trained as a feature' "$T/err" ||
  fail "no word on the ID column: $(cat "$T/err")"
[[ $(grep -c 'warning' "$T/err") == 1 ]] || fail "one warning expected: $(cat "$T/err")"
# The other columns are not IDs: no warning without it.
cut -d, -f2- "$T/ids.csv" >"$T/noid.csv" && cp "$T/ids.json" "$T/noid.json" && json_edit "$T/noid.json" data.path=noid.csv
expect_rc 0 "$REPRUN" train "$T/noid.json" -o "$T/noid"
! grep -q 'warning' "$T/err" || fail "a warning without an ID column: $(cat "$T/err")"

# Comments: before, "invalid literal; last read: '{<U+000A>  /'; expected string literal".
printf '{\n  // the seed\n  "seed": 3\n}\n' >"$T/comment.json"
expect_error '^reprun: error: .*comment.json:2:3: invalid JSON: a comment \(//\); JSON has none: remove it' \
  "$REPRUN" train "$T/comment.json" -o "$T/comment"
printf '{"seed": 3, /* three */ "model": {}}' >"$T/block.json"
expect_error 'block.json:1:13: invalid JSON: a comment \(/\* \*/\)' "$REPRUN" train "$T/block.json" -o "$T/block"

# --ignore-meta with a key that matches nothing: before, accepted silently.
expect_error "^reprun: error: --ignore-meta hots: matches no metadata key of either run, so it would ignore nothing \(did you mean 'host'\?\)$" \
  "$REPRUN" diff "$T/ids" "$T/noid" --ignore-meta hots
expect_rc 1 "$REPRUN" diff "$T/ids" "$T/noid" --ignore-meta host --ignore-meta data.files --ignore-meta config.data.path

# A run diffed with itself: before, a plain IDENTICAL.
NO_COLOR=1 expect_rc 0 "$REPRUN" diff "$T/ids" "$T/ids/"
grep -q "^  A and B are the same directory (.*ids): a run compared with itself is always identical$" "$T/out" ||
  fail "diff of one directory with itself: $(cat "$T/out")"
expect_rc 0 "$REPRUN" diff "$T/ids/steps.jsonl" "$T/ids/steps.jsonl" --format json
grep -q 'A and B are the same file' "$T/out" || fail "diff of one log with itself: $(cat "$T/out")"

# `reprun exec -- PROG < FILE`: each run reads /dev/null, so the program ran on no input and the
# record named no file, in silence. Now a warning, even under -q, with the command that works.
printf '1\n2\n' >"$T/nums.txt"
run_rc "$REPRUN" exec -o "$T/stdin" --runs 1 -q -- wc -c <"$T/nums.txt"
[[ $RC == 0 ]] || fail "exec with stdin from a file: exit $RC: $(cat "$T/err")"
grep -q "^reprun exec: warning: stdin is the file .*nums.txt, which the program will not read: each run reads its stdin from /dev/null; .* -- sh -c 'wc -c < .*nums.txt'$" "$T/err" ||
  fail "no word on stdin from a file: $(cat "$T/err")"
# The command it suggests runs the same program with the same words, quoted for the shell.
run_rc "$REPRUN" exec -o "$T/stdin4" --runs 1 -q -- printf '%s|' "a b" "it's" '$HOME' <"$T/nums.txt"
suggested=$(sed -n 's/^reprun exec: warning: .* -- \(sh -c .*\)$/\1/p' "$T/err")
[[ -n $suggested && $(eval "$suggested") == 'a b|it'"'"'s|$HOME|' ]] ||
  fail "the suggested command does not run the program's words: $suggested: $(eval "$suggested" 2>&1)"
run_rc "$REPRUN" exec -o "$T/stdin2" --runs 1 -q -- wc -c </dev/null
[[ $RC == 0 ]] || fail "exec with stdin from /dev/null: exit $RC"
! grep -q "warning" "$T/err" || fail "a warning for stdin from /dev/null: $(cat "$T/err")"
echo 1 | run_rc "$REPRUN" exec -o "$T/stdin3" --runs 1 -q -- wc -c
! grep -q "warning" "$T/err" || fail "a warning for stdin from a pipe: $(cat "$T/err")"
pass

