"""The capture installed in a PyTorch program once it imports torch (see __init__.py)."""

import atexit
import functools
import json
import operator
import os
import sys
import warnings
import weakref

from .checkpoints import CheckpointWatch
from .cpu_facts import cpu_facts
from .fingerprint import Fingerprinter
from .packages import facts_entry, write_json_file

_NON_FINITE = {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}


def _json_number(v):
    """v as json.dumps wrote it in a record: finite floats as repr, the others as the strings
    steplog.cpp reads ("NaN", "Infinity", "-Infinity")."""
    text = float.__repr__(float(v))
    return _NON_FINITE[text] if text[-1] in "nf" else text


def _write_all(fd, data):
    """One os.write of the line (a crash cuts at most the last line, docs/run-format.md); a short
    write of a full disk goes on where it stopped."""
    while data:
        data = data[os.write(fd, data):]


class _LoggedParams:
    """One optimizer's parameters as the step log records them, worked out at a step and kept while the
    optimizer's param_groups hold the same tensors in the same groups and no parameter got a name
    since: their names, their FixedTensors, and the record's "tensors" object as a %-template."""

    def __init__(self, cap, opt, groups):
        # Forgotten with the optimizer (its id may be another's later).
        self.opt = weakref.ref(opt, lambda _, d=cap.logged_params, k=id(opt): d.pop(k, None))
        self.lists = [list(g["params"]) for g in groups]
        params, group_pos = [], []
        for g, group_params in enumerate(self.lists):
            for i, p in enumerate(group_params):
                if isinstance(p, cap.torch.Tensor):
                    params.append(p)
                    group_pos.append((g, i))
        names = [n or f"param_groups.{g}.{i}" for n, (g, i) in zip(cap._names_for(params), group_pos)]
        self.n_names = len(cap.param_names)  # after _names_for, which may name them from the heap
        # The buffers of the modules these parameters belong to (BatchNorm's running statistics and
        # counters): no optimizer updates them, and the training loss may not show them.
        self.buffers = cap.buffer_slots(params)
        names += [name for _, _, _, name in self.buffers]
        self.fixed = cap.fp.fixed(params + [t for _, _, t, _ in self.buffers])
        # The record's object keeps a name's first place and its last tensor, as a dict did.
        last = {}
        for i, n in enumerate(names):
            last[n] = i
        self.order = None if len(last) == len(names) else list(last.values())
        self.template = ",".join(json.dumps(n).replace("%", "%%") + ':{"checksum":"%s"}' for n in last)

    def matches(self, groups, n_names):
        """Whether `groups` hold the very tensors (by identity: == compares values) these were made of."""
        if n_names != self.n_names or len(groups) != len(self.lists):
            return False
        for g, saved in zip(groups, self.lists):
            current = g["params"]
            if len(current) != len(saved) or not all(map(operator.is_, current, saved)):
                return False
        # A buffer assigned anew (module.running_mean = ...) is another tensor.
        return all(m._buffers.get(k) is t for m, k, t, _ in self.buffers)


