# retype_keys.py SOURCE FILE -- COMMAND...: for each key of SOURCE/FILE (a JSON file, or the first
# lines of a .jsonl file), a copy of the folder SOURCE at ./retyped (made once; the file put back after
# each case) with that one value given another type (a string becomes a number and null; a number or a bool a string and null; an object or a
# list a string and a number), and COMMAND run with "{}" standing for the copy. Each must end as
# reprun's documented exits do (0, 1 or 2) and, when it refuses, with its own message: never the
# JSON library's ("[json.exception...]", which names no file), an abort or a sanitizer's report.
# Prints each case that does not, and exits 1 when there is one.
import json
import os
import shutil
import subprocess
import sys

source, name = sys.argv[1], sys.argv[2]
command = sys.argv[4:]
assert sys.argv[3] == "--" and command, __doc__
jsonl = name.endswith(".jsonl")
LINES = 3  # a .jsonl file: its first lines are retyped


def load(path):
    with open(path) as f:
        text = f.read()
    if jsonl:
        lines = text.splitlines()
        return [json.loads(l) for l in lines[:LINES]], lines[LINES:]
    return json.loads(text), None


def places(value, at=()):
    """Every key path below value (lists: their first two items), deepest first."""
    items = value.items() if isinstance(value, dict) else enumerate(value[:2]) if isinstance(value, list) else []
    for k, v in items:
        yield from places(v, at + (k,))
        yield at + (k,), v


def others(v):
    if isinstance(v, str):
        return [1, None]
    if isinstance(v, (dict, list)):
        return ["x", 5]
    return ["x", None]


doc, _ = load(os.path.join(source, name))
bad = []
cases = 0
shutil.rmtree("retyped", ignore_errors=True)
shutil.copytree(source, "retyped", symlinks=True)
path = os.path.join("retyped", name)
with open(path, "rb") as f:
    original = f.read()
for at, value in list(places(doc)):
    for other in others(value):
        edited, rest = load(path)
        node = edited
        for k in at[:-1]:
            node = node[k]
        node[at[-1]] = other
        with open(path, "w") as f:
            if jsonl:
                f.write("\n".join([json.dumps(x) for x in edited] + rest) + "\n")
            else:
                json.dump(edited, f)
        argv = [a.replace("{}", "retyped") for a in command]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        with open(path, "wb") as f:
            f.write(original)
        cases += 1
        err = p.stderr
        if p.returncode not in (0, 1, 2) or "json.exception" in err or "terminate called" in err or "Sanitizer" in err:
            bad.append(f"{name} {'.'.join(map(str, at))} = {json.dumps(other)}: exit {p.returncode}: {err.strip()[-300:]}")
shutil.rmtree("retyped", ignore_errors=True)
for b in bad[:20]:
    print(b)
print(f"{name}: {cases} cases, {len(bad)} not refused cleanly")
sys.exit(1 if bad else 0)
