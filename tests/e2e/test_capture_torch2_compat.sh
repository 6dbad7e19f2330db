# reprun_capture on what torch 2.x brings, exercised with Debian's torch 1.13: tensors without plain
# storage (a wrapper subclass like FakeTensor, functional tensors or DTensor; sparse CSR and COO; meta)
# are fingerprinted "-" by many and FixedTensors, a DTensor-like tensor through its to_local(), and
# in the op trace they are recorded, never raised; a determinism flag that warns when read, one that
# raises and one missing from torch are recorded (null where unreadable) with no warning into the
# program (warnings are errors here); an optimizer step already wrapped (as torch 2.x's
# profile_hook_step does it) or wrapped again after the capture, and an LR scheduler's wrapper, count
# one step per step in the step log; repro.py's fingerprint reads every dtype.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
PKG="$(dirname "$REPRUN")/python"
[[ -f $PKG/reprun_capture/capture.py ]] || fail "the build has no reprun_capture in $PKG"
"$PY" - "$PKG" <<'PYEOF' || fail "torch 2.x compatibility"
import sys, os, warnings, functools, json, tempfile
sys.path.insert(0, sys.argv[1])
import torch
import reprun_capture.fingerprint as F
from reprun_capture.capture import Capture

fp = F.Fingerprinter(torch)

class Wrapper(torch.Tensor):
    """A wrapper subclass without storage, like FakeTensor, functional tensors or DTensor."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda x: x.inner if isinstance(x, Wrapper) else x
        return func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})

class Sharded(Wrapper):
    def to_local(self):
        return self.inner

a = torch.randn(8, 3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    csr = a.to_sparse_csr()  # warns on 1.13 (beta)
    torch.mm(csr, torch.randn(3, 2))
warnings.simplefilter("error")  # the capture must never warn into the program
odd = [Wrapper(a), csr, a.to_sparse(), torch.empty(2, device="meta")]
assert fp.many(odd) == ["-"] * 4, fp.many(odd)
assert fp.one(Sharded(a)) == fp.one(a), "a DTensor-like tensor is read through to_local()"
fixed = fp.fixed([a] + odd)
assert fixed.fingerprints() == fp.many([a] + odd) == [fp.one(a)] + ["-"] * 4
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    chalf = torch.randn(3).to(torch.complex32)  # warns on 1.13 (experimental)
assert isinstance(fp.one(chalf), str)
dev = F.Fingerprinter(torch, force_device_method=True)
assert dev.many(odd) == ["-"] * 4 and dev.one(Sharded(a)) == dev.one(a)
assert F._int_view_dtype(torch, torch.int32) is None and F._int_view_dtype(torch, torch.bool) is None
assert F._int_view_dtype(torch, torch.bfloat16) == torch.int16

# Determinism facts: a flag that warns when read, one that raises and one that is missing are null.
cap = Capture(torch, {})
def warns():
    warnings.warn("deprecated", UserWarning)
    return "highest"
def raises():
    raise RuntimeError("mixed legacy and new fp32_precision settings")
torch.get_float32_matmul_precision = warns
torch.get_num_interop_threads = raises
del torch.is_deterministic_algorithms_warn_only_enabled
state = cap.determinism_state()
assert state["float32_matmul_precision"] == "highest", state
assert state["inter_op_threads"] is None and state["warn_only"] is None, state
assert set(state) >= {"cuda_matmul_fp32_precision", "fill_uninitialized_memory", "cudnn_allow_tf32"}, state

# Optimizer steps: a step already wrapped (as torch 2.x's profile_hook_step and LR schedulers do it,
# with functools.wraps) and one wrapped again after the capture is counted once per step.
with tempfile.TemporaryDirectory() as d:
    env = {"REPRUN_AUTO_STEP_LOG": os.path.join(d, "steps.jsonl"), "REPRUN_OP_TRACE": os.path.join(d, "ops.jsonl"),
           "REPRUN_OP_TRACE_STEPS": "0"}
    cap = Capture(torch, env)
    cap.install()

    def hooked(step):
        @functools.wraps(step)
        def wrapper(*args, **kwargs):
            return step(*args, **kwargs)
        wrapper.hooked = True
        return wrapper

    class MySGD(torch.optim.SGD):
        @hooked
        def step(self, closure=None):
            return super().step(closure)

    model = torch.nn.Linear(3, 2)
    for cls in (torch.optim.SGD, MySGD, torch.optim.Adam):
        opt = cls(model.parameters(), lr=0.1)
        if not getattr(type(opt).step, "hooked", False):
            type(opt).step = hooked(type(opt).step)  # torch 2.x's Optimizer._patch_step_function
        sched = torch.optim.lr_scheduler.StepLR(opt, 1)
        before = cap.step
        for _ in range(2):
            model(torch.randn(4, 3)).sum().backward()
            opt.step()
            sched.step()
        assert cap.step == before + 2, (cls, cap.step, before)
        # ops on tensors without plain storage in the op trace: recorded, never raised
        (Wrapper(a) * 2).sum()
        torch.mm(csr, torch.randn(3, 2))
    cap.mode.end("exit", exit_process=False)
    with open(env["REPRUN_AUTO_STEP_LOG"]) as f:
        lines = f.read().splitlines()
    assert [json.loads(l)["step"] for l in lines] == list(range(1, 7)), lines
    with open(env["REPRUN_OP_TRACE"]) as f:
        ops = [json.loads(l) for l in f]
    assert ops[-1].get("end") == "exit", ops[-1]
    assert any("-" in (o.get("in") or []) for o in ops), "no op recorded an unreadable input"
# repro.py's output fingerprint reads every dtype (those numpy lacks through an integer view) and
# keeps the dtype in it.
import runpy
from reprun_capture.repro import write_repro
with tempfile.TemporaryDirectory() as d:
    write_repro(os.path.join(d, "repro.py"), op="aten.add.Tensor", where="t.py:1", func="f", device="cpu",
                fix="", threads="")
    rfp = runpy.run_path(os.path.join(d, "repro.py"), run_name="repro")["fingerprint"]
for t in (a, a.double(), a.half(), a.bfloat16(), a > 0, a.long(), torch.complex(a, a), torch.zeros(0), chalf):
    assert len(rfp(t)) == 64, t.dtype
assert rfp(a.bfloat16()) != rfp(a.bfloat16().view(torch.int16)), "the dtype is not part of repro's fingerprint"
print("torch 2.x compat ok")
PYEOF
pass
