#!/usr/bin/env python3
"""Writes a long run directory the way `reprun train` writes one, for `make bench`'s diff section.

    long_run.py TEMPLATE_RUN OUT STEPS [--part-at STEP]

TEMPLATE_RUN is a short real run (trace "weights"): its manifest.json and evals.jsonl are copied,
and its step records give the layout (keys, tensor names, number formats) of the STEPS records
written to OUT/steps.jsonl. summary.json is the template's with the step counts and the integrity
facts of the new logs (records and XXH3-64 of their bytes, computed here with Debian's
python3-xxhash as RunDir does), so `reprun diff` verifies them as it would a real run's. With
--part-at S, the records from step S on carry other losses and checksums: a run that parts there.
Not a trainer: the numbers are made up, only their shape is real.
"""
import json
import os
import shutil
import sys

import xxhash


def tensor_names(template):
    with open(os.path.join(template, "steps.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if "loss" in rec and "tensors" in rec:
                return list(rec["tensors"])
    sys.exit(f"long_run.py: {template}/steps.jsonl has no step record with a loss and tensors (trace weights)")


def write_steps(path, steps, names, part_at):
    """steps.jsonl with records 1..steps; returns (records, "xxh3:<hex>")."""
    # One %-format per record: the trainer's layout, each float printed round-trip exact (repr).
    fmt = ('{"step":%d,"epoch":%d,"loss":%r,"batch":"%016x","tensors":{'
           + ",".join('"%s":{"xxh3":"%%016x","norm":%%r}' % n for n in names) + "}}\n")
    digest = xxhash.xxh3_64()
    mask = (1 << 64) - 1
    with open(path, "wb") as f:
        chunk = []
        for s in range(1, steps + 1):
            salt = 0x9E3779B97F4A7C15 if part_at and s >= part_at else 0
            loss = 2.3 / (1.0 + s * 1e-4) + (1e-9 if salt else 0.0)
            vals = [s, s // 469, loss, (s * 0xD6E8FEB86659FD93) & mask]
            for i in range(len(names)):
                vals.append(((s + i) * 0xA0761D6478BD642F ^ salt) & mask)
                vals.append((11.5 - i) * (1.0 + s / 3e9))
            chunk.append(fmt % tuple(vals))
            if len(chunk) == 8192 or s == steps:
                data = "".join(chunk).encode()
                digest.update(data)
                f.write(data)
                chunk = []
    return steps, "xxh3:" + digest.hexdigest()


def main():
    args = sys.argv[1:]
    part_at = 0
    if "--part-at" in args:
        i = args.index("--part-at")
        part_at = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    template, out, steps = args[0], args[1], int(args[2])
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(template, "manifest.json"), os.path.join(out, "manifest.json"))
    shutil.copy(os.path.join(template, "evals.jsonl"), os.path.join(out, "evals.jsonl"))
    records, xxh3 = write_steps(os.path.join(out, "steps.jsonl"), steps, tensor_names(template), part_at)
    summary = json.load(open(os.path.join(template, "summary.json")))
    summary.update(steps=steps, total_steps=steps)
    summary["steps_log"] = {"records": records, "xxh3": xxh3}
    with open(os.path.join(template, "evals.jsonl"), "rb") as f:
        evals = f.read()
    summary["evals_log"] = {"records": evals.count(b"\n"), "xxh3": "xxh3:" + xxhash.xxh3_64(evals).hexdigest()}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