class Capture:
    def __init__(self, torch, env):
        self.torch = torch
        self.step_log_path = env.get("REPRUN_AUTO_STEP_LOG")
        self.facts_path = env.get("REPRUN_FRAMEWORK_FILE")
        # A data-parallel program: rank r > 0 writes its step log and facts where these say ({rank}).
        self.rank_step_log = env.get("REPRUN_RANK_STEP_LOG")
        self.rank_facts_path = env.get("REPRUN_RANK_FRAMEWORK_FILE")
        self.dist = None  # (rank, world size, backend) once this process has a default process group
        self.trace_path = env.get("REPRUN_OP_TRACE")
        self.trace_steps = int(env.get("REPRUN_OP_TRACE_STEPS") or 0)
        self.trace_max = int(env.get("REPRUN_OP_TRACE_MAX") or 2_000_000)
        self.save_index = int(env["REPRUN_OP_SAVE"]) if env.get("REPRUN_OP_SAVE") else None
        self.save_dir = env.get("REPRUN_OP_SAVE_DIR")
        self.env = env
        self.fp = Fingerprinter(torch, force_device_method=bool(env.get("REPRUN_FINGERPRINT_DEVICE_METHOD")))
        self.step = 0  # optimizer steps, numbered on from a resumed checkpoint's step
        self.steps_here = 0  # optimizer steps this process made
        self.backward_since_step = False
        # "init" until the training starts: the first training forward (a module in training mode with
        # grad enabled), backward, optimizer step or zero_grad, or the first iteration of a DataLoader.
        # Before it: data set construction, model init, random_split.
        self.phase = "init"
        self.busy = False  # our own tensor work: never traced, never counted
        self.owner = None  # None: undecided; True: this process writes the step log; False: another does
        self.log_fd = None  # the step log, written with os.write: one whole line per write
        self.facts_written = False
        self.last_loss = None
        self.module_stack = []
        self.module_names = {}  # id(module) -> path
        self.roots = []  # keeps named modules alive, so their ids stay theirs
        self.param_names = {}  # id(param) -> name
        self.scanned_gc = False
        self.logged_params = {}  # id(optimizer) -> _LoggedParams, while the optimizer lives
        self.devices = set()
        self.opt_depth = 0
        self.backward_depth = 0
        self.mode = None
        self.failed = False
        self.failed_reason = None  # what stopped the capture, for the facts (framework.capture_stopped)
        self.loss_dtype = None  # of the first loss seen: diff counts the loss's ULPs in it
        self.pid = os.getpid()  # a forked child (a DataLoader worker) inherits the capture: it records nothing
        self.ckpt = CheckpointWatch(self, env)
        self.compiled = False  # the program called torch.compile
        self.compiled_modules = {}  # in a replay: id -> the modules it compiles (kept alive)
        self.compiled_depth = 0  # in a replay: calls of functions it compiles under way
        # torch.compile traces the global module hooks into the compiled code: they return at once
        # there, which torch.compile reads as a constant (torch 2.x; torch 1.13 has no compiler).
        self._compiling = _attr(lambda: torch.compiler.is_compiling) or _attr(lambda: torch._dynamo.is_compiling) \
            or (lambda: False)

    # ---- installation -------------------------------------------------------------------------
    def install(self):
        torch = self.torch
        self._patch_backward()
        self._patch_optimizers()
        self._patch_zero_grad()
        self._patch_init_process_group()
        self._patch_compile()
        self._patch_loader_iter()
        self.ckpt.install()
        mm = torch.nn.modules.module
        # Global module hooks name the modules (and, in a replay, give each op its module); they slow
        # every module call, so outside a replay they are removed after the first step.
        self._global_hooks = [mm.register_module_forward_pre_hook(self._module_pre),
                              mm.register_module_forward_hook(self._module_post)]
        atexit.register(self._at_exit)
        if self.trace_path or self.save_index is not None:
            from .trace import OpTracer

            self.mode = OpTracer(self)
            self.mode.start()

    def _fail(self, what, e):
        if not self.failed:
            self.failed = True
            self.failed_reason = f"{what}: {type(e).__name__}: {e}"
            print(f"reprun: capture stopped ({what}): {type(e).__name__}: {e}", file=sys.stderr, flush=True)

    def _patch_backward(self):
        torch = self.torch
        cap = self
        tensor_backward = torch.Tensor.backward
        autograd_backward = torch.autograd.backward

        def note_loss(t):
            if isinstance(t, torch.Tensor) and t.numel() == 1:
                cap.busy, busy = True, cap.busy
                try:
                    cap.last_loss = t.detach()
                finally:
                    cap.busy = busy

        def wrap(original):
            # Tensor.backward(self, ...) and torch.autograd.backward(tensors, ...): the first argument
            # is the loss (a one-element list of it for the latter); nested calls are one backward.
            @functools.wraps(original)
            def backward(first, *args, **kwargs):
                if cap.backward_depth == 0:
                    note_loss(first[0] if isinstance(first, (list, tuple)) and len(first) == 1 else first)
                    cap.backward_since_step = True
                    if cap._global_hooks and not cap.busy and os.getpid() == cap.pid:
                        cap.ckpt.at_backward()
                cap.backward_depth += 1
                cap.training_starts()  # a functional model: its first backward ends the initialization
                saved, cap.phase = cap.phase, "backward"
                try:
                    return original(first, *args, **kwargs)
                finally:
                    cap.backward_depth -= 1
                    cap.phase = saved

            return backward

        torch.Tensor.backward = wrap(tensor_backward)
        torch.autograd.backward = wrap(autograd_backward)

    def _patch_init_process_group(self):
        """A rank forked from a launcher (torch.multiprocessing with start_method="fork") inherits
        the launcher's capture, which records nothing in another process: it becomes this process's
        own once the process joins a process group. A DataLoader worker never does."""
        dist = getattr(self.torch, "distributed", None)
        init = getattr(dist, "init_process_group", None) if dist is not None else None
        if init is None or getattr(init, "_reprun_wrapped", False):
            return
        cap = self

        @functools.wraps(init)
        def init_process_group(*args, **kwargs):
            result = init(*args, **kwargs)
            if os.getpid() != cap.pid and cap.dist is None and cap.steps_here == 0:
                cap.adopt_fork()
            return result

        init_process_group._reprun_wrapped = True
        dist.init_process_group = init_process_group

    def adopt_fork(self):
        self.pid = os.getpid()
        self.owner = None
        self.log_fd = None
        self.facts_written = False
        if self.mode is not None:
            self.mode.adopt_fork()

    def _patch_optimizers(self):
        Optimizer = self.torch.optim.Optimizer
        cap = self

        def wrap(cls):
            step = cls.__dict__.get("step")
            if step is None or getattr(step, "_reprun_wrapped", False):
                return

            @functools.wraps(step)
            def wrapped_step(opt, *args, **kwargs):
                # A closure (LBFGS, Lightning's training_step) runs the forward and the backward inside
                # step(): its ops are forward (and backward inside backward()), not the update's.
                if args and callable(args[0]):
                    args = (cap._forward_closure(args[0]),) + args[1:]
                elif callable(kwargs.get("closure")):
                    kwargs["closure"] = cap._forward_closure(kwargs["closure"])
                cap.opt_depth += 1
                cap.training_starts()
                saved, cap.phase = cap.phase, "optimizer"
                try:
                    result = step(opt, *args, **kwargs)
                finally:
                    cap.opt_depth -= 1
                    cap.phase = saved
                if cap.opt_depth == 0:
                    cap._after_step(opt)
                return result

            wrapped_step._reprun_wrapped = True
            cls.step = wrapped_step

        def all_subclasses(c):
            for s in c.__subclasses__():
                yield s
                yield from all_subclasses(s)

        for cls in list(all_subclasses(Optimizer)):
            wrap(cls)
        previous = Optimizer.__dict__.get("__init_subclass__")

        @classmethod
        def init_subclass(cls, **kwargs):
            if previous is not None:
                previous.__func__(cls, **kwargs)
            else:
                super(Optimizer, cls).__init_subclass__(**kwargs)
            wrap(cls)

        Optimizer.__init_subclass__ = init_subclass

    def training_starts(self):
        """The end of the initialization phase (see __init__)."""
        if self.phase == "init":
            self.phase = "forward"

    def _patch_loader_iter(self):
        DataLoader = self.torch.utils.data.DataLoader
        iter_ = DataLoader.__dict__.get("__iter__")
        if iter_ is None or getattr(iter_, "_reprun_wrapped", False):
            return
        cap = self

        @functools.wraps(iter_)
        def wrapped(loader):
            cap.training_starts()
            return iter_(loader)

        wrapped._reprun_wrapped = True
        DataLoader.__iter__ = wrapped

    def _forward_closure(self, closure):
        cap = self

        @functools.wraps(closure)
        def forward_closure(*args, **kwargs):
            saved, cap.phase = cap.phase, "forward"
            try:
                return closure(*args, **kwargs)
            finally:
                cap.phase = saved

        return forward_closure

    def _patch_compile(self):
        """Notes that the program calls torch.compile (the facts' "compiled"): its compiled code runs
        kernels the op trace cannot see, so exec replays it with compilation off and says so. In such
        a replay the code the program compiles is marked, so that the trace says which ops run
        compiled in the program's own runs."""
        torch = self.torch
        compile_ = getattr(torch, "compile", None)
        if compile_ is None or getattr(compile_, "_reprun_wrapped", False):
            return
        cap = self

        def mark(target, result):
            if isinstance(target, torch.nn.Module):
                cap.compiled_modules[id(target)] = target
                if isinstance(result, torch.nn.Module):
                    cap.compiled_modules[id(result)] = result
                return result
            if not callable(result):
                return result

            @functools.wraps(result)
            def marked(*args, **kwargs):
                cap.compiled_depth += 1
                try:
                    return result(*args, **kwargs)
                finally:
                    cap.compiled_depth -= 1

            return marked

        @functools.wraps(compile_)
        def wrapped(*args, **kwargs):
            cap.compiled = True
            target = args[0] if args else kwargs.get("model")
            if target is None:  # @torch.compile(mode=...): a decorator to come
                return lambda fn: wrapped(fn, *args[1:], **kwargs)
            result = compile_(*args, **kwargs)
            return mark(target, result) if cap.trace_path else result

        wrapped._reprun_wrapped = True
        torch.compile = wrapped

    def in_compiled(self):
        """In a replay: whether the program is running code it compiles (compilation is off here)."""
        return self.compiled_depth > 0 or (
            bool(self.compiled_modules) and any(id(m) in self.compiled_modules for m in self.module_stack))

    def _patch_zero_grad(self):
        """The ops of Optimizer.zero_grad and Module.zero_grad get a phase of their own: a process
        that just resumed has no gradients yet and runs none where the uninterrupted run zeroes
        them in place (torch 1.13's default), which changes no number."""
        torch = self.torch
        cap = self
        for cls in (torch.optim.Optimizer, torch.nn.Module):
            zero_grad = cls.__dict__.get("zero_grad")
            if zero_grad is None or getattr(zero_grad, "_reprun_wrapped", False):
                continue

            def wrap(original):
                @functools.wraps(original)
                def wrapped(obj, *args, **kwargs):
                    cap.training_starts()
                    saved, cap.phase = cap.phase, "zero_grad"
                    try:
                        return original(obj, *args, **kwargs)
                    finally:
                        cap.phase = saved

                wrapped._reprun_wrapped = True
                return wrapped

            cls.zero_grad = wrap(zero_grad)

    # ---- module paths -------------------------------------------------------------------------
    def _module_pre(self, module, inputs):
        if self._compiling():
            return  # traced by torch.compile: the compiled code must not call into the capture
        if not self.module_stack:
            if id(module) not in self.module_names:
                self._name_root(module)
            if module.training and self.torch.is_grad_enabled():
                self.training_starts()
            if not self.busy and os.getpid() == self.pid and self.ckpt.wants_forwards():
                self.ckpt.at_forward(module, inputs)
        self.module_stack.append(module)

    def _module_post(self, module, inputs, output):
        if self._compiling():
            return
        # Pop down to this module (a module whose forward raised left its entry behind).
        while self.module_stack:
            if self.module_stack.pop() is module:
                break

    def _name_root(self, root):
        # A torch.compile'd module (OptimizedModule) is named as the module it wraps, so that its
        # parameters have the same names compiled or not (not "_orig_mod.0.weight").
        orig = self._unwrapped(root)
        if orig is not root:
            self.module_names.setdefault(id(root), type(orig).__name__)
            root = orig
        self.roots.append(root)
        root_name = type(root).__name__
        for name, m in root.named_modules():
            self.module_names.setdefault(id(m), name or root_name)
        for name, p in root.named_parameters():
            self.param_names.setdefault(id(p), name)

    def buffer_slots(self, params):
        """(module, key, tensor, name) of every buffer of the named modules that hold one of `params`,
        named by module path as the parameters are ("1.running_mean")."""
        ids = {id(p) for p in params}
        out, seen = [], set()
        for root in self.roots:
            root = self._unwrapped(root)
            if not any(id(p) in ids for p in root.parameters()):
                continue
            for path, m in root.named_modules():
                for k, t in m._buffers.items():
                    if isinstance(t, self.torch.Tensor) and id(t) not in seen:
                        seen.add(id(t))
                        out.append((m, k, t, f"{path}.{k}" if path else k))
        return out

    def _unwrapped(self, module):
        """The module a torch.compile'd one (OptimizedModule) wraps, else the module."""
        orig = getattr(module, "_orig_mod", None)
        if isinstance(orig, self.torch.nn.Module) and type(module).__name__ == "OptimizedModule":
            return orig
        return module

    def current_module(self):
        """(path, class name) of the innermost module being called, or ("", "")."""
        if not self.module_stack:
            return "", ""
        m = self.module_stack[-1]
        return self.module_names.get(id(m), ""), type(m).__name__

    def _names_for(self, params):
        if not self.scanned_gc and any(id(p) not in self.param_names for p in params):
            # Models that were never called as modules (functional use): name them from the heap, once.
            self.scanned_gc = True
            import gc

            with warnings.catch_warnings():  # isinstance() on some heap objects warns (torch.distributed.reduce_op)
                warnings.simplefilter("ignore")
                mods = [o for o in gc.get_objects() if isinstance(o, self.torch.nn.Module)]
            children = {id(c) for m in mods for c in m.children()}
            roots = sorted((m for m in mods if id(m) not in children),
                           key=lambda m: -sum(1 for _ in m.parameters()))
            for r in roots:
                if id(r) not in self.module_names:
                    self._name_root(r)
        return [self.param_names.get(id(p)) for p in params]

    # ---- the automatic step log ---------------------------------------------------------------
    def dist_info(self):
        """(rank, world size, backend) when this process has a default process group, else None: a
        launcher, torchrun's agent and DataLoader workers have none (they may inherit RANK from the
        environment, so the environment alone cannot tell)."""
        if self.dist is None:
            try:
                d = getattr(self.torch, "distributed", None)
                if d is not None and d.is_available() and d.is_initialized():
                    self.dist = (int(d.get_rank()), int(d.get_world_size()), str(d.get_backend()))
            except Exception:
                pass
        return self.dist

    def rank_path(self, template):
        """template with this rank's number, its folder made; None for rank 0 or no process group."""
        dist = self.dist_info()
        if dist is None or dist[0] == 0 or not template:
            return None
        path = template.replace("{rank}", str(dist[0]))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def _claim(self):
        """The first process of the program to finish an optimizer step writes the step log; in a
        data-parallel program rank 0 does, and rank r > 0 writes its own (ranks/<r>/)."""
        if self.owner is None:
            self.owner = False
            rank_log = self.rank_path(self.rank_step_log)
            if rank_log is not None:
                self.log_fd = os.open(rank_log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                self.facts_path = self.rank_path(self.rank_facts_path)
                self.owner = True  # of its rank's records
                return self.owner
            if self.dist is not None and self.dist[0] != 0:
                return self.owner  # a rank with nowhere to write: rank 0 is the run's
            if self.step_log_path:
                try:
                    fd = os.open(self.step_log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    self.log_fd = fd
                    self.owner = True
                except FileExistsError:
                    pass
        return self.owner

    def _after_step(self, opt):
        if self.failed or os.getpid() != self.pid:
            return
        self.step += 1
        self.steps_here += 1
        self.backward_since_step = False
        self.busy = True
        try:
            if self.loss_dtype is None and self.last_loss is not None:
                self.loss_dtype = str(self.last_loss.dtype).replace("torch.", "")
            if self._claim():
                self._log_step(opt)
            if not self.facts_written and self.owner:
                self.write_facts()  # the determinism state as it is at the first step
        except Exception as e:
            self._fail(f"step {self.step}", e)
        finally:
            self.busy = False
            self.last_loss = None
        if self.mode is not None:
            self.mode.after_step(self.step)
        elif self._global_hooks and not self.ckpt.wants_forwards():
            self._drop_global_hooks()

    def _drop_global_hooks(self):
        for h in self._global_hooks:
            h.remove()
        self._global_hooks = []
        self.module_stack = []

    def _log_step(self, opt):
        groups = opt.param_groups
        params = self.logged_params.get(id(opt))
        if params is None or params.opt() is not opt or not params.matches(groups, len(self.param_names)):
            params = _LoggedParams(self, opt, groups)
            self.logged_params[id(opt)] = params
        fps = params.fixed.fingerprints()
        self.devices |= params.fixed.devices
        loss = "" if self.last_loss is None else ',"loss":' + _json_number(self.last_loss.item())
        if params.template:
            fps = tuple(fps) if params.order is None else tuple(fps[i] for i in params.order)
            line = '{"step":%d%s,"tensors":{%s}}\n' % (self.step, loss, params.template % fps)
        else:
            line = '{"step":%d%s}\n' % (self.step, loss)
        _write_all(self.log_fd, line.encode())

    # ---- framework facts ----------------------------------------------------------------------
    def determinism_state(self):
        """Each flag, or None where this torch lacks it or reading it fails; reading never warns into
        the user's output (a deprecated flag of torch 2.x warns when read)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._determinism_state()

    def _determinism_state(self):
        torch = self.torch
        attr = _attr
        return {
            "use_deterministic_algorithms": attr(lambda: torch.are_deterministic_algorithms_enabled()),
            "warn_only": attr(lambda: torch.is_deterministic_algorithms_warn_only_enabled()),
            "cudnn_deterministic": attr(lambda: bool(torch.backends.cudnn.deterministic)),
            "cudnn_benchmark": attr(lambda: bool(torch.backends.cudnn.benchmark)),
            "cuda_matmul_allow_tf32": _allow_tf32(torch, "cuda.matmul", "cuda.matmul"),
            "cudnn_allow_tf32": _allow_tf32(torch, "cudnn.conv", "cudnn"),
            "cuda_matmul_fp32_precision": attr(lambda: str(torch.backends.cuda.matmul.fp32_precision)),
            "cudnn_conv_fp32_precision": attr(lambda: str(torch.backends.cudnn.conv.fp32_precision)),
            "float32_matmul_precision": attr(lambda: torch.get_float32_matmul_precision()),
            "intra_op_threads": attr(lambda: torch.get_num_threads()),
            "inter_op_threads": attr(lambda: torch.get_num_interop_threads()),
            "fill_uninitialized_memory": attr(_fill_uninitialized(torch)),
        }

    def facts(self):
        """The facts as they are now, but for the installed distributions (scanning them takes tens
        of milliseconds: they are added at exit, see _at_exit)."""
        torch = self.torch
        attr = _attr
        devices = {}
        for d in sorted(self.devices):
            devices[d] = attr(lambda d=d: torch.cuda.get_device_name(d), None) if d.startswith("cuda") else None
        numpy = sys.modules.get("numpy")
        out = {
            "name": "pytorch",
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "torch_cuda": attr(lambda: torch.version.cuda),
            "cudnn": attr(lambda: torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None),
            "numpy": getattr(numpy, "__version__", None) if numpy is not None else _installed_version("numpy"),
            "cpu": _attr(lambda: cpu_facts(torch)),
            "determinism": self.determinism_state(),
            "devices": devices,
            "steps_seen": self.steps_here,
            "loss_dtype": self.loss_dtype,
            "distributions": None,
        }
        if self.compiled:  # only where the program called torch.compile: other programs' facts are unchanged
            out["compiled"] = True
        if self.dist is not None:  # only where a process group existed: single-process facts are unchanged
            rank, world, backend = self.dist
            out["distributed"] = {"rank": rank, "world_size": world, "backend": backend}
        return out

    def write_facts(self):
        """At the first step: the facts, with the determinism state as the step ran."""
        self.facts_written = True
        self._facts = self.facts()
        if self.facts_path:
            write_json_file(self.facts_path, self._facts, exclusive=True)

    def _at_exit(self):
        if os.getpid() != self.pid:
            return
        try:
            if self.log_fd is not None:
                os.close(self.log_fd)
                self.log_fd = None
            if self.owner is False or not self.facts_path:
                return
            self.busy = True
            facts = getattr(self, "_facts", None) or self.facts()
            facts["distributions"] = facts_entry()
            if self.failed_reason:
                facts["capture_stopped"] = self.failed_reason
            # The owner rewrites its facts; a program that never stepped writes them once.
            write_json_file(self.facts_path, facts, exclusive=not self.facts_written)
        except Exception as e:
            self._fail("exit", e)


def _installed_version(name):
    try:
        import importlib.metadata as md

        return md.version(name)
    except Exception:
        return None


def _attr(get, default=None):
    try:
        return get()
    except Exception:
        return default


def _allow_tf32(torch, new_api, legacy):
    """Whether TF32 is allowed (torch.backends.<legacy>.allow_tf32), never warning or raising into the
    user's program. Torch 2.7 and later also have torch.backends.<new_api>.fp32_precision: where
    that says "tf32" or "ieee" it answers, since reading the legacy flag then warns that it is
    deprecated, or raises that the two APIs were mixed; its "none" leaves the legacy flag in force."""
    def lookup(path):
        obj = torch.backends
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    precision = _attr(lambda: str(lookup(new_api).fp32_precision))
    if precision in ("tf32", "ieee"):
        return precision == "tf32"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _attr(lambda: bool(lookup(legacy).allow_tf32))


def _fill_uninitialized(torch):
    def get():
        try:
            import torch.utils.deterministic as d  # torch >= 2.1
        except ImportError:
            return None
        return bool(d.fill_uninitialized_memory)

    return get
