"""reprun's sitecustomize: `reprun exec` puts this folder first on PYTHONPATH of a Python program.

It first runs the sitecustomize that would have run without reprun (the next one on sys.path, such
as Debian's), then, when REPRUN_PY_FILES_LOG is set, the audit hook that records the files the
process opens (reprun_capture/files.py), and, when REPRUN_CAPTURE is set, arms reprun_capture: a
watcher that acts only once the program imports torch. A program that never imports torch is left
alone (torch is not imported).
"""

import os
import sys


def _chain_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _chain_next_sitecustomize()
except Exception as e:  # the other sitecustomize failed: Python would have said so and gone on
    print(f"reprun: the program's own sitecustomize failed: {type(e).__name__}: {e}", file=sys.stderr)

if os.environ.get("REPRUN_PY_FILES_LOG"):
    try:  # every Python process of the program: the files it opens, and the line that opened each
        from reprun_capture import files as _reprun_files

        _reprun_files.arm(os.environ["REPRUN_PY_FILES_LOG"])
    except Exception as e:  # never break the program
        print(f"reprun: file recording disabled: {type(e).__name__}: {e}", file=sys.stderr)

if os.environ.get("REPRUN_CAPTURE"):
    try:
        import reprun_capture

        reprun_capture.arm()
    except Exception as e:  # never break the program: report and run it uncaptured
        print(f"reprun: capture disabled: {type(e).__name__}: {e}", file=sys.stderr)
