# reprun_capture's tensor fingerprints (python/reprun_capture/fingerprint.py), with Debian's torch:
# exact and order-sensitive (a swap of two elements, a flipped bit, -0.0 vs 0.0 change them), the
# same for a non-contiguous view as for its contiguous copy, every dtype read, XXH3 through the
# built library (CRC-32 without it), and the device method (run here on CPU tensors) gives the same
# sum whether a tensor is reduced in one pass or in chunks.
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

check(F.Fingerprinter(torch), "x")
check(F.Fingerprinter(torch, force_device_method=True), "d")
F._NATIVE[:] = [None]  # a copy of the package without its library: CRC-32
check(F.Fingerprinter(torch), "c")
a = torch.randn(10_000)
whole = F.Fingerprinter(torch, force_device_method=True).one(a)
F._CHUNK = 999
assert F.Fingerprinter(torch, force_device_method=True).one(a) == whole, "chunks change the device sum"
print("fingerprints ok")
PYEOF
pass
