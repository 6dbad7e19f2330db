"""Exact, order-sensitive fingerprints of tensors, computed where the tensor lives.

A CPU tensor is fingerprinted by XXH3-64 of its bytes in logical (row-major) order, read in place
(libreprun_fingerprint.so beside this file, through ctypes; ~40 GB/s with AVX2), or by zlib's CRC-32 where
that library is missing (a copy of the package without its build). A tensor on an accelerator is
fingerprinted on the device: each element's bits are mixed with its position by a bijective integer mixer and the mixed
values are summed in int64 (wrapping); only the 8-byte sums cross to the host, one transfer for
all the tensors of a call. Never an xor-sum: swapping two elements changes the fingerprint.

Either way the dtype and the shape are part of the fingerprint, so equal fingerprints mean equal
dtype, shape and bits (up to a 2**-32 chance for the CRC). The two methods give different strings
for the same values, so compare fingerprints taken on the same kind of device.

FixedTensors fingerprints the same tensors again and again (an optimizer's parameters at each
step) for less: one native call for all of them, with what it reads checked, not worked out anew.
"""

import ctypes
import os
import zlib

_K1 = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64
_K2 = 0x2545F4914F6CDD1D
_K3 = -4658895280553007687  # 0xBF58476D1CE4E5B9 as int64
_K4 = -7723592293110705685  # 0x94D049BB133111EB as int64

_CHUNK = 1 << 22  # elements per pass of the device method (32 MiB of int64 temporaries)
_INT_VIEW = {}  # float dtype -> int dtype of the same size, filled on first use


def _int_view_dtype(torch, dtype):
    """The integer dtype of dtype's size to read its bits through, for floating-point dtypes and the
    2.x dtypes that have no arithmetic (float8_*, float4_*, bits*): None for integers and bool."""
    if not _INT_VIEW:
        _INT_VIEW.update({torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16,
                          torch.bfloat16: torch.int16})
    if dtype in _INT_VIEW:
        return _INT_VIEW[dtype]
    view = None
    name = str(dtype).replace("torch.", "")
    if name.startswith(("float", "bits")) or getattr(dtype, "is_floating_point", False):
        try:  # dtype.itemsize is 2.1 and later
            size = torch.empty((), dtype=dtype, device="meta").element_size()
            view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(size)
        except Exception:
            view = None
    _INT_VIEW[dtype] = view
    return view


_LIB = []  # [] not loaded yet; [None] missing; [ctypes.CDLL]
_NATIVE = []  # the same for its reprun_xxh3 (tests set [None] for a package without its library)
_NATIVE_MANY = []  # and for its reprun_xxh3_many


def _lib():
    if not _LIB:
        try:
            _LIB.append(ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "libreprun_fingerprint.so")))
        except OSError:
            _LIB.append(None)
    return _LIB[0]


def _native_xxh3():
    if not _NATIVE:
        f = getattr(_lib(), "reprun_xxh3", None)
        if f is not None:
            f.restype = ctypes.c_uint64
            f.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64]
        _NATIVE.append(f)
    return _NATIVE[0]


def _native_xxh3_many():
    """reprun_xxh3_many, or None where reprun_xxh3 is missing (or the library predates it)."""
    if _native_xxh3() is None:
        return None
    if not _NATIVE_MANY:
        f = None
        if _lib() is not None:
            try:  # through PyDLL: the call keeps the GIL (see FixedTensors)
                f = ctypes.PyDLL(_lib()._name).reprun_xxh3_many
            except (OSError, AttributeError):  # a library built before reprun_xxh3_many
                f = None
        if f is not None:
            f.restype = None
            f.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                          ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]
        _NATIVE_MANY.append(f)
    return _NATIVE_MANY[0]


def _data_ptr(t):
    """t.data_ptr(), or None for a tensor without plain storage (a subclass such as DTensor raises)."""
    try:
        return t.data_ptr()
    except Exception:
        return None


