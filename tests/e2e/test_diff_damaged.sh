# A damaged run is damage, not divergence (issue 12, item 2): a run whose summary says complete
# but whose steps.jsonl or evals.jsonl was truncated, extended or edited is an error (exit 2, one
# line naming the file and what is wrong) for diff and for train --resume. A run that really
# stopped early stays a divergence, and runs older than the integrity facts get a note.
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"
expect_rc 0 "$REPRUN" train "$T/c.json" -o "$T/a" -q
records=$(json_get "$T/a/summary.json" steps_log.records)
[[ $records -gt 5 ]] || fail "summary.json should count the step records: $records"

fresh() { # fresh NAME: a copy of run a
  rm -rf "${T:?}/$1" && cp -r "$T/a" "$T/$1"
}

# Truncated: two records gone.
fresh trunc
head -n -2 "$T/a/steps.jsonl" >"$T/trunc/steps.jsonl"
expect_error "trunc/steps.jsonl: damaged: holds $((records - 2)) complete step records, summary.json recorded $records" \
  "$REPRUN" diff "$T/a" "$T/trunc"
expect_error "trunc/steps.jsonl: damaged" "$REPRUN" diff "$T/trunc" "$T/a"
expect_error "trunc/steps.jsonl: damaged" "$REPRUN" train --resume "$T/trunc"
expect_error "trunc/steps.jsonl: damaged" "$REPRUN" train --resume "$T/trunc" -o "$T/fork" --from-step 10
[[ ! -e $T/fork ]] || fail "a refused fork left a directory"

# Lines added after the run ended.
fresh added
tail -n 1 "$T/a/steps.jsonl" >>"$T/added/steps.jsonl"
expect_error "added/steps.jsonl: damaged: holds $((records + 1)) complete step records.*added" \
  "$REPRUN" diff "$T/a" "$T/added"

# Edited in place: same number of records, one loss changed.
fresh edited
python3 - "$T/edited/steps.jsonl" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
lines[3] = lines[3].replace('"loss":', '"loss":1', 1)
open(p, "w").write("\n".join(lines))
PY
expect_error "edited/steps.jsonl: damaged: its $records step records do not match the digest in summary.json" \
  "$REPRUN" diff "$T/a" "$T/edited"

# The evaluations are verified too.
fresh evals
head -n -1 "$T/a/evals.jsonl" >"$T/evals/evals.jsonl"
expect_error "evals/evals.jsonl: damaged: .* evaluation records" "$REPRUN" diff "$T/a" "$T/evals"

# A summary whose facts are malformed names the summary.
fresh badfacts
json_edit "$T/badfacts/summary.json" steps_log.records='"many"'
expect_error "badfacts/summary.json: \"steps_log\" is not" "$REPRUN" diff "$T/a" "$T/badfacts"

# A run that really stopped (killed: status running) is a divergence, not damage, and resumes.
run_rc "$REPRUN" train "$T/c.json" -o "$T/killed" -q --kill-after-step 15
[[ $RC == 137 ]] || fail "expected SIGKILL, got $RC"
expect_rc 1 "$REPRUN" diff "$T/a" "$T/killed"
grep -q 'DIFFERENT: run ended early' "$T/out" || fail "a killed run should be a divergence: $(cat "$T/out")"
# ... but the records its summary counted when it started are checked: editing the start of its
# log is damage.
fresh_killed() { rm -rf "${T:?}/k2" && cp -r "$T/killed" "$T/k2"; }
fresh_killed
json_edit "$T/k2/summary.json" steps_log.records=3
expect_error "k2/steps.jsonl: damaged: its 3 step records do not match" "$REPRUN" diff "$T/a" "$T/k2"
expect_rc 0 "$REPRUN" train --resume "$T/killed" -q
expect_rc 0 "$REPRUN" diff "$T/a" "$T/killed"

# A summary without the facts (an older run): accepted, with a note; never called damaged.
fresh old
json_edit "$T/old/summary.json" steps_log:delete evals_log:delete
head -n -2 "$T/a/steps.jsonl" >"$T/old/steps.jsonl"
expect_rc 1 "$REPRUN" diff "$T/a" "$T/old"
grep -q 'run ended early' "$T/out" || fail "a run without facts is compared as it is: $(cat "$T/out")"
grep -q 'holds no integrity facts' "$T/out" || fail "a run without facts should get a note: $(cat "$T/out")"
pass
