# reprun exec --vary resume on a GPU: a PyTorch script whose dropout draws from the CUDA generator,
# with the usual save-every-epoch and auto-resume pattern. Its checkpoint holds the model, the
# optimizer and torch's CPU generator; with the CUDA generators too (torch.cuda.get_rng_state_all)
# the resume passes (exit 0), without them it fails (exit 1) naming "torch CUDA generator 0" as not
# restored, the dropout op and its line. Skipped (exit 125) without an NVIDIA GPU and a python3
# whose torch sees it (torch 2.x on the lent machines).
source "$(dirname "$0")/../e2e/lib.sh"
nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA GPU (nvidia-smi -L failed or is not installed)"
PY=$(python_with_cuda_torch) || skip "no python3 with a torch where torch.cuda.is_available() is True"

cat >train.py <<'PYSRC'
import os
import sys

import torch

ckpt_path, save_cuda_rng = sys.argv[1], sys.argv[2] == "1"
torch.manual_seed(0)
dev = torch.device("cuda")
x = torch.randn(640, 32).to(dev)
y = (x.sum(1) > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                            torch.nn.Linear(128, 2)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
start = 0
if os.path.exists(ckpt_path):
    c = torch.load(ckpt_path)
    model.load_state_dict(c["model"])
    opt.load_state_dict(c["opt"])
    torch.set_rng_state(c["cpu_rng"])
    if "cuda_rng" in c:
        torch.cuda.set_rng_state_all(c["cuda_rng"])
    start = c["epoch"] + 1
for epoch in range(start, 4):
    for b in range(10):
        xb, yb = x[b * 64:(b + 1) * 64], y[b * 64:(b + 1) * 64]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
    c = {"model": model.state_dict(), "opt": opt.state_dict(), "cpu_rng": torch.get_rng_state(), "epoch": epoch}
    if save_cuda_rng:
        c["cuda_rng"] = torch.cuda.get_rng_state_all()
    torch.save(c, ckpt_path)
PYSRC
line=$(grep -n 'loss = torch.nn.functional.cross_entropy(model(xb)' train.py | cut -d: -f1)

expect_rc 0 "$REPRUN" exec -o "$T/ok" -q --vary resume=20 -- "$PY" train.py '{run_dir}/c.pt' 1
grep -q "every state restored" "$T/out" || fail "with the CUDA generators saved: $(head -1 "$T/out")"
grep -qE "^    torch CUDA generator 0 +restored$" "$T/out" || fail "no CUDA generator row: $(cat "$T/out")"

expect_rc 1 "$REPRUN" exec -o "$T/bad" -q --vary resume=20 -- "$PY" train.py '{run_dir}/c.pt' 0
head -1 "$T/out" | grep -q "NOT restored: torch CUDA generator 0" || fail "the CUDA generator is not named: $(head -1 "$T/out")"
head -1 "$T/out" | grep -qE "step 21, forward, .*train\.py:${line}.*(bernoulli|dropout)" ||
  fail "the dropout op and its line are not named: $(head -1 "$T/out")"
grep -q "torch.cuda.get_rng_state_all()" "$T/out" || fail "no fix: $(cat "$T/out")"
pass