def _header(t):
    return f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}".encode()


def _plain(torch, t):
    """A detached, contiguous, real-valued view of t's values (complex as pairs), or None for what has
    no plain values to read: sparse and other non-strided layouts, nested, quantized and meta tensors,
    and subclasses with their own __torch_dispatch__ (FakeTensor, functional tensors; a DTensor is read
    through its local shard)."""
    if type(t).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__:
        to_local = getattr(t, "to_local", None)  # DTensor: this process's shard
        if not callable(to_local):
            return None
        t = to_local()
        if not isinstance(t, torch.Tensor) or type(t).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__:
            return None
    if (t.layout != torch.strided or t.is_sparse or getattr(t, "is_nested", False)
            or getattr(t, "is_quantized", False) or t.device.type == "meta"):
        return None
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.contiguous()


def _crc(torch, t):
    """CRC-32 of a contiguous CPU tensor's bytes (dtypes numpy lacks are read as integers)."""
    view = _int_view_dtype(torch, t.dtype)
    if view is not None and t.dtype not in (torch.float64, torch.float32, torch.float16):  # bfloat16, float8
        t = t.view(view)
    return zlib.crc32(t.numpy().reshape(-1).view("u1")) if t.numel() else 0


class Fingerprinter:
    """Fingerprints lists of tensors; keeps position vectors for the device method between calls."""

    def __init__(self, torch, force_device_method=False):
        self.torch = torch
        self.force_device_method = force_device_method  # tests: the device method on CPU tensors
        self._positions = {}  # (numel, device) -> int64 positions, already multiplied by _K2

    def _positions_for(self, n, device):
        key = (n, str(device))
        p = self._positions.get(key)
        if p is None:
            if len(self._positions) > 256:
                self._positions.clear()
            p = self.torch.arange(n, dtype=self.torch.int64, device=device) * _K2 + _K1
            self._positions[key] = p
        return p

    def _device_sum(self, t):
        """int64 0-dim tensor on t's device: sum over i of mix(bits_i * K1 + position term), in chunks
        of _CHUNK elements so that the int64 temporaries stay small for a large tensor."""
        torch = self.torch
        flat = t.reshape(-1)
        view = _int_view_dtype(torch, flat.dtype)
        if view is not None:
            flat = flat.view(view)
        if flat.dtype == torch.bool:
            flat = flat.to(torch.uint8)
        n = flat.numel()
        total = None
        for start in range(0, n, _CHUNK):
            part = flat[start:start + _CHUNK]
            positions = self._positions_for(part.numel(), flat.device)
            v = part.to(torch.int64) * _K1 + positions
            if start:
                # position i = start + j: the same terms as one pass (start * K2, wrapped to int64)
                v += (start * _K2 + (1 << 63)) % (1 << 64) - (1 << 63)
            v = v ^ (v >> 31)
            v = v * _K3
            v = v ^ (v >> 29)
            v = v * _K4
            v = v ^ (v >> 32)
            s = v.sum()
            total = s if total is None else total + s
        return total

    def many(self, tensors):
        """Fingerprint strings of `tensors` (torch.Tensor each), in order; "-" for what cannot be read.
        Device tensors are reduced to their sums on the device, stacked per device, and cross to the
        host in one transfer per device."""
        torch = self.torch
        xxh3 = _native_xxh3()
        out = [None] * len(tensors)
        sums = {}  # device -> [(position, header, 0-dim sum)]
        with torch.no_grad():
            for i, t in enumerate(tensors):
                try:  # a tensor that cannot be read is "-", never an error in the user's program
                    plain = _plain(torch, t)
                    if plain is None:
                        out[i] = "-"
                    elif plain.device.type == "cpu" and not self.force_device_method:
                        header = _header(t)
                        if xxh3 is not None:
                            size = plain.numel() * plain.element_size()
                            out[i] = "x%016x" % xxh3(plain.data_ptr() if size else None, size, zlib.crc32(header))
                        else:
                            out[i] = "c%08x" % zlib.crc32(header, _crc(torch, plain))
                    elif plain.numel() == 0:
                        out[i] = "d%08x" % zlib.crc32(_header(t))
                    else:
                        sums.setdefault(str(plain.device), []).append((i, _header(t), self._device_sum(plain)))
                except Exception:
                    out[i] = "-"
            for items in sums.values():
                try:
                    values = torch.stack([s for _, _, s in items]).tolist()
                except Exception:
                    values = ["-"] * len(items)
                for (i, header, _), v in zip(items, values):
                    out[i] = v if v == "-" else "d%08x%016x" % (zlib.crc32(header), v & 0xFFFFFFFFFFFFFFFF)
        return out

    def one(self, t):
        return self.many([t])[0]

    def fixed(self, tensors):
        """A FixedTensors of `tensors`: their fingerprints, again and again, at less cost."""
        return FixedTensors(self, tensors)


