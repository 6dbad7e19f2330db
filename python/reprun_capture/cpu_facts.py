"""The CPU's numeric facts of a PyTorch process, for its framework facts (`framework.cpu`): the
instruction set torch's own kernels dispatch to, the BLAS torch was built with, and every OpenBLAS
loaded in the process (Debian's, which torch 1.13 and numpy use; the copy numpy's wheels bundle
under suffixed symbol names) with the kernel it chose for this CPU. Two machines' runs part on
these: OPENBLAS_CORETYPE and ATEN_CPU_CAPABILITY change them on one machine.

Read once, at the first optimizer step, from the libraries already loaded: nothing is loaded here.
"""

import ctypes
import os
import re

# OpenBLAS's own name, and numpy's bundled copy (scipy-openblas: prefix scipy_, suffix 64_).
_OPENBLAS_NAMES = [(p, s) for p in ("openblas_", "scipy_openblas_") for s in ("", "64_")]
_THREADING = {0: "sequential", 1: "pthreads", 2: "openmp"}


def _loaded_libraries():
    """The shared libraries mapped in this process, in load order, once each."""
    out = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if path.startswith("/") and ".so" in os.path.basename(path) and path not in out:
                        out.append(path)
    except OSError:
        pass
    return out


def _openblas(path):
    """An OpenBLAS's facts, or None when the library is no OpenBLAS."""
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None
    for prefix, suffix in _OPENBLAS_NAMES:
        try:
            corename = getattr(lib, f"{prefix}get_corename{suffix}")
            config = getattr(lib, f"{prefix}get_config{suffix}")
        except AttributeError:
            continue
        corename.restype = config.restype = ctypes.c_char_p
        text = (config() or b"").decode(errors="replace")
        version = re.search(r"OpenBLAS ([0-9][0-9.]*)", text)
        facts = {"version": version.group(1) if version else None,
                 "core": (corename() or b"").decode(errors="replace") or None, "threading": None, "threads": None}
        try:
            parallel = getattr(lib, f"{prefix}get_parallel{suffix}")
            facts["threading"] = _THREADING.get(parallel(), "unknown")
        except AttributeError:
            pass
        try:
            facts["threads"] = getattr(lib, f"{prefix}get_num_threads{suffix}")()
        except AttributeError:
            pass
        return facts
    return None


def cpu_facts(torch):
    """{"capability", "torch_blas", "mkl", "onednn", "openblas": {library: facts}}; a fact that cannot
    be read is None ("unknown")."""
    try:
        config = torch.__config__.show()
    except Exception:
        config = ""

    def found(pattern):
        m = re.search(pattern, config)
        return m.group(1).strip() if m else None

    capability = None
    try:
        capability = torch.backends.cpu.get_cpu_capability()  # torch >= 2.0
    except Exception:
        capability = found(r"CPU capability usage: (\S+)")  # torch 1.13 has no API for it
    openblas = {}
    for path in _loaded_libraries():
        name = os.path.basename(path)
        if "blas" not in name or name in openblas:
            continue
        facts = _openblas(path)
        if facts:
            openblas[name] = facts
    return {"capability": capability, "torch_blas": found(r"BLAS_INFO=([^,\s]+)"),
            "mkl": found(r"Math Kernel Library Version ([^\n]+)"), "onednn": found(r"MKL-DNN v([^\s(]+)"),
            "openblas": dict(sorted(openblas.items()))}
