# Ctrl-C after the program ended, while reprun fingerprints what it read (a large data set read for
# the first time): acted on within the read, not after the whole file (before: after it, and the
# message said the program "was running"). exit 130; the run kept, complete, its manifest's inputs
# "not recorded" with why (a part would compare as files read by one run only); no file log left.
source "$(dirname "$0")/lib.sh"
command -v truncate >/dev/null || skip "no truncate (coreutils)"

# 16 GiB of a sparse file: no disk, but reading and hashing it takes seconds on any machine.
truncate -s 16G big.bin
# Not named in the arguments (those are hashed before the run): read by the program only.
"$REPRUN" exec -o "$T/A" --runs 1 -- sh -c 'head -c 1 big.bin >/dev/null; echo read' >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 1 300); do # the program's last line written: it is about to exit
  [[ -s "$T/A/run-1/stdout.txt" ]] && break
  sleep 0.1
done
[[ -s "$T/A/run-1/stdout.txt" ]] || fail "the program wrote nothing in 30 s: $(cat "$T/err")"
sleep 1 # the program has ended: reprun is reading big.bin
t0=$(date +%s%N)
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[[ $rc == 130 ]] || fail "exit $rc after Ctrl-C (expected 130): $(cat "$T/err")"
((ms < 5000)) || fail "Ctrl-C acted on after $ms ms: not within the read"
grep -q "^reprun: interrupted by SIGINT: run-1 had ended (sh -c head -c 1 big.bin >/dev/null; echo read); reprun was fingerprinting what it read: the run is kept without that record" "$T/err" ||
  fail "the message: $(cat "$T/err")"
grep -q '"status": "complete"' "$T/A/run-1/summary.json" || fail "summary: $(cat "$T/A/run-1/summary.json")"
grep -q '"why": "interrupted (Ctrl-C) while reprun fingerprinted what the program read"' "$T/A/run-1/manifest.json" ||
  fail "manifest's inputs: $(grep -A3 '"inputs"' "$T/A/run-1/manifest.json")"
[[ ! -e "$T/A/run-1/inputs.jsonl" && ! -e "$T/A/run-1/files.log" ]] || fail "a part of the record left: $(ls "$T/A/run-1")"
pass
