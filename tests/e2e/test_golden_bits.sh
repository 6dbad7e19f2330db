# Golden bits: steps.jsonl and evals.jsonl of every example config (and variants reaching trace
# full, accumulation, dropout, tanh, Adam, weight decay) have the SHA-256 digests pinned in
# testdata/golden/train.sha256. A change that moves a single bit fails here; an issue that changes
# results on purpose regenerates the file (tools/golden.sh build/reprun OUT train) and says why.
# Run with the best kernel of this CPU and again capped at AVX2: both must give the pinned bits.
source "$(dirname "$0")/lib.sh"
pinned="$TD/golden/train.sha256"
bash "$REPRUN_SRC/tools/golden.sh" "$REPRUN" "$T/best" train >"$T/best.sha256" 2>"$T/err" ||
  fail "tools/golden.sh failed: $(cat "$T/err")"
diff "$pinned" "$T/best.sha256" >"$T/delta" || fail "digests differ from testdata/golden/train.sha256:
$(cat "$T/delta")"
REPRUN_GEMM_KERNEL=avx2 bash "$REPRUN_SRC/tools/golden.sh" "$REPRUN" "$T/avx2" train >"$T/avx2.sha256" 2>"$T/err" ||
  fail "tools/golden.sh (avx2) failed: $(cat "$T/err")"
diff "$pinned" "$T/avx2.sha256" >"$T/delta" || fail "digests with the AVX2 kernel differ:
$(cat "$T/delta")"
pass
