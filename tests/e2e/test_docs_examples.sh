# The docs' examples print what the docs say (issue 12, item 15). README: two quickstart runs, the
# second with 1 thread and accumulation 4, are IDENTICAL, with the accumulation listed under "not
# counted". docs/determinism.md: every GEMM kernel set (portable, AVX2, AVX-512; forced with
# REPRUN_GEMM_KERNEL) gives identical steps; a set this CPU lacks is noted, not failed. docs/
# commands.md: a data folder's fingerprint is `reprun hash` of its *.csv files, not of the folder.
source "$(dirname "$0")/lib.sh"

# README: the diff example, run as written (relative paths, from the examples' parent folder).
mkdir -p "$T/src" && cp -r "$EX" "$T/src/examples" && cd "$T/src" || fail "cannot copy examples"
expect_rc 0 "$REPRUN" train examples/quickstart.json -o runs/q1 -q
expect_rc 0 "$REPRUN" train examples/quickstart.json -o runs/q2 -q --threads 1 --set training.accumulation=4
NO_COLOR=1 expect_rc 0 "$REPRUN" diff runs/q1 runs/q2
grep -q '^IDENTICAL: 251 step records bitwise identical, metadata matches$' "$T/out" ||
  fail "README diff example: verdict: $(head -1 "$T/out")"
grep -q '^  not counted:$' "$T/out" || fail "README diff example: no 'not counted' list: $(cat "$T/out")"
grep -q '^    config.training.accumulation: 1 -> 4 (cannot change a result)$' "$T/out" ||
  fail "README diff example: accumulation is not listed as not counted: $(cat "$T/out")"

# determinism.md: each kernel set forced, the same steps. The manifest names the kernel used; one
# this CPU lacks falls back to a lower one, which is noted and not compared as that set.
for k in portable avx2 avx512; do
  REPRUN_GEMM_KERNEL=$k expect_rc 0 "$REPRUN" train examples/quickstart.json -o "runs/k-$k" -q --set training.steps=60 \
    --set training.epochs=null
  used=$(json_get "runs/k-$k/manifest.json" reprun.kernels.gemm)
  case $k in avx2) want=avx2-fma ;; *) want=$k ;; esac
  if [[ $used != "$want" ]]; then
    echo "note: this CPU lacks the $k kernel set (REPRUN_GEMM_KERNEL=$k ran $used); not compared as $k"
    continue
  fi
  [[ $k == portable ]] && continue
  NO_COLOR=1 expect_rc 0 "$REPRUN" diff runs/k-portable "runs/k-$k"
  grep -q '^IDENTICAL: 61 step records bitwise identical, metadata matches$' "$T/out" ||
    fail "kernel $k vs portable: $(head -1 "$T/out")"
  grep -q "reprun.kernels.gemm: \"portable\" -> \"$want\" (cannot change a result)" "$T/out" ||
    fail "kernel $k vs portable: the kernel should be listed as not counted: $(cat "$T/out")"
done

# commands.md (reprun hash): a folder holding other files besides its CSVs.
mkdir -p data/wine/old
cp "$TD/wine/wine.csv" data/wine/ && cp "$TD/wine/wine.csv" data/wine/old/wine-v0.csv
echo "About this data" >data/wine/README.txt && printf 'not a picture' >data/wine/plot.png
cp examples/wine-csv.json examples/wine-folder.json && json_edit examples/wine-folder.json data.path=\"../data/wine\"
expect_rc 0 "$REPRUN" train examples/wine-folder.json -o runs/wine -q --set training.steps=5 --set training.epochs=null
fp=$(json_get runs/wine/manifest.json data.fingerprint)
[[ $(json_get runs/wine/manifest.json data.files) == '[{"path": "wine.csv", "size": 11285, "sha256": "7ab4bfea28aa2b962a6d5554dc25111c278c99dae4af27edd4922d802ff3a8da"}]' ]] ||
  fail "data.files should list wine.csv only: $(json_get runs/wine/manifest.json data.files)"
expect_rc 0 "$REPRUN" hash data/wine/*.csv
[[ $(cut -d' ' -f1 "$T/out") == "$fp" ]] || fail "hash DIR/*.csv should print the manifest's fingerprint $fp: $(cat "$T/out")"
expect_rc 0 "$REPRUN" hash data/wine --exclude '*.txt' --exclude '*.png' --exclude old
[[ $(cut -d' ' -f1 "$T/out") == "$fp" ]] || fail "hash DIR --exclude ... should print $fp: $(cat "$T/out")"
expect_rc 0 "$REPRUN" hash data/wine
[[ $(cut -d' ' -f1 "$T/out") != "$fp" ]] || fail "hash DIR hashes every file, so it should differ from $fp"
grep -q '(4 entries' "$T/out" || fail "hash DIR: 4 entries expected: $(cat "$T/out")"
pass
