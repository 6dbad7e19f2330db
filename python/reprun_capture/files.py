"""The files a Python process opens, and the line that opened each: an audit hook (sys.addaudithook)
armed by reprun's sitecustomize in every Python process of a program run by `reprun exec`, whether
or not it imports torch. It writes py-files.log (REPRUN_PY_FILES_LOG; docs/run-format.md), one line
per event with one os.write to a file opened O_APPEND, so a forked process (a DataLoader worker)
writes its own lines beside its parent's:

    PID <tab> EVENT <tab> MODE <tab> WHERE <tab> PATH

EVENT is open (MODE as open() got it, WHERE the program's file:line), listdir (os.listdir,
os.scandir), prefix (a folder of the interpreter's own: its standard library and site-packages,
written at start), start (a process forked from one armed: its opens are recorded too) or module
(at start, the script Python runs; at exit, the file of each module the process imported whose
read no open recorded: those imported before this hook, extension modules, other loaders' than the
import system's own source and bytecode loaders; a shared library loaded by its path through
ctypes, as it loads it).
The preload library records every
process's opens, Python's or not; this adds the program's line. Where the preload library is loaded
it also hands the line of each open to its own record of it, with an audit hook in C
(preload/py_audit.c): cheaper than a Python call and a second write at every open. arm() asks for it
with the audit event "reprun.files.arm"; when it answers, this hook leaves opens to it and records
only listings, chdir and ctypes.dlopen, called by the hook in C for those events alone (no audit
hook in Python then: it would run at each of the interpreter's events, 10,000 in `import torch`).
Nothing here ever raises into the program: a failure to record stops recording, silently.
"""

import os
import sys

_EVENTS = frozenset(("open", "os.listdir", "os.scandir", "os.chdir", "ctypes.dlopen"))
_NATIVE_EVENTS = frozenset(("os.listdir", "os.scandir", "os.chdir", "ctypes.dlopen"))  # opens: the hook in C
_events = _EVENTS
# fd: the log; head: "PID\t" of this process (renewed in a forked child); dir: the current directory
# for relative paths, None once the program changes it (the event comes before the change: it is read
# again at the next open); cwd: the directory at start with a separator, cut from the program's file
# names.
_state = {"fd": None, "head": "", "skip": (), "stdlib": (), "cwd": "", "dir": None, "busy": False,
          "before": frozenset()}
# The loaders whose reads of a module's file the import system makes itself, in its own frames:
# recorded as they happen once arm() has run (set there).
_SOURCE_LOADERS = ()


def _escape(path):
    if path.isprintable() and "\\" not in path:  # nothing to escape (the usual path): no loop over it
        return path
    out = []
    for ch in path:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif o < 0x20 or o == 0x7F:
            out.append("\\x%02x" % o)
        else:
            out.append(ch)
    return "".join(out)


def _write(event, mode, where, path):
    fd = _state["fd"]
    if fd is None:
        return
    line = "%s%s\t%s\t%s\t%s\n" % (_state["head"], event, mode, where, _escape(path))
    os.write(fd, line.encode("utf-8", "surrogateescape"))


def _where(frame):
    skip, cwd = _state["skip"], _state["cwd"]
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<") and not name.startswith(skip):
            if name.startswith(cwd):
                name = name[len(cwd):]
            return "%s:%d" % (name, frame.f_lineno)
        frame = frame.f_back
    return "-"


def _hook(event, args):
    if event not in _events or _state["busy"]:
        return
    _state["busy"] = True
    try:
        if event == "os.chdir":
            _state["dir"] = None
            return
        path = args[0] if args else None
        if event == "ctypes.dlopen":
            # A shared library the program loads by its path (ctypes.CDLL("./libop.so"),
            # torch.ops.load_library): code it runs, as a module is. By name alone ("libc.so.6"),
            # or none: the system's search, not a file of the program's.
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not isinstance(path, str) or "/" not in path:
                return
        if isinstance(path, int):
            if event == "open":  # an open of a file descriptor: no path
                return
            # A listing through a folder's descriptor (os.scandir(fd), os.listdir(fd): os.fwalk's):
            # the folder the descriptor is open on.
            try:
                path = os.readlink("/proc/self/fd/%d" % path)
            except OSError:
                return
        if path is None:
            path = "."
        if type(path) is not str:
            path = os.fsdecode(path)
        if not path.startswith("/"):
            # Joined, not normalized: reprun reads "." and ".." in both logs' paths as Python's
            # normpath does (files_log.cpp), which costs no call here at every open.
            base = _state["dir"]
            if base is None:
                base = _state["dir"] = os.getcwd().rstrip("/") + "/"
            path = base + path
        try:
            frame = sys._getframe(1)
        except ValueError:  # no Python frame: the interpreter opening the script itself
            frame = None
        if event == "ctypes.dlopen":
            _write("module", "-", _where(frame), path)
            return
        if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
            # The import system: a module's source or .pyc (the module, not a read of the
            # program's), or the listing of a folder on sys.path (its finder's cache).
            if event == "open":
                _write("module", "-", _where(frame), path)
            return
        if event == "open":
            mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
            _write("open", mode, _where(frame), path)
            return
        # A listing is the program's when its own code asked for it, directly or through the standard
        # library (glob, os.walk, pathlib); a package's own (torch looking for its CUDA libraries on
        # sys.path) and the interpreter's are not.
        stdlib = _state["stdlib"]
        while frame is not None and (frame.f_code.co_filename.startswith(stdlib) or
                                     frame.f_code.co_filename.startswith("<")):
            frame = frame.f_back
        if frame is None or frame.f_code.co_filename.startswith(_state["skip"]):
            return
        _write("listdir", "-", _where(frame), path)
    except Exception:
        _state["fd"] = None  # stop recording, never raise into the program
    finally:
        _state["busy"] = False


