"""reprun_capture: what `reprun exec` records inside an unmodified PyTorch program.

Armed by reprun's sitecustomize when REPRUN_CAPTURE is set. Nothing happens until the program
imports torch (this package never imports it first). Then:

- the automatic step log (REPRUN_AUTO_STEP_LOG): per optimizer step, the loss (the scalar
  `backward()` was last called on) and an exact checksum of
  every parameter after the update, named by module path (`encoder.layers.2.weight`);
- framework facts (REPRUN_FRAMEWORK_FILE): versions, installed distributions and the determinism
  state at the first step, for the run's manifest;
- in a replay only, the op trace (REPRUN_OP_TRACE): every ATen op up to REPRUN_OP_TRACE_STEPS
  optimizer steps, with phase, module, source line and input and output fingerprints; or the
  inputs of one op (REPRUN_OP_SAVE) and a standalone repro.py beside them.

Errors in here never break the program: they are reported once on stderr and capture stops.
"""

import importlib.util
import os
import sys

_state = None


def _warn(msg):
    print(f"reprun: {msg}", file=sys.stderr, flush=True)


class _TorchWatcher:
    """A meta-path finder that lets torch import normally, then installs the capture."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader_exec = spec.loader.exec_module

        def exec_module(module):
            loader_exec(module)
            try:
                _install(module)
            except Exception as e:  # pragma: no cover - reported, never raised
                _warn(f"capture disabled: {type(e).__name__}: {e}")

        spec.loader.exec_module = exec_module
        return spec


def arm():
    """Waits for `import torch` (installs at once when torch is already imported)."""
    if "torch" in sys.modules:
        _install(sys.modules["torch"])
    elif not any(isinstance(f, _TorchWatcher) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchWatcher())


def _install(torch):
    global _state
    if _state is not None:
        return
    from . import capture

    _state = capture.Capture(torch, os.environ)
    _state.install()