class FixedTensors:
    """The fingerprints of one list of tensors taken again and again (an optimizer's parameters after
    each step), the same strings as Fingerprinter.many gives. For each CPU tensor that many hashes in
    place (dense, real, contiguous), the address, length and seed are worked out once and checked at
    each call against the tensor's address, shape, strides, dtype and device: assigning `.data`,
    resize_, set_ or t_ change one of them, and the tensors are looked at afresh. Those tensors are
    hashed in one native call that keeps the GIL, so no other thread can free a storage while it is
    read; the others go through Fingerprinter.many."""

    def __init__(self, fp, tensors):
        self.fp = fp
        self.tensors = list(tensors)
        self.devices = set()  # str of the tensors' devices, as of the last call
        # Strided tensors have an address and strides to check; a tensor's layout never changes.
        self._strided = [t for t in self.tensors if t.layout == fp.torch.strided]
        self._keys = None
        n = len(self._strided)
        self._data = (ctypes.c_void_p * n)()
        self._sizes = (ctypes.c_size_t * n)()
        self._seeds = (ctypes.c_uint64 * n)()
        self._sums = (ctypes.c_uint64 * n)()
        self._native = []  # positions in self.tensors of the natively hashed tensors, in slot order
        self._others = []  # positions of the rest

    def _prepare(self, keys):
        self._keys = keys
        self._native, self._others = [], []
        self.devices = {str(t.device) for t in self.tensors}
        for i, t in enumerate(self.tensors):
            if (t.layout == self.fp.torch.strided and t.device.type == "cpu" and not t.is_complex()
                    and type(t).__torch_dispatch__ is self.fp.torch.Tensor.__torch_dispatch__
                    and not getattr(t, "is_quantized", False) and not getattr(t, "is_nested", False)
                    and t.is_contiguous() and _data_ptr(t) is not None):
                j = len(self._native)
                size = t.numel() * t.element_size()
                self._data[j] = t.data_ptr() if size else None
                self._sizes[j] = size
                self._seeds[j] = zlib.crc32(_header(t))
                self._native.append(i)
            else:
                self._others.append(i)

    def fingerprints(self):
        many = _native_xxh3_many()
        if many is None or self.fp.force_device_method:
            self.devices = {str(t.device) for t in self.tensors}
            return self.fp.many(self.tensors)
        keys = [(_data_ptr(t), t.shape, t.stride(), t.dtype, t.device) for t in self._strided]
        if keys != self._keys:
            self._prepare(keys)
        k = len(self._native)
        if k:
            many(k, self._data, self._sizes, self._seeds, self._sums)
        if not self._others:
            return ["x%016x" % v for v in self._sums[:k]]
        out = [None] * len(self.tensors)
        for i, v in zip(self._native, self._sums[:k]):
            out[i] = "x%016x" % v
        for i, f in zip(self._others, self.fp.many([self.tensors[i] for i in self._others])):
            out[i] = f
        return out
