# reprun_capture's tensor fingerprints (python/reprun_capture/fingerprint.py), with Debian's torch:
# exact and order-sensitive (a swap of two elements, a flipped bit, -0.0 vs 0.0 change them), the
# same for a non-contiguous view as for its contiguous copy, every dtype read, XXH3 through the
# built library (CRC-32 without it), and the device method (run here on CPU tensors) gives the same
# sum whether a tensor is reduced in one pass or in chunks. FixedTensors (one native call for an
# optimizer's parameters, their addresses kept between calls) gives the same strings as many,
# whatever is done to the tensors between calls.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
PKG="$(dirname "$REPRUN")/python"
[[ -f $PKG/reprun_capture/libreprun_fingerprint.so ]] || fail "the build has no libreprun_fingerprint.so in $PKG"
"$PY" - "$PKG" <<'PYEOF' || fail "fingerprints"
import sys
sys.path.insert(0, sys.argv[1])
import torch
import reprun_capture.fingerprint as F

def check(fp, prefix):
    a = torch.randn(64, 33)
    b = a.clone(); b[[3, 7]] = b[[7, 3]]
    c = a.clone(); c.view(-1).view(torch.int32)[100] ^= 1
    z, nz = torch.zeros(4), torch.zeros(4); nz[2] = -0.0
    fps = fp.many([a, a.clone(), b, c, z, nz, a.t(), a.t().contiguous()])
    assert all(x.startswith(prefix) for x in fps), fps
    assert fps[0] == fps[1], "equal tensors differ"
    assert len({fps[0], fps[2], fps[3]}) == 3, "a swap or a flipped bit was not seen"
    assert fps[4] != fps[5], "-0.0 and 0.0 are the same"
    assert fps[6] == fps[7], "a transposed view and its contiguous copy differ"
    assert fps[0] != fps[6], "the shape is not part of the fingerprint"
    for t in (a.double(), a.half(), a.bfloat16(), a > 0, (a * 100).long(), torch.complex(a, a), torch.empty(0)):
        assert fp.one(t).startswith(prefix), t.dtype

def check_fixed(fp, sparse):
    """FixedTensors gives what many gives, while the tensors change under it (with a sparse tensor
    in the list or not)."""
    sq, w, b = torch.randn(16, 16), torch.randn(300, 7), torch.randn(7)
    ts = [sq, w, b, torch.randn(5, 4).t(), torch.complex(b, b), b.bfloat16(), torch.empty(0),
          torch.randn(3) > 0] + ([torch.randn(4, 4).to_sparse()] if sparse else [])
    fixed = fp.fixed(ts)

    def same(what):
        assert fixed.fingerprints() == fp.many(ts), what

    same("at the start")
    same("again")
    with torch.no_grad():
        w.add_(1)
    same("after an in-place update")
    w.data = torch.randn(300, 7)
    same("after .data was assigned")
    sq.t_()
    same("after an in-place transpose (same address and shape, other strides)")
    w.resize_(7, 300)
    same("after resize_ to another shape")
    b.set_(torch.randn(9))
    same("after set_")
    w.data = w.data.view(torch.int32)
    same("after .data became a view as another dtype (same address, shape and strides)")

# Known answers: XXH3 of these bytes, as every build since the first gives them (the AVX2 loop too).
known = F.Fingerprinter(torch).many([torch.arange(1000, dtype=torch.float32),
                                     torch.arange(7, dtype=torch.int64).reshape(7, 1), torch.arange(60.0).double()])
assert known == ["x76b8aecd163c9668", "x6341f94ecd830cef", "x15d7870d4a551052"], known
check(F.Fingerprinter(torch), "x")
for sparse in (False, True):
    check_fixed(F.Fingerprinter(torch), sparse)
check(F.Fingerprinter(torch, force_device_method=True), "d")
check_fixed(F.Fingerprinter(torch, force_device_method=True), True)
F._NATIVE[:] = [None]  # a copy of the package without its library: CRC-32
check(F.Fingerprinter(torch), "c")
check_fixed(F.Fingerprinter(torch), True)
a = torch.randn(10_000)
whole = F.Fingerprinter(torch, force_device_method=True).one(a)
F._CHUNK = 999
assert F.Fingerprinter(torch, force_device_method=True).one(a) == whole, "chunks change the device sum"
print("fingerprints ok")
PYEOF
pass