def _at_exit():
    try:
        _state["busy"] = True
        fd = _state["fd"]
        if fd is None:
            return
        lines = []
        before = _state["before"]
        recorded = _SOURCE_LOADERS
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if not isinstance(path, str):
                continue
            # A module the import system read from its source or .pyc after arm(): that open is
            # recorded already, as the import system's (the preload library's "import" line, or a
            # module line of _hook's). Listed here: the modules imported before, extension modules
            # (dlopen, which no hook sees) and those of other loaders (zipimport, pytest's rewriter).
            if name not in before:
                spec = getattr(module, "__spec__", None)
                if type(getattr(spec, "loader", None)) in recorded:
                    continue
            # Some objects in sys.modules carry a __file__ that is no file (torch._classes: "_classes.py").
            if os.path.isfile(path):
                lines.append("%smodule\t-\t-\t%s\n" % (_state["head"], _escape(os.path.abspath(path))))
        data = "".join(lines).encode("utf-8", "surrogateescape")
        while data:  # one write (O_APPEND: whole beside other processes' lines), unless the disk is full
            data = data[os.write(fd, data):]
    except Exception:
        pass


def _forked():
    _state["head"] = "%d\t" % os.getpid()
    try:
        _write("start", "-", "-", "-")
    except Exception:
        _state["fd"] = None


def arm(log_path):
    """Installs the hook once per interpreter (a forked child inherits it and its fd)."""
    if _state["fd"] is not None:
        return
    import atexit
    import site

    _state["fd"] = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    _state["head"] = "%d\t" % os.getpid()
    # The interpreter's folders: its standard library (where os.py is), the site-packages folders
    # site.py put on sys.path, and each prefix's lib/. (Not sysconfig: importing it and expanding
    # its schemes cost milliseconds at every start of every Python process of the program.)
    stdlib = os.path.dirname(os.path.abspath(os.__file__))
    prefixes = {stdlib}
    try:
        prefixes.update(os.path.abspath(p) for p in site.getsitepackages())
        if site.ENABLE_USER_SITE:
            prefixes.add(os.path.abspath(site.getusersitepackages()))
    except Exception:  # a site.py without them (an embedded interpreter)
        pass
    # An environment's root whole (a virtual environment's pyvenv.cfg and bin/, whose console scripts'
    # first line names the environment's path; a conda environment's conda-meta/), unless it holds
    # the working directory; of another prefix (/usr, which may hold a program in /usr/src/app),
    # its lib/.
    cwd = os.getcwd()
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        p = os.path.abspath(p)
        env_root = os.path.isfile(os.path.join(p, "pyvenv.cfg")) or os.path.isdir(os.path.join(p, "conda-meta"))
        inside = cwd == p or cwd.startswith(p.rstrip(os.sep) + os.sep)
        prefixes.add(p if env_root and not inside else os.path.join(p, "lib"))
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # reprun's python/ folder
    prefixes.add(here)
    for p in sorted(prefixes):
        _write("prefix", "-", "-", p)
    # The script Python runs (`python3 train`, whatever its name): the __main__ module, whose
    # __file__ Python removes once the script has run, so that the module list at exit lacks it.
    script = sys.argv[0] if sys.argv else ""
    if script not in ("", "-c", "-m", "-") and os.path.isfile(script):
        _write("module", "-", "-", os.path.abspath(script))
    _state["skip"] = tuple(sorted(p + os.sep for p in prefixes))
    _state["stdlib"] = (stdlib + os.sep,)
    _state["cwd"] = cwd + os.sep
    # The preload library's hook in C, when it is loaded here, sets _state["native"] on this event:
    # it then records the opens itself and calls _hook for the other events (_NATIVE_EVENTS) alone,
    # so that no Python hook runs at each of the interpreter's events.
    global _events
    _state["hook"] = _hook
    sys.audit("reprun.files.arm", _state["skip"], _state["cwd"], _state)
    del _state["hook"]
    if _state.get("native"):
        _events = _NATIVE_EVENTS
    os.register_at_fork(after_in_child=_forked)
    atexit.register(_at_exit)
    global _SOURCE_LOADERS
    import importlib.machinery

    _SOURCE_LOADERS = (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader)
    if not _state.get("native"):
        sys.addaudithook(_hook)
    # The modules imported so far, whose files no hook saw: listed at exit whatever their loader.
    _state["before"] = frozenset(sys.modules)
