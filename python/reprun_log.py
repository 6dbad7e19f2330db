"""reprun_log: write reprun's step log from any Python training loop. No dependencies.

Call StepLog.log() once per optimizer step; under `reprun exec` the log goes to $REPRUN_STEP_LOG
(outside reprun, with no path given, logging does nothing). Each call writes one JSON line and
flushes it, so a crash loses at most the step being written:

    from reprun_log import StepLog
    steplog = StepLog()
    for step, (indices, x, y) in enumerate(batches, start=1):
        loss = train_step(x, y)
        steplog.log(step, loss=loss, batch=indices, tensors=dict(model.named_parameters()))

Fields (docs/run-format.md): step (int), loss (written round-trip exact, as repr does), batch
(a fingerprint of the sample indices, or your own string), tensors ({name: {"sha256", "norm"}},
hashing each tensor's bytes: numpy arrays, PyTorch tensors, bytes), metrics ({name: number}).
"""

import hashlib
import json
import math
import os

__all__ = ["StepLog", "batch_fingerprint", "tensor_entry"]


def _number(v):
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _as_numpy(t):
    """A contiguous numpy array for numpy arrays and PyTorch tensors, or None."""
    if hasattr(t, "detach") and hasattr(t, "cpu"):  # torch.Tensor (also a Parameter)
        t = t.detach().cpu().contiguous().numpy()
    if hasattr(t, "tobytes") and hasattr(t, "dtype"):
        import numpy as np  # only reached when a numpy array (or tensor) was given

        return np.ascontiguousarray(t)
    return None


def tensor_entry(t):
    """{"sha256": hex of the tensor's bytes, "norm": L2 norm in float64} (norm only for arrays)."""
    arr = _as_numpy(t)
    if arr is None:
        data = bytes(t)
        return {"sha256": hashlib.sha256(data).hexdigest()}
    import numpy as np

    # np.sum is pairwise and single-threaded: the same bits for the same array.
    norm = float(np.sqrt(np.sum(np.square(arr, dtype=np.float64))))
    return {"sha256": hashlib.sha256(arr.tobytes()).hexdigest(), "norm": _number(norm)}


def batch_fingerprint(indices):
    """A short fingerprint of a batch's sample indices (any iterable of ints, or an array)."""
    arr = _as_numpy(indices)
    if arr is not None:
        data = arr.astype("<i8").tobytes()
    else:
        data = b"".join(int(i).to_bytes(8, "little", signed=True) for i in indices)
    return hashlib.sha256(data).hexdigest()[:16]


class StepLog:
    """Appends one line per step to `path` (default: $REPRUN_STEP_LOG; no path: does nothing)."""

    def __init__(self, path=None):
        self.path = path if path is not None else os.environ.get("REPRUN_STEP_LOG")
        self._file = open(self.path, "a", encoding="utf-8") if self.path else None

    def log(self, step, loss=None, batch=None, tensors=None, metrics=None):
        if self._file is None:
            return
        rec = {"step": int(step)}
        if loss is not None:
            rec["loss"] = _number(loss)
        if batch is not None:
            rec["batch"] = batch if isinstance(batch, str) else batch_fingerprint(batch)
        if tensors:
            rec["tensors"] = {str(name): tensor_entry(t) for name, t in tensors.items()}
        if metrics:
            rec["metrics"] = {str(k): _number(v) for k, v in metrics.items()}
        self._file.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
