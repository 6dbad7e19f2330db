# What check says must be true (issue 41): a config without a seed gets one seed for all its runs,
# never a false "not deterministic" (item 2); the runs' logs say what train said, also on a pass
# (item 9).
source "$(dirname "$0")/lib.sh"
small_config "$T/c.json"

# Item 2: no seed. Before, each run drew its own, check failed with "three replays ... did not
# reproduce the divergence (it is not deterministic)" and "set seed back to ..." as a fix.
json_edit "$T/c.json" seed:delete
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/noseed" --vary threads=1,2 -q
grep -q '^PASS: 2 runs bitwise identical' "$T/out" || fail "no seed: $(cat "$T/out")"
seed=$(json_get "$T/noseed/run-1/manifest.json" config.seed)
[[ $(json_get "$T/noseed/run-2/manifest.json" config.seed) == "$seed" ]] || fail "no seed: the runs trained with other seeds"
grep -q "^  note: .*c.json sets no seed: every run of this check trains with seed $seed, drawn once for the check" "$T/out" ||
  fail "no seed: the report does not say which seed: $(cat "$T/out")"
! grep -qi 'not deterministic' "$T/out" || fail "no seed: $(cat "$T/out")"
# ... the same for a resume (the resumed process reads the run's seed) ...
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/noseed-resume" --vary resume=15 -q --format json
[[ $(json_get "$T/out" identical) == true ]] || fail "no seed, resume: $(head -c 2000 "$T/out")"
# ... and a config with a seed keeps it and gets no note.
json_edit "$T/c.json" seed+=5
expect_rc 0 "$REPRUN" check "$T/c.json" -o "$T/seed" -q
! grep -q 'sets no seed' "$T/out" || fail "a config with a seed got the note: $(cat "$T/out")"
[[ $(json_get "$T/seed/run-2/manifest.json" config.seed) == 5 ]] || fail "seed 5 not kept"

# Item 9: on a pass, the runs' logs hold what train printed (before: empty, with every child --quiet).
for i in 1 2; do
  grep -q '^reprun: data: 600 rows, 12 features, 3 classes' "$T/seed/run-$i.log" || fail "run-$i.log: $(cat "$T/seed/run-$i.log")"
  grep -q '^status: complete$' "$T/seed/run-$i.log" || fail "run-$i.log lacks the status: $(cat "$T/seed/run-$i.log")"
done
grep -q '^reprun: resuming .*run-2 from step 10$' "$T/noseed-resume/run-2.log" || fail "the resumed run's log: $(cat "$T/noseed-resume/run-2.log")"
pass
