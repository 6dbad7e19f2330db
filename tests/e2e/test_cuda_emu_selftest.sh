# The CPU emulator of the CUDA runtime (tests/cuda_emu/), which runs the CUDA backend's kernels in
# CI, catches what would go wrong on a GPU: a barrier is a barrier, a barrier some threads never
# reach, a host pointer given to a kernel, a read past the end of device memory, a copy past it, a
# grid too tall, fresh device memory read as if it held numbers; and atomicAdd's result depends on
# the order the blocks ran in, which a seed fixes.
source "$(dirname "$0")/lib.sh"
[[ -n ${REPRUN_CUDAEMU_SELFTEST:-} ]] || skip "the CUDA emulator is not built in a sanitizer build"
emu=$REPRUN_CUDAEMU_SELFTEST
expect_rc 0 "$emu" barrier
expect_rc 0 "$emu" uninitialized
for c in divergent-barrier host-pointer memcpy-past-end grid-y; do
  expect_rc 134 "$emu" "$c"
  grep -q '^cuda-emu: ' "$T/err" || fail "$c: no cuda-emu line: $(cat "$T/err")"
done
grep -q 'grid.y' "$T/err" || fail "grid-y: $(cat "$T/err")"
expect_rc 139 "$emu" past-end # the guard page after the allocation
# atomicAdd in block order: one seed, one sum; across seeds, more than one.
a=$(REPRUN_CUDA_EMU_SEED=7 "$emu" atomic-sum) && b=$(REPRUN_CUDA_EMU_SEED=7 "$emu" atomic-sum) || fail "atomic-sum"
[[ $a == "$b" ]] || fail "the same seed gave two sums ($a, $b)"
sums=$(for s in 1 2 3 4 5 6 7 8; do REPRUN_CUDA_EMU_SEED=$s "$emu" atomic-sum; done | sort -u | wc -l)
[[ $sums -gt 1 ]] || fail "eight block orders gave one atomicAdd sum: the emulator does not shuffle blocks"
pass
