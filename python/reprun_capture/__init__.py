"""reprun_capture: what `reprun exec` records inside an unmodified PyTorch program.

Armed by reprun's sitecustomize when REPRUN_CAPTURE is set. Nothing happens until the program
imports torch (this package never imports it first). Then:

- the automatic step log (REPRUN_AUTO_STEP_LOG): per optimizer step, the loss (the scalar
  `backward()` was last called on) and an exact checksum of
  every parameter after the update, named by module path (`encoder.layers.2.weight`);
- framework facts (REPRUN_FRAMEWORK_FILE): versions, installed distributions and the determinism
  state at the first step, for the run's manifest (a process that never imports torch writes only
  its interpreter's version and distributions, packages.py);
- in a replay, or a run recorded with exec --trace-steps N (REPRUN_OP_TRACE_KEEP: the program runs
  on untraced after the trace), the op trace (REPRUN_OP_TRACE): every ATen op up to
  REPRUN_OP_TRACE_STEPS optimizer steps, with phase, module, source line and input and output
  fingerprints; or, in a replay, the inputs of one op (REPRUN_OP_SAVE) and a repro.py beside them.

Errors in here never break the program: they are reported once on stderr and capture stops.
"""

import os
import sys

_state = None


def _warn(msg):
    print(f"reprun: {msg}", file=sys.stderr, flush=True)


def arm():
    """Waits for `import torch` (installs at once when torch is already imported); a process that
    exits without it still records its interpreter's installed distributions (packages.py)."""
    from .imports import after_import

    facts = os.environ.get("REPRUN_FRAMEWORK_FILE")
    if facts:
        from .packages import at_exit_without_torch

        at_exit_without_torch(facts)
    after_import("torch", _install, lambda e: _warn(f"capture disabled: {type(e).__name__}: {e}"))


def _install(torch):
    global _state
    if _state is not None:
        return
    from . import capture

    _state = capture.Capture(torch, os.environ)
    _state.install()
