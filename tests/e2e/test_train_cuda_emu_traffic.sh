# What one training step of mnist-mlp (784-256-256-10, batch 128, trace weights) moves between the
# host and the emulated GPU, and how many kernels it launches: the CPU emulator of the CUDA runtime
# (tests/cuda_emu/) counts cudaMemcpy bytes each way, launches and memsets, and writes them at exit
# (REPRUN_CUDA_EMU_COUNTS). Runs of S, S+1 and S+2 steps differ by one step each (the setup, the
# step-0 record and the final checkpoint are the same in all three), so the differences are one
# step's cost; both must agree. Prints the counts per step, by kernel, and holds the bytes to the
# batch up and the step record down.
source "$(dirname "$0")/lib.sh"
[[ -n ${REPRUN_CUDAEMU:-} ]] || skip "reprun_cudaemu is not built in a sanitizer build (CMakeLists.txt says why)"
cp "$EX/mnist-mlp.json" "$T/c.json"
# mnist-mlp's shapes on fewer samples (the step's cost does not depend on the data set's size).
json_edit "$T/c.json" data.samples=1024 training.epochs=null training.steps+=1
S=2
for n in $S $((S + 1)) $((S + 2)); do
  REPRUN_CUDA_EMU_COUNTS="$T/counts-$n" REPRUN_CUDA_EMU_SEED=1 expect_rc 0 "$REPRUN_CUDAEMU" train "$T/c.json" \
    -o "$T/run-$n" -q --device cuda --threads 1 --set training.steps=$n
  [[ -s $T/counts-$n ]] || fail "the emulator wrote no counts to REPRUN_CUDA_EMU_COUNTS"
done
# count FILE NAME: one value of a counts file (0 when absent).
count() { awk -v k="$2" '$1 == k { print $2; found = 1 } END { if (!found) print 0 }' "$1"; }
a="$T/counts-$S" b="$T/counts-$((S + 1))" c="$T/counts-$((S + 2))"
report=""
for k in launches memsets h2d_bytes h2d_copies d2h_bytes d2h_copies d2d_bytes \
  $(awk '$1 ~ /^kernel:/ { print $1 }' "$c" | sort -u); do
  d1=$(($(count "$b" "$k") - $(count "$a" "$k")))
  d2=$(($(count "$c" "$k") - $(count "$b" "$k")))
  [[ $d1 == "$d2" ]] || fail "$k per step is not constant: $d1 then $d2"
  report+="  $k $d1"$'\n'
  printf -v "step_${k//[:]/_}" '%s' "$d1"
done
echo "mnist-mlp, one step at trace weights on the emulated CUDA backend:"
printf '%s' "$report"
# shellcheck disable=SC2154 # set by printf -v above
[[ $step_launches -gt 0 ]] || fail "no kernel launched in a step"
# What a step may move (docs/determinism.md, "What crosses"): up, the batch (128 rows of 784
# floats and their labels); down, the loss sum (a double), each weight tensor's XXH3 (8 bytes:
# hashed on the device, the tensors of 240 bytes or less downloaded and hashed on the host) and
# each update task's sum of squares (a double per task of at most 16384 elements). A copy per call
# coming back, or the weights downloaded, would add megabytes.
read -r up down < <(python3 - "$T/run-$S/manifest.json" <<'PY'
import json, math, sys
m = json.load(open(sys.argv[1]))
rows, features = 128, m["data"]["features"]
sizes = [math.prod(t["shape"]) for t in m["model"]["tensors"]]
tasks = sum(math.ceil(n / 16384) for n in sizes)
digests = sum(4 * n if 4 * n <= 240 else 8 for n in sizes)
print(rows * (features * 4 + 4), 8 + digests + 8 * tasks)
PY
)
echo "  allowed: h2d_bytes <= $up (the batch), d2h_bytes <= $down (loss, digests, sums of squares)"
[[ $step_h2d_bytes -le $up ]] || fail "a step uploads $step_h2d_bytes bytes, more than its batch ($up)"
[[ $step_d2h_bytes -le $down ]] || fail "a step downloads $step_d2h_bytes bytes, more than its record needs ($down)"
pass
