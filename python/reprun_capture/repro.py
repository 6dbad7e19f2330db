"""Writes repro.py: a standalone script that reruns one op on inputs saved from a run."""

_TEMPLATE = r'''#!/usr/bin/env python3
"""Written by `reprun exec`: the first operation where two runs of the program (COMMAND) parted,
on the inputs saved from the run (op-inputs.pt, beside this file).

It runs the op N times (default 20; python3 repro.py N) and prints how many distinct outputs it got,
as the runs did and with the suggested fix. Needs only torch.
"""
import hashlib
import os
import sys

import torch

COMMAND = {command!r}
OP = {op!r}
WHERE = {where!r}  # {func}
DEVICE = {device!r}
FIX = {fix!r}  # deterministic | threads | seed | seed_own | "" (unknown: the deterministic-algorithms switch)
THREADS = {threads!r}  # intra-op thread counts of the runs (FIX == "threads")


def resolve(name):
    namespace, op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


NUMPY_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                torch.float32, torch.float64)


def fingerprint(out):
    h = hashlib.sha256()
    for x in out if isinstance(out, (list, tuple)) else [out]:
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().contiguous()
            dtype = x.dtype
            if x.is_complex():
                x = torch.view_as_real(x)
            if x.dtype not in NUMPY_DTYPES:  # bfloat16, and torch 2.x's float8_*, uint16/32/64, bits*
                x = x.view({{1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}}[x.element_size()])
            h.update(str(dtype).encode() + str(list(x.shape)).encode() + x.numpy().tobytes())
        else:
            h.update(repr(x).encode())
    return h.hexdigest()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    here = os.path.dirname(os.path.abspath(__file__))
    if DEVICE.startswith("cuda") and not torch.cuda.is_available():
        print(f"repro: {{OP}} ran on {{DEVICE}}; this machine has no CUDA device", file=sys.stderr)
        return 2
    try:  # the file is reprun's own: torch >= 2.6 would refuse its non-tensor arguments by default
        saved = torch.load(os.path.join(here, "op-inputs.pt"), weights_only=False)
    except TypeError:  # torch < 1.13 has no weights_only
        saved = torch.load(os.path.join(here, "op-inputs.pt"))
    op = resolve(OP)

    own_seed = [None]  # the seed of the op's own generator (generator=), None: from entropy

    def once(before=None):
        if before:
            before()

        def copy(x):
            if isinstance(x, dict) and "__reprun_generator__" in x:  # the op's own torch.Generator
                g = torch.Generator(device=x["__reprun_generator__"])
                if own_seed[0] is None:
                    g.seed()
                else:
                    g.manual_seed(own_seed[0])
                return g
            return x.clone() if isinstance(x, torch.Tensor) else x

        args = [copy(a) for a in saved["args"]]
        kwargs = {{k: copy(v) for k, v in saved["kwargs"].items()}}
        out = op(*args, **kwargs)
        if DEVICE.startswith("cuda"):
            torch.cuda.synchronize()
        return fingerprint(out)

    def report(label, outputs):
        k = len(set(outputs))
        print(f"{{label}}: {{len(outputs)}} runs, {{k}} distinct output{{'' if k == 1 else 's'}}")
        return k

    if len(sys.argv) > 2 and sys.argv[2] == "--child":  # one thread count, set before torch started
        print("\n".join(once() for _ in range(n)))
        return 0
    print(f"{{OP}} on {{DEVICE}}, from {{WHERE}}")
    if FIX == "threads":
        # Thread counts are set in fresh processes: the BLAS library reads them when it loads.
        import subprocess

        def at(t):
            env = dict(os.environ, OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t))
            out = subprocess.run([sys.executable, os.path.abspath(__file__), str(n), "--child"], env=env,
                                 check=True, capture_output=True, text=True).stdout
            return out.split()

        outs = []
        for t in THREADS:
            outs += at(t)
        report(f"without the fix (threads {{', '.join(map(str, THREADS))}})", outs)
        report(f"with the fix (OMP_NUM_THREADS={{THREADS[0]}} and torch.set_num_threads({{THREADS[0]}}) in every run)",
               at(THREADS[0]))
        return 0
    if FIX == "seed":
        report("without the fix (the generator as it comes)", [once() for _ in range(n)])
        report("with the fix (torch.manual_seed(0) before the op)", [once(lambda: torch.manual_seed(0)) for _ in range(n)])
        return 0
    if FIX == "seed_own":
        report("without the fix (its generator seeded from entropy, as generator.seed() does)", [once() for _ in range(n)])
        own_seed[0] = 0
        report("with the fix (its generator made with manual_seed(0))", [once() for _ in range(n)])
        return 0
    if FIX == "kernels":
        # The runs chose other CPU kernels (OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY): one set of kernels
        # gives one output, which is what the fix asks of every run.
        report("with this process's kernels (set OPENBLAS_CORETYPE or ATEN_CPU_CAPABILITY before running this "
               "to try another set)", [once() for _ in range(n)])
        return 0
    report("without the fix", [once() for _ in range(n)])
    torch.use_deterministic_algorithms(True)
    try:
        report("with the fix (torch.use_deterministic_algorithms(True))", [once() for _ in range(n)])
    except RuntimeError as e:
        print(f"with the fix: the op refuses to run deterministically: {{str(e).splitlines()[0]}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def write_repro(path, op, where, func, device, fix, threads):
    import sys

    counts = [int(t) for t in threads.split(",") if t.strip().isdigit()] or [1, 2]
    text = _TEMPLATE.format(op=op, where=where, func=func or "", device=device, fix=fix, threads=counts,
                            command=" ".join(sys.argv))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
