"""Waiting for a module to be imported: a meta-path finder that lets the import run as usual, then
hands the module to a function. It imports nothing itself, so a program that never imports the
module is left as it was."""

import importlib.util
import sys


class ImportWatcher:
    """Removes itself at the first import of `name`, then calls `then(module)` once the module is
    executed; what `then` raises is handed to `on_error` and never reaches the program."""

    def __init__(self, name, then, on_error=None):
        self.name = name
        self.then = then
        self.on_error = on_error

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader_exec = spec.loader.exec_module
        watcher = self

        def exec_module(module):
            loader_exec(module)
            try:
                watcher.then(module)
            except Exception as e:
                if watcher.on_error is not None:
                    watcher.on_error(e)

        spec.loader.exec_module = exec_module
        return spec


def after_import(name, then, on_error=None):
    """then(module) now when `name` is imported, else right after the program imports it."""
    if name in sys.modules:
        then(sys.modules[name])
    elif not any(isinstance(f, ImportWatcher) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, ImportWatcher(name, then, on_error))
