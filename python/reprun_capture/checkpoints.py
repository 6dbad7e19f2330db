"""Checkpoints and the resume boundary, seen from inside an unmodified PyTorch program.

Every torch.save and torch.load of the program's own processes is recorded in REPRUN_EVENTS, one JSON
line per event (docs/run-format.md, "events.jsonl"): the optimizer step it follows, the path, the
SHA-256 of the bytes written (read back from a path; a file object or BytesIO through a proxy that
hashes its writes) or read, and for a save whether it is a checkpoint (it holds an optimizer's
state_dict or the trained parameters) and what it holds. reprun exec matches loads to saves by
digest: a run that reads another run's checkpoint is an error, never a divergence. Other formats
(safetensors, numpy, pickle without torch.save) are not seen.

Under `reprun exec --vary resume=N`:
- run-1 (REPRUN_BOUNDARY_STEPS=N) fingerprints the state a resume must restore at its first training
  forward (what the program's own seeding gives), at each checkpoint save after a step <= N, and at
  the resume boundary that follows it: the first forward with grad enabled on a module in training
  mode after that step. Between the save and the boundary it notes the first random op it runs;
- the process to be preempted (REPRUN_KILL_AFTER_STEP=N) kills itself with SIGKILL at its first
  training forward after step N, so that a save the program makes right after step N is on disk;
- the resumed process (REPRUN_RESUME_SAVES, the killed process's events) numbers its steps on from
  the step of the checkpoint it loaded, and fingerprints the state at its first training forward.
In a data-parallel job every event carries the process's rank; in run-1 each rank also keeps its
boundary state after every step <= N (rank 0 may save the checkpoint every rank loads); and the job
to be preempted (REPRUN_STOP_RANKS) does not kill itself: each rank reports its pid at its first
training forward ("rank"), then at its first training forward after step N writes "stop" and waits
until reprun, once every rank has stopped, kills the ranks and the launcher at once.

The state: the parameters, each optimizer's tensors and step counts and its param_groups
hyperparameters, each LR scheduler's state, each GradScaler's scale, torch's CPU and CUDA generators,
the generators of DataLoaders and samplers, numpy's and Python's global generators, and the batch
(the inputs of the boundary forward). Each is kept as a digest and a few readable details.
"""

import functools
import hashlib
import json
import os
import signal
import sys
import time
import warnings
import weakref

from .imports import after_import
from .random_ops import draws, is_seeded

def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _text_digest(obj):
    return _sha(json.dumps(obj, sort_keys=True, default=repr).encode())[:32]


def _plain_value(v):
    """A hyperparameter or scheduler value as JSON can hold it (tensors as lists, the rest as repr)."""
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, float):
        return float.__repr__(v)
    if isinstance(v, (list, tuple)):
        return [_plain_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain_value(x) for k, x in v.items()}
    tolist = getattr(v, "tolist", None)
    if callable(tolist):
        try:
            return _plain_value(tolist())
        except Exception:
            pass
    return type(v).__name__


class _HashingWriter:
    """A file object's stand-in for torch.save: every write is hashed, then passed on."""

    def __init__(self, f):
        self._f = f
        self._h = hashlib.sha256()
        self.bytes = 0

    def write(self, data):
        self._h.update(data)
        self.bytes += len(memoryview(data).cast("B"))
        return self._f.write(data)

    def digest(self):
        return self._h.hexdigest()

    def __getattr__(self, name):
        return getattr(self._f, name)


def _group_started_by(parent):
    """The process group of the ancestor of this process (or this process) whose parent is `parent`:
    the group reprun exec made for the program it started; None when no ancestor is its child."""
    pid = os.getpid()
    for _ in range(64):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2:].split()  # after "pid (comm) ": state ppid pgrp ...
            ppid, pgrp = int(fields[1]), int(fields[2])
        except (OSError, ValueError, IndexError):
            return None
        if ppid == parent:
            return pgrp
        if ppid <= 1:
            return None
        pid = ppid
    return None


