#!/usr/bin/env python3
"""Writes the hand-made run directories in testdata/runs/ used by the diff tests.

Each directory is a small, readable run record; together they cover every divergence class,
tolerance edge cases, truncated and corrupt logs, and an unknown format version. Run it again
after changing the run format: python3 tools/make_testdata_runs.py
"""
import copy
import json
import os
import shutil

ROOT = os.path.join(os.path.dirname(__file__), "..", "testdata", "runs")

MANIFEST = {
    "format": "reprun.run/1",
    "kind": "train",
    "created": "2026-01-01T00:00:00Z",
    "command_line": ["reprun", "train", "cfg.json"],
    "config_file": {"path": "cfg.json", "dir": ".", "sha256": "c0ffee", "overrides": []},
    "config": {
        "seed": 1,
        "data": {"kind": "csv", "path": "data", "label_column": 2, "header": True, "classes": 2,
                 "validation_fraction": 0.1, "normalize": "standard"},
        "model": {"hidden": [4], "activation": "relu", "dropout": 0.0},
        "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.0},
        "training": {"batch_size": 2, "epochs": 1, "accumulation": 1, "checkpoint_every": 100,
                     "checkpoint_keep": 2, "eval_every": 100, "shuffle": True},
        "determinism": {"threads": 2, "reduction": "ordered", "trace": "full"},
    },
    "config_digest": "d1",
    "seeds": {"experiment": 1, "drawn_from_os": False},
    "data": {"kind": "csv", "fingerprint": "sha256:aa", "samples": 12, "features": 2, "classes": 2,
             "files": [{"path": "part-001.csv", "size": 120, "sha256": "11"},
                       {"path": "part-002.csv", "size": 130, "sha256": "22"}]},
    "reprun": {"version": "0.1.0", "git_commit": "abc", "compiler": "GNU 12.2.0"},
    "host": {"hostname": "alpha", "os": "Debian GNU/Linux 12", "isa": ["avx2", "fma"]},
    "resumes": [],
}

TENSORS = ["dense_1.weight", "dense_1.bias", "dense_2.weight", "dense_2.bias"]
FORWARD = ["input", "dense_1.z", "dense_1.act", "dense_2.logits"]
BACKWARD = ["loss.dlogits", "dense_2.weight.grad", "dense_2.bias.grad", "dense_1.act.grad",
            "dense_1.z.grad", "dense_1.weight.grad", "dense_1.bias.grad"]


def step(n, loss, batch=None, tensors=None, forward=None, backward=None):
    rec = {"step": n, "epoch": 0}
    if n > 0:
        rec["loss"] = loss
        rec["batch"] = batch or ("b%015d" % n)
    rec["tensors"] = tensors or {t: {"xxh3": "%016x" % (n * 16 + i), "norm": 1.0 + n + i / 10}
                                 for i, t in enumerate(TENSORS)}
    if n > 0:
        rec["forward"] = forward or [{"name": f, "xxh3": "f%015d" % (n * 10 + i)} for i, f in enumerate(FORWARD)]
        rec["backward"] = backward or [{"name": b, "xxh3": "b%015d" % (n * 10 + i)} for i, b in enumerate(BACKWARD)]
    return rec


def base_steps(count=6):
    return [step(n, 1.0 / (n + 1)) for n in range(count + 1)]


def write_run(name, steps, manifest=None, status="complete", tail=None, raw_lines=None):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest or MANIFEST, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "steps.jsonl"), "w") as f:
        for s in steps:
            f.write(json.dumps(s, separators=(",", ":")) + "\n")
        for line in raw_lines or []:
            f.write(line + "\n")
        if tail:
            f.write(tail)
    last = [s for s in steps if s["step"] > 0]
    summary = {"format": "reprun.run/1", "status": status, "steps": last[-1]["step"] if last else 0,
               "train_loss": last[-1]["loss"] if last else None, "val_loss": 0.5, "val_accuracy": 0.75}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    write_run("base", base_steps())
    write_run("same", base_steps(), manifest=dict(MANIFEST, created="2026-02-02T00:00:00Z",
                                                   host=dict(MANIFEST["host"], hostname="beta")))
    # data order: step 3 drew another batch.
    s = base_steps()
    s[3]["batch"] = "c000000000000003"
    s[3]["loss"] = 0.3
    write_run("data_order", s)
    # initial state: the step-0 weights differ.
    s = base_steps()
    s[0]["tensors"]["dense_1.weight"]["xxh3"] = "ffffffffffffffff"
    write_run("initial_state", s)
    # computation: step 4, same batch; the trace says backward dense_2.weight.grad; loss from step 5.
    s = base_steps()
    s[4]["backward"][1]["xxh3"] = "9999999999999999"
    s[4]["tensors"]["dense_2.weight"] = {"xxh3": "8888888888888888", "norm": 5.2000001}
    s[4]["tensors"]["dense_1.weight"] = {"xxh3": "7777777777777777", "norm": 5.0000002}
    s[5]["loss"] = s[5]["loss"] + 1e-9
    s[6]["loss"] = s[6]["loss"] + 1e-7
    write_run("computation", s)
    # run ended early: interrupted after step 3 with a partial last line (a crash mid-write).
    write_run("ended_early", base_steps()[:4], status="interrupted", tail='{"step":4,"epoch":0,"lo')
    # metadata only: learning rate and one data file added, identical steps.
    m = copy.deepcopy(MANIFEST)
    m["config"]["optimizer"]["lr"] = 0.1
    m["config"]["determinism"]["threads"] = 4
    m["data"]["files"].append({"path": "part-004.csv", "size": 8120, "sha256": "44"})
    m["data"]["fingerprint"] = "sha256:bb"
    write_run("meta_changed", base_steps(), manifest=m)
    # tolerance: loss one ulp off at step 2 and -0.0 vs 0.0 in a norm; checksums differ.
    s = base_steps()
    s[2]["loss"] = 0.33333333333333337  # 1/3 is 0.3333333333333333
    s[2]["tensors"]["dense_1.bias"] = {"xxh3": "0000000000000000", "norm": -0.0}
    s[2]["backward"][0]["xxh3"] = "0000000000000000"
    t = base_steps()
    t[2]["tensors"]["dense_1.bias"] = {"xxh3": "0000000000000000", "norm": 0.0}
    write_run("tolerance_a", t)
    write_run("tolerance_b", s)
    # NaN loss on both sides: bitwise identical, but never within tolerance.
    s = base_steps()
    s[3]["loss"] = "NaN"
    write_run("nan_loss", s)
    # Broken inputs.
    write_run("future_format", base_steps(), manifest=dict(MANIFEST, format="reprun.run/9"))
    write_run("garbage_line", base_steps()[:3], raw_lines=["this is not json"] + [
        json.dumps(x, separators=(",", ":")) for x in base_steps()[3:]])
    write_run("decreasing_steps", base_steps()[:4] + [base_steps()[2]])
    d = os.path.join(ROOT, "corrupt_manifest")
    write_run("corrupt_manifest", base_steps())
    with open(os.path.join(d, "manifest.json"), "w") as f:
        f.write('{"format": "reprun.run/1", "kind": ')


if __name__ == "__main__":
    main()
