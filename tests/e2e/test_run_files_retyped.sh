# A run's files edited by hand: each key of a manifest, summary, step log, search manifest and input
# record given a value of another type, one at a time (retype_keys.py). diff, train --resume and
# search --resume accept it or refuse it with their own one-line message (exit 0, 1 or 2), never
# with the JSON library's "[json.exception.type_error...]", which names no file, nor a crash.
source "$(dirname "$0")/lib.sh"
retype() { python3 "$REPRUN_SRC/tests/e2e/retype_keys.py" "$@" >"$T/retype.out" 2>&1 || fail "$(cat "$T/retype.out")"; tail -n 1 "$T/retype.out"; }

# The built-in trainer's run, and a copy to compare it with.
"$REPRUN" train "$EX/quickstart.json" -o A -q --set training.epochs=1 >/dev/null 2>&1 || fail "train"
cp -r A B
for f in manifest.json summary.json steps.jsonl evals.jsonl; do
  retype B "$f" -- "$REPRUN" diff A {}
done
retype B manifest.json -- sh -c 'rm -rf forked; exec "$0" train --resume {} -o forked -q' "$REPRUN"

# A search, and a copy.
"$REPRUN" search "$EX/search-quickstart.json" -o S -q >/dev/null 2>&1 || fail "search"
cp -r S S2
retype S2 search.json -- "$REPRUN" diff S {}
retype S2 search.json -- "$REPRUN" search --resume {} -q
retype S2 trial-0000/manifest.json -- "$REPRUN" search --resume {} -q

# exec's record of a program that reads a data file (any program: the preload library records it).
mkdir -p prog/data && cd prog || fail "cd"
printf 'a,b\n1,2\n' >data/t.csv
printf 'cat data/t.csv >/dev/null\necho done\n' >t.sh
for o in E1 E2; do
  "$REPRUN" exec --runs 1 -o "$o" -q -- sh t.sh >/dev/null 2>&1 || fail "exec $o: $(cat "$o"/run-1/stderr.txt 2>/dev/null)"
done
for f in manifest.json summary.json inputs.jsonl; do
  retype E2/run-1 "$f" -- "$REPRUN" diff E1/run-1 {}
done
retype E2/run-1 manifest.json -- "$REPRUN" diff {} E1/run-1
pass