class CheckpointWatch:
    def __init__(self, cap, env):
        self.cap = cap
        self.torch = cap.torch
        self.events_path = env.get("REPRUN_EVENTS")
        self.boundary_steps = int(env.get("REPRUN_BOUNDARY_STEPS") or 0)
        self.kill_after = int(env["REPRUN_KILL_AFTER_STEP"]) if env.get("REPRUN_KILL_AFTER_STEP") else None
        # Under reprun exec: its pid, the parent of the process it started for the program.
        self.kill_group = int(env["REPRUN_KILL_GROUP"]) if (env.get("REPRUN_KILL_GROUP") or "").isdigit() else None
        self.resume_saves = self._read_saves(env.get("REPRUN_RESUME_SAVES"))
        # A data-parallel job under --vary resume=N: each rank stops (waits) at its first training
        # forward after step N and says so in the events file; reprun kills every rank and the
        # launcher at once when all have stopped (REPRUN_STOP_RANKS is set for the job to be killed).
        self.stop_ranks = bool(env.get("REPRUN_STOP_RANKS"))
        self.rank_reported = False
        self.boundaries = set()  # run-1 of a data-parallel job: the steps whose boundary state is written
        self.fd = None
        self.optimizers = []  # weakrefs, in creation order
        self.schedulers = []
        self.scalers = []
        self.loaders = []  # (weakref to a DataLoader, the line that made it)
        self.first_done = not self.boundary_steps  # run-1 under --vary resume: the state seeding gives
        self.pending = None  # run-1: the step of a checkpoint save whose boundary is still to come
        self.recorded = set()  # run-1: steps whose save state was recorded
        self.resumed_from = None  # the resumed process: the step of the checkpoint it loaded
        self.resume_boundary_done = not self.resume_saves
        self.draws = {}  # run-1, between a save and its boundary: the first random op on "default" and "own" generators
        self.draw_mode = None

    # ---- what is wanted -----------------------------------------------------------------------
    def wants_forwards(self):
        """Whether module forwards must still be watched (the global hooks stay while they must)."""
        mode = self.cap.mode
        return (not self.first_done or self.pending is not None or not self.resume_boundary_done
                or self.kill_after is not None
                or (self.boundary_steps and self.cap.step <= self.boundary_steps)
                or (mode is not None and not getattr(mode, "recording", True)))

    # ---- installation -------------------------------------------------------------------------
    def install(self):
        torch = self.torch
        self._patch_save_load()
        self._track_init(torch.optim.Optimizer, self.optimizers)
        sched = torch.optim.lr_scheduler
        for name in ("LRScheduler", "_LRScheduler", "ReduceLROnPlateau"):
            cls = getattr(sched, name, None)
            if cls is not None:
                self._track_init(cls, self.schedulers)
        for mod_name in ("amp", "cuda.amp"):
            mod = torch
            for part in mod_name.split("."):
                mod = getattr(mod, part, None)
            cls = getattr(mod, "GradScaler", None) if mod is not None else None
            if cls is not None:
                self._track_init(cls, self.scalers)
        self._track_loaders()
        if self.resume_saves:
            self._patch_restores()

    def _track_init(self, cls, into):
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_reprun_wrapped", False):
            return

        @functools.wraps(init)
        def wrapped(obj, *args, **kwargs):
            init(obj, *args, **kwargs)
            try:
                if not any(r() is obj for r in into):
                    into.append(weakref.ref(obj))
            except Exception:
                pass

        wrapped._reprun_wrapped = True
        cls.__init__ = wrapped

    def _track_loaders(self):
        DataLoader = self.torch.utils.data.DataLoader
        init = DataLoader.__init__
        watch = self

        @functools.wraps(init)
        def wrapped(loader, *args, **kwargs):
            init(loader, *args, **kwargs)
            try:  # named by file name and line: a state's name must be the same in every process
                line = watch._user_line()
                watch.loaders.append((weakref.ref(loader), os.path.basename(line) if line else ""))
            except Exception:
                pass

        DataLoader.__init__ = wrapped

    def _user_line(self):
        from .trace import _SourceLines

        lines = getattr(self, "_lines", None)
        if lines is None:
            lines = self._lines = _SourceLines(self.torch)
        return lines.find(sys._getframe(2))[1]

    # ---- the program's restores of the global generators -------------------------------------
    def _patch_restores(self):
        """The resumed process: each module-level call that sets a global generator's state
        (torch.set_rng_state, torch.cuda.set_rng_state(_all), np.random.set_state, random.setstate)
        is recorded with the state it set, so that a generator the program restored is told from one
        it did not, even when the number of draws before the boundary differs. A torch.Generator's
        own set_state is a C method, which cannot be patched: its restores are not seen."""
        torch = self.torch
        import random

        self._wrap_setter(torch, "set_rng_state", "torch.set_rng_state", self._torch_cpu_states)
        self._wrap_setter(torch.random, "set_rng_state", "torch.set_rng_state", self._torch_cpu_states)
        cuda = getattr(torch, "cuda", None)
        for name in ("set_rng_state", "set_rng_state_all"):
            self._wrap_setter(cuda, name, "torch.cuda." + name, self._torch_cuda_states)
            self._wrap_setter(getattr(cuda, "random", None), name, "torch.cuda." + name, self._torch_cuda_states)
        self._wrap_setter(random, "setstate", "random.setstate", self._python_states)
        after_import("numpy.random", self._patch_numpy)

    def _patch_numpy(self, np_random):
        self._wrap_setter(np_random, "set_state", "np.random.set_state", self._numpy_states)

    def _wrap_setter(self, module, name, call, states):
        setter = getattr(module, name, None) if module is not None else None
        if setter is None or getattr(setter, "_reprun_wrapped", False):
            return
        watch = self

        @functools.wraps(setter)
        def wrapped(*args, **kwargs):
            result = setter(*args, **kwargs)
            if not watch.resume_boundary_done and watch.active():
                watch.cap.busy, busy = True, watch.cap.busy
                try:
                    where = watch._user_line()
                    for gen, digest in states().items():
                        watch.write({"event": "restore", "step": watch.cap.step, "generator": gen, "digest": digest,
                                     "call": call, "where": where})
                except Exception as e:
                    watch.cap._fail(call, e)
                finally:
                    watch.cap.busy = busy
            return result

        wrapped._reprun_wrapped = True
        try:
            setattr(module, name, wrapped)
        except Exception:
            pass

    # The global generators' states, digested as the boundary table digests them.
    def _torch_cpu_states(self):
        return {"torch CPU generator": _sha(bytes(self.torch.get_rng_state().numpy()))[:32]}

    def _torch_cuda_states(self):
        torch = self.torch
        out = {}
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                for d, st in enumerate(torch.cuda.get_rng_state_all()):
                    out[f"torch CUDA generator {d}"] = _sha(bytes(st.numpy()))[:32]
        except Exception:
            pass
        return out

    def _numpy_states(self):
        numpy = sys.modules.get("numpy")
        if numpy is None:
            return {}
        try:
            st = numpy.random.get_state()
        except Exception:
            return {}
        return {"numpy global generator": _sha(st[1].tobytes() + repr((st[0], st[2], st[3], st[4])).encode())[:32]}

    def _python_states(self):
        import random

        return {"Python random": _text_digest(random.getstate())}

    # ---- torch.save and torch.load ------------------------------------------------------------
    def _patch_save_load(self):
        torch = self.torch
        watch = self
        save, load = torch.save, torch.load

        @functools.wraps(save)
        def reprun_save(obj, f, *args, **kwargs):
            if not watch.active():
                return save(obj, f, *args, **kwargs)
            where = watch._user_line()
            path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else None
            writer = None if path is not None else _HashingWriter(f)
            result = save(obj, f if writer is None else writer, *args, **kwargs)
            watch.cap.busy, busy = True, watch.cap.busy
            try:
                watch.on_save(obj, path, writer, where, f)
            except Exception as e:
                watch.cap._fail("torch.save", e)
            finally:
                watch.cap.busy = busy
            return result

        @functools.wraps(load)
        def reprun_load(f, *args, **kwargs):
            if not watch.active():
                return load(f, *args, **kwargs)
            watch.cap.busy, busy = True, watch.cap.busy
            try:
                event = watch.before_load(f, watch._user_line())
            except Exception as e:
                watch.cap._fail("torch.load", e)
                event = None
            finally:
                watch.cap.busy = busy
            result = load(f, *args, **kwargs)
            if event is not None:
                watch.cap.busy, busy = True, watch.cap.busy
                try:
                    event["holds"] = sorted(watch._holds(result))
                    watch.after_load(event)
                except Exception as e:
                    watch.cap._fail("torch.load", e)
                finally:
                    watch.cap.busy = busy
            return result

        torch.save = reprun_save
        torch.load = reprun_load
        # Modules that took `from torch import save` before the capture was installed keep theirs;
        # torch.serialization's own names are what most code reaches.
        torch.serialization.save = reprun_save
        torch.serialization.load = reprun_load

    def active(self):
        cap = self.cap
        return not cap.failed and os.getpid() == cap.pid and not cap.busy

    def on_save(self, obj, path, writer, where, f):
        if path is not None:
            with open(path, "rb") as fh:
                data = fh.read()
            digest, size = _sha(data), len(data)
        else:
            digest, size = writer.digest(), writer.bytes
        holds = self._holds(obj)
        kind = "checkpoint" if ("optimizer" in holds or "parameters" in holds) else "other"
        cap = self.cap
        event = {"event": "save", "step": cap.step, "kind": kind, "holds": sorted(holds),
                 "path": path if path is not None else self._object_name(f),
                 "file": os.path.abspath(path) if path is not None else "", "sha256": digest, "bytes": size,
                 "where": where}
        if cap.backward_since_step:
            event["after_backward"] = True  # saved between backward() and the optimizer's step()
        self.write(event)
        if kind == "checkpoint" and self.boundary_steps and cap.step <= self.boundary_steps:
            if cap.step not in self.recorded:
                self.recorded.add(cap.step)
                self.write({"event": "state", "at": "save", "step": cap.step, "where": where,
                            "states": self.snapshot()})
            self.pending = cap.step
            self._watch_draws()

    def _object_name(self, f):
        name = getattr(f, "name", None)
        return name if isinstance(name, str) else f"<{type(f).__name__}>"

    def before_load(self, f, where):
        file = ""
        if isinstance(f, (str, os.PathLike)):
            path = os.fspath(f)
            file = os.path.abspath(path)
            with open(path, "rb") as fh:
                data = fh.read()
        else:
            path = self._object_name(f)
            try:
                pos = f.tell()
                data = f.read()
                f.seek(pos)
            except Exception:
                data = None
        return {"event": "load", "step": self.cap.step, "path": path, "file": file,
                "sha256": _sha(data) if data is not None else "", "bytes": len(data) if data is not None else 0,
                "where": where}

    def after_load(self, event):
        cap = self.cap
        step = self.resume_saves.get(event["sha256"]) if event["sha256"] else None
        if step is not None and cap.steps_here == 0:
            # The resumed process loaded the killed one's checkpoint before its first step: its
            # steps go on from there.
            event["resumes_step"] = step
            self.resumed_from = step
            cap.step = step
        self.write(event)

    def _holds(self, obj):
        """What a saved object holds: optimizer, parameters, scheduler, scaler, generator."""
        torch = self.torch
        params = {}
        for r in self.optimizers:
            opt = r()
            if opt is not None:
                for g in opt.param_groups:
                    for p in g["params"]:
                        if isinstance(p, torch.Tensor):
                            try:
                                params[p.data_ptr()] = p
                            except Exception:
                                pass
        names = set(self.cap.param_names.values())
        holds = set()
        seen = set()

        def visit(x, depth):
            if depth > 6 or id(x) in seen:
                return
            seen.add(id(x))
            if isinstance(x, torch.Tensor):
                try:
                    if x.layout == torch.strided and x.data_ptr() in params:
                        holds.add("parameters")
                    elif x.dtype == torch.uint8 and x.dim() == 1 and x.numel() in (5056, 16):
                        holds.add("generator")  # torch.get_rng_state() (CPU: 5056 bytes; CUDA: 16)
                except Exception:
                    pass
                return
            if isinstance(x, torch.nn.Module):
                if any(p.data_ptr() in params for p in x.parameters()):
                    holds.add("parameters")
                return
            if isinstance(x, torch.optim.Optimizer):
                holds.add("optimizer")
                return
            if isinstance(x, dict):
                keys = set(x.keys())
                if {"state", "param_groups"} <= keys:
                    holds.add("optimizer")
                if {"last_epoch", "base_lrs"} <= keys:
                    holds.add("scheduler")
                if {"scale", "growth_factor"} <= keys:
                    holds.add("scaler")
                # A state_dict: tensors under the parameters' names (a copy, or loaded from a file).
                if any(isinstance(k, str) and (k in names or k.endswith((".weight", ".bias")))
                       and isinstance(v, torch.Tensor) for k, v in x.items()):
                    holds.add("parameters")
                for v in x.values():
                    visit(v, depth + 1)
            elif isinstance(x, (list, tuple)):
                numpy_state = len(x) == 5 and x[0] == "MT19937"  # numpy.random.get_state()
                python_state = len(x) == 3 and isinstance(x[0], int) and isinstance(x[1], tuple)  # random.getstate()
                if numpy_state or python_state:
                    holds.add("generator")
                    return
                for v in x:
                    visit(v, depth + 1)

        visit(obj, 0)
        return holds

    # ---- the events file ----------------------------------------------------------------------
    def write(self, event):
        if not self.events_path:
            return
        event["pid"] = os.getpid()
        dist = self.cap.dist_info()
        if dist is not None:
            event["rank"] = dist[0]
        if self.fd is None:
            self.fd = os.open(self.events_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        data = (json.dumps(event, separators=(",", ":")) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]

    def _read_saves(self, path):
        """digest -> step of the checkpoint saves in the killed process's events."""
        saves = {}
        if not path:
            return saves
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("event") == "save" and e.get("kind") == "checkpoint" and e.get("sha256"):
                        saves[e["sha256"]] = e["step"]
        except OSError:
            pass
        return saves

    # ---- forwards: the first one, the boundary, the kill --------------------------------------
    def at_forward(self, module, inputs):
        """A module called at the top level (not inside another's forward)."""
        torch = self.torch
        if not module.training or not torch.is_grad_enabled():
            return
        cap = self.cap
        if not self.first_done:
            self.first_done = True
            self.write({"event": "state", "at": "first", "step": cap.step, "states": self.snapshot(inputs)})
        if self.pending is not None:
            if cap.step == self.pending:
                self.boundaries.add(cap.step)
                self.write({"event": "state", "at": "boundary", "step": cap.step, "draws": self.draws,
                            "states": self.snapshot(inputs)})
            self.pending = None
            self._stop_draws()
        if (self.boundary_steps and 1 <= cap.step <= self.boundary_steps and cap.step not in self.boundaries
                and cap.dist_info() is not None):
            # A rank of a data-parallel job: rank 0 may save the checkpoint every rank loads, so each
            # rank keeps its own boundary state after every step a resume could come back to.
            self.boundaries.add(cap.step)
            self.write({"event": "state", "at": "boundary", "step": cap.step, "draws": {},
                        "states": self.snapshot(inputs)})
        if not self.resume_boundary_done:
            self.resume_boundary_done = True
            self.write({"event": "state", "at": "resumed", "step": cap.step, "resumed_from": self.resumed_from,
                        "states": self.snapshot(inputs)})
        mode = cap.mode
        if mode is not None and not getattr(mode, "recording", True) and cap.step >= mode.trace_from:
            mode.start_recording()
        dist = cap.dist_info() if self.stop_ranks else None
        if dist is not None and not self.rank_reported:
            self.rank_reported = True  # so that reprun can end this process even when it never stops
            self.write({"event": "rank", "step": cap.step, "world_size": dist[1]})
        if self.kill_after is not None and cap.step >= self.kill_after:
            # Preempted: after the boundary state of a save right after step N is written.
            sys.stdout.flush()
            sys.stderr.flush()
            if dist is not None:
                # One rank of a job: it waits here, before DDP's broadcast and any collective of the
                # next step, until reprun kills the whole job at once.
                self.write({"event": "stop", "step": cap.step, "world_size": dist[1]})
                while True:
                    time.sleep(3600)
            self.kill_program()

    def kill_program(self):
        """SIGKILL, as a preemption kills a job: under reprun exec (REPRUN_KILL_GROUP, exec's pid) the
        process group exec made for the program, so that a shell script or a launcher (torchrun) that
        started this process dies with it rather than going on, or exiting 137 or 1 as if it had
        failed; then this process's own group (torchrun starts each worker in a session of its own,
        and a DataLoader's workers are in it); then this process."""
        if self.kill_group is not None:
            own = os.getpgid(0)
            program = _group_started_by(self.kill_group)
            for group in (program, own):
                try:
                    # Never exec's own group: a process outside the group exec made would be in it.
                    if group is not None and group > 1 and group != os.getpgid(self.kill_group):
                        os.killpg(group, signal.SIGKILL)
                except OSError:
                    pass
        os.kill(os.getpid(), signal.SIGKILL)

    def at_backward(self):
        """A backward with no training forward of a module seen since the last step (a functional
        model): the boundary (or the kill) is here, without a batch."""
        if self.wants_forwards():
            self.at_forward(_NoModule, ())

    # ---- draws between a save and its boundary ------------------------------------------------
    def _watch_draws(self):
        if self.draw_mode is not None:
            return
        self.draws = {}
        try:
            from torch.utils._python_dispatch import TorchDispatchMode
        except ImportError:
            return
        watch = self

        class _ReprunDraws(TorchDispatchMode):
            supports_higher_order_operators = True

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if len(watch.draws) >= 2 or watch.cap.busy or not is_seeded(func):
                    return func(*args, **kwargs)
                import torch
                leaves = list(args) + list(kwargs.values())
                tensors = [x for x in leaves if isinstance(x, torch.Tensor)]
                out, drew = draws(torch, func, leaves, tensors, kwargs, lambda: func(*args, **kwargs))
                which = "default" if kwargs.get("generator") is None else "own"
                if drew and which not in watch.draws:
                    watch.draws[which] = {"op": ".".join(str(func).split(".")[:2]),
                                          "where": watch._user_line_from(sys._getframe(1))}
                return out

        self.draw_mode = _ReprunDraws()
        self.draw_mode.__enter__()

    def _user_line_from(self, frame):
        from .trace import _SourceLines

        lines = getattr(self, "_lines", None)
        if lines is None:
            lines = self._lines = _SourceLines(self.torch)
        return lines.find(frame)[1]

    def _stop_draws(self):
        if self.draw_mode is not None:
            try:
                self.draw_mode.__exit__(None, None, None)
            except Exception:
                pass
            self.draw_mode = None

    # ---- the state ----------------------------------------------------------------------------
    def snapshot(self, inputs=None):
        """{name: {"kind": ..., "digest": ..., "detail": {...}}} of the state a resume must restore."""
        cap = self.cap
        cap.busy, busy = True, cap.busy
        try:
            return self._snapshot(inputs)
        finally:
            cap.busy = busy

    def _shuffles_from_torch(self):
        """The lines of the DataLoaders that shuffle without a generator of their own: each epoch's
        iterator draws its order's seed from torch's global generator when it starts."""
        out = []
        for r, line in self.loaders:
            loader = r()
            if loader is None or getattr(loader, "generator", None) is not None:
                continue
            samplers = [getattr(loader, "sampler", None), getattr(getattr(loader, "batch_sampler", None), "sampler", None)]
            if any(type(sm).__name__ == "RandomSampler" and getattr(sm, "generator", None) is None for sm in samplers):
                out.append(line)
        return out

    def _other_modules(self, params):
        """(name, module) of the modules alive now that hold tensors and are not part of the model the
        optimizers train (an EMA copy, a teacher): the tops of the module trees on the heap. Named by
        the program's global variable that holds one ("ema (AveragedModel)"), else by class, so that
        every process names it alike."""
        import gc

        torch = self.torch
        with warnings.catch_warnings():  # isinstance() on some heap objects warns
            warnings.simplefilter("ignore")
            mods = [o for o in gc.get_objects() if isinstance(o, torch.nn.Module)]
        children = {id(c) for m in mods for c in m.children()}
        trained = {id(p) for p in params}
        main = getattr(sys.modules.get("__main__"), "__dict__", {})
        by_id = {}
        for k, v in list(main.items()):
            if isinstance(v, torch.nn.Module) and not k.startswith("_"):
                by_id.setdefault(id(v), k)
        out, taken = [], {}
        for m in mods:
            if id(m) in children or type(m).__name__ == "OptimizedModule":
                continue
            try:
                tensors = list(m.parameters()) + list(m.buffers())
            except Exception:
                continue
            if not tensors or any(id(t) in trained for t in tensors):
                continue
            cls = type(m).__name__
            name = f"{by_id[id(m)]} ({cls})" if id(m) in by_id else f"module {cls}"
            taken[name] = taken.get(name, 0) + 1
            out.append((name if taken[name] == 1 else f"{name} #{taken[name]}", m))
        return sorted(out, key=lambda nm: nm[0])

    def _snapshot(self, inputs):
        torch = self.torch
        fp = self.cap.fp
        out = {}

        def add(name, kind, digest, detail=None):
            out[name] = {"kind": kind, "digest": digest, "detail": detail or {}}

        optimizers = [o for o in (r() for r in self.optimizers) if o is not None]
        params, names = [], []
        for opt in optimizers:
            for g in opt.param_groups:
                for p in g["params"]:
                    if isinstance(p, torch.Tensor) and all(p is not q for q in params):
                        params.append(p)
        names = [n or f"param.{i}" for i, n in enumerate(self.cap._names_for(params))]
        fps = fp.many(params)
        add("parameters", "parameters", _text_digest(fps), {"tensors": len(params), "fingerprints": dict(zip(names, fps))})
        buffers = self.cap.buffer_slots(params)
        if buffers:
            bfps = fp.many([t for _, _, t, _ in buffers])
            add("buffers", "buffers", _text_digest(bfps),
                {"tensors": len(buffers), "fingerprints": dict(zip((n for _, _, _, n in buffers), bfps))})
        for name, module in self._other_modules(params):
            tensors = dict(module.state_dict(keep_vars=True))
            tensors = {k: v for k, v in tensors.items() if isinstance(v, torch.Tensor)}
            mfps = fp.many(list(tensors.values()))
            add(name, "module", _text_digest(mfps), {"tensors": len(tensors), "fingerprints": dict(zip(tensors, mfps))})
        by_id = {id(p): n for p, n in zip(params, names)}
        for i, opt in enumerate(optimizers):
            label = f"optimizer {i} ({type(opt).__name__})"
            items, tensors, keys = {}, [], []
            for p, st in opt.state.items():
                for k, v in st.items():
                    key = f"{by_id.get(id(p), '?')}.{k}"
                    if isinstance(v, torch.Tensor) and v.numel() > 1:
                        tensors.append(v)
                        keys.append(key)
                    else:
                        items[key] = _plain_value(v)
            for k, f in zip(keys, fp.many(tensors)):
                items[k] = f
            steps = sorted({v for k, v in items.items() if k.endswith(".step")}, key=str)
            add(label + ": state", "optimizer", _text_digest(items),
                {"entries": len(items), "steps": steps[:3], "fingerprints": items})
            groups = [{k: _plain_value(v) for k, v in g.items() if k != "params"} for g in opt.param_groups]
            add(label + ": hyperparameters", "hyperparameters", _text_digest(groups), {"param_groups": groups})
        for i, s in enumerate(o for o in (r() for r in self.schedulers) if o is not None):
            try:
                state = {k: _plain_value(v) for k, v in s.state_dict().items() if k not in ("optimizer",)}
            except Exception:
                state = {k: _plain_value(v) for k, v in vars(s).items() if k != "optimizer"}
            detail = {k: state[k] for k in ("last_epoch", "_last_lr", "_step_count") if k in state}
            add(f"scheduler {i} ({type(s).__name__})", "scheduler", _text_digest(state), detail)
        for i, sc in enumerate(o for o in (r() for r in self.scalers) if o is not None):
            try:
                state = _plain_value(sc.state_dict())
            except Exception:
                state = {}
            add(f"GradScaler {i}", "scaler", _text_digest(state), state if isinstance(state, dict) else {})
        for name, digest in {**self._torch_cpu_states(), **self._torch_cuda_states()}.items():
            add(name, "generator", digest)
        seen = set()
        for r, line in self.loaders:
            loader = r()
            if loader is None:
                continue
            where = f" ({line})" if line else ""
            sampler = getattr(loader, "sampler", None)
            batch_sampler = getattr(loader, "batch_sampler", None)
            for what, gen in (("DataLoader generator", getattr(loader, "generator", None)),
                              ("sampler generator", getattr(sampler, "generator", None)),
                              ("batch sampler generator",
                               getattr(getattr(batch_sampler, "sampler", None), "generator", None))):
                if isinstance(gen, torch.Generator) and id(gen) not in seen:
                    seen.add(id(gen))
                    add(what + where, "generator", _sha(bytes(gen.get_state().numpy()))[:32])
            epoch = getattr(sampler, "epoch", None)
            if isinstance(epoch, int) and hasattr(sampler, "set_epoch"):
                detail = {"epoch": epoch}
                for key, attr in (("seed", "seed"), ("replicas", "num_replicas"), ("rank", "rank")):
                    v = getattr(sampler, attr, None)
                    if isinstance(v, int):
                        detail[key] = v  # a DistributedSampler's: its shuffle's seed and its share of the data
                add("sampler epoch" + where, "data", _text_digest(epoch), detail)
        for name, digest in {**self._numpy_states(), **self._python_states()}.items():
            add(name, "generator", digest)
        if inputs is not None and inputs != ():
            from torch.utils._pytree import tree_flatten

            leaves, _ = tree_flatten(inputs)
            tensors = [x for x in leaves if isinstance(x, torch.Tensor)]
            if tensors:
                bfps = fp.many(tensors)
                add("batch", "batch", _text_digest(bfps), {"tensors": len(tensors), "shapes": [list(t.shape) for t in tensors],
                                                           "shuffles_from_torch": self._shuffles_from_torch()})
        return out


class _NoModuleType:
    training = True


_NoModule = _NoModuleType()
