"""The installed Python distributions of a program's interpreter, for the run's manifest
(`framework.distributions`), and the framework facts file they go to.

A PyTorch program's capture (capture.py) adds them to its framework facts when it exits. A program
that never imports torch gets them too: reprun's sitecustomize calls `at_exit_without_torch`, which
writes the facts of a plain Python program, `{"name": "python", "python": VERSION, "distributions":
...}`, when the process exits without having imported torch, unless a process of the program wrote
facts first. The capture of a process that imports torch later replaces such plain facts (its own
say more), never the other way round.
"""

import hashlib
import json
import os
import sys

PLAIN = "python"  # the facts' name for a program that never imported torch


def _header(path):
    """Name and Version of a METADATA or PKG-INFO file (its header: the lines before the first blank)."""
    name = version = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                break
            if name is None and line.startswith("Name:"):
                name = line[5:].strip()
            elif version is None and line.startswith("Version:"):
                version = line[8:].strip()
    return name, version


def distributions():
    """{name: version} of the installed distributions (sorted), and a digest of that list: what
    importlib.metadata.distributions() finds on sys.path (the first of a name wins), read straight
    from each .dist-info/METADATA and .egg-info's PKG-INFO. (Importing importlib.metadata, with the
    email and zipfile modules it needs, costs a Python process 30 ms at its exit.)"""
    out = {}
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info"):
                meta = os.path.join(entry or ".", n, "METADATA")
            elif n.endswith(".egg-info"):
                meta = os.path.join(entry or ".", n)
                if os.path.isdir(meta):
                    meta = os.path.join(meta, "PKG-INFO")
            else:
                continue
            try:
                name, version = _header(meta)
            except OSError:
                continue
            if name and name not in out:
                out[name] = version
    out = dict(sorted(out.items(), key=lambda kv: kv[0].lower()))
    text = "".join(f"{k}=={v}\n" for k, v in out.items())
    return out, hashlib.sha256(text.encode()).hexdigest()


def facts_entry():
    """The manifest's `distributions` object."""
    dists, digest = distributions()
    return {"count": len(dists), "sha256": digest, "packages": dists}


def _plain_facts_there(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("name") == PLAIN
    except Exception:
        return False


def write_json_file(path, obj, exclusive):
    """Writes obj to path through a temporary file; with exclusive, only when path does not exist or
    holds a plain Python program's facts (which a PyTorch process's facts replace)."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=False)
        f.write("\n")
    if exclusive:
        try:
            os.link(tmp, path)  # fails when another process of the program wrote it first
        except FileExistsError:
            if obj.get("name") != PLAIN and _plain_facts_there(path):
                os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    else:
        os.replace(tmp, path)


def at_exit_without_torch(path):
    """Registers the plain facts' writer for this process (not for a forked child, which exits
    through os._exit or is another interpreter's business)."""
    import atexit

    pid = os.getpid()

    def write():
        if os.getpid() != pid or "torch" in sys.modules or os.path.exists(path):
            return
        try:
            facts = {"name": PLAIN, "python": sys.version.split()[0], "distributions": facts_entry()}
            write_json_file(path, facts, exclusive=True)
        except Exception:
            pass  # never break the program at its exit

    atexit.register(write)
