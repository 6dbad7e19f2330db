# The CUDA backend's floating-point policy, read from its PTX (built with the binary; no GPU
# needed): every float add, sub, mul, div and sqrt carries .rn (so ptxas may not fuse or
# approximate it), fused multiply-adds appear only in the GEMM and atomic-gradient kernels (the
# written __fmaf_rn chains), float atomics only in the atomic-gradient kernel, and nothing is
# approximate (.approx) or flushes subnormals (.ftz). Skipped in a build without CUDA.
source "$(dirname "$0")/lib.sh"
[[ -n ${REPRUN_CUDA_PTX:-} ]] || skip "reprun was built without CUDA (no PTX to read)"
[[ -s $REPRUN_CUDA_PTX ]] || fail "no PTX at $REPRUN_CUDA_PTX"
python3 - "$REPRUN_CUDA_PTX" <<'PY' || fail "the device code breaks the floating-point policy (above)"
import re, sys
ptx = open(sys.argv[1]).read()
entries = re.split(r"\n(?=(?:\.visible )?\.entry )", ptx)
bad = []
kernels = 0
for e in entries[1:]:
    name = re.match(r"(?:\.visible )?\.entry\s+([\w$]+)", e).group(1)
    kernels += 1
    chain = "gemm" in name or "atomic_grad" in name
    for op in re.findall(r"(?<![.\w])(?:add|sub|mul|div|sqrt|fma|rcp|ex2|lg2|sin|cos|tanh)(?:\.\w+)*\.f(?:32|64)\b", e):
        if ".approx" in op or ".ftz" in op:
            bad.append(f"{name}: {op} (approximate or flushing)")
        elif op.startswith("fma.") and (not chain or op != "fma.rn.f32"):
            bad.append(f"{name}: {op} (a fused multiply-add outside the GEMM chains)")
        elif not op.startswith("fma.") and ".rn" not in op:
            bad.append(f"{name}: {op} (no explicit rounding: ptxas may contract it)")
    if "atom.global.add.f32" in e and "atomic_grad" not in name:
        bad.append(f"{name}: a float atomic outside the atomic mode")
if kernels < 10:
    bad.append(f"only {kernels} kernels in the PTX")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
pass
