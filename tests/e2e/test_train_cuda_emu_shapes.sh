# The CUDA backend's kernels on the CPU emulator (tests/cuda_emu/) against the CPU backend over 60
# generated configs: widths of 1 to 129 (GEMM tiles cut at every edge), 0 to 3 hidden layers, batch
# sizes of 1 to 100 split into 1 to 4 micro-batches, dropout 0 to 0.9, relu and tanh, SGD with and
# without momentum and Adam, weight decay, trace weights and full. Every run's steps.jsonl and
# evals.jsonl must be the CPU's, byte for byte.
source "$(dirname "$0")/lib.sh"
[[ -n ${REPRUN_CUDAEMU:-} ]] || skip "reprun_cudaemu is not built in a sanitizer build (CMakeLists.txt says why)"
python3 - "$REPRUN" "$REPRUN_CUDAEMU" "$T" <<'PY' || fail "the emulated CUDA backend and the CPU backend differ (above)"
import filecmp, json, os, random, subprocess, sys
reprun, emu, root = sys.argv[1:4]
bad, trained = 0, 0
for i in range(60):
    rng = random.Random(i)
    samples = rng.choice([120, 300, 700])
    val = rng.choice([0.0, 0.2, 0.5])
    bs = min(rng.choice([1, 2, 7, 16, 33, 64, 100]), int(samples * (1 - val)))
    cfg = {"seed": rng.randint(0, 1000),
           "data": {"kind": "synthetic", "samples": samples, "features": rng.choice([1, 3, 17, 70]),
                    "classes": rng.choice([2, 3, 10]), "validation_fraction": val},
           "model": {"hidden": [rng.choice([1, 2, 3, 5, 7, 13, 33, 64, 65, 129]) for _ in range(rng.randint(0, 3))],
                     "activation": rng.choice(["relu", "tanh"]), "dropout": rng.choice([0.0, 0.1, 0.5, 0.9])},
           "optimizer": rng.choice([{"name": "sgd", "lr": 0.05, "momentum": rng.choice([0.0, 0.9]),
                                     "weight_decay": rng.choice([0.0, 0.01])},
                                    {"name": "adam", "lr": 0.003, "weight_decay": rng.choice([0.0, 0.01])}]),
           "training": {"batch_size": bs, "epochs": None, "steps": rng.choice([5, 20, 40]),
                        "accumulation": min(rng.choice([1, 2, 3, 4]), bs), "checkpoint_every": 10,
                        "eval_every": rng.choice([3, 10])},
           "determinism": {"trace": rng.choice(["weights", "full"])}}
    d = os.path.join(root, f"c{i}")
    os.makedirs(d)
    json.dump(cfg, open(f"{d}/c.json", "w"))
    a = subprocess.run([reprun, "train", f"{d}/c.json", "-o", f"{d}/cpu", "-q"], capture_output=True, text=True)
    b = subprocess.run([emu, "train", f"{d}/c.json", "-o", f"{d}/cuda", "-q", "--device", "cuda"],
                       capture_output=True, text=True)
    if a.returncode != 0 or b.returncode != 0:
        print(f"config {i}: exit {a.returncode} on the CPU, {b.returncode} on CUDA: {a.stderr}{b.stderr}")
        bad += 1
        continue
    trained += 1
    for f in ("steps.jsonl", "evals.jsonl"):
        pa, pb = f"{d}/cpu/{f}", f"{d}/cuda/{f}"
        if os.path.exists(pa) != os.path.exists(pb) or (os.path.exists(pa) and not filecmp.cmp(pa, pb, shallow=False)):
            print(f"config {i}: {f} differs: {json.dumps(cfg)}")
            bad += 1
print(f"{trained} configs trained on both, {bad} differences")
sys.exit(1 if bad or trained < 60 else 0)
PY
pass
