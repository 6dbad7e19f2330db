# Data made outside torch, as the op trace sees it (issue 42 items 1, 2):
#  (a) a DataLoader worker (num_workers=1) adds noise from an unseeded numpy generator in
#      __getitem__: the batch reaches the main process as a storage aten.set_ adopts; that storage
#      is an input "not made by a traced op", never "same inputs, different outputs" with
#      deterministic algorithms as the fix (the script already calls
#      torch.use_deterministic_algorithms(True), and still differs);
#  (b) a dict of tensors loaded with torch.load from the files of a folder (the folder varied): the
#      same, at the torch.load line;
#  (c) an input made by torch.tensor(list) from a set of strings (--no-pin --runs 3), at an address
#      an earlier op's freed 35 MB tensor held (glibc maps a block that large and gives the address
#      back): every pair says "not made by a traced op", none blames that earlier op.
source "$(dirname "$0")/lib.sh"
PY=$(python_with torch) || skip "no python3 with torch (apt-get install python3-torch)"
"$PY" -c "import numpy" 2>/dev/null || skip "no numpy"
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

cat >worker.py <<'PYSRC'
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)


class Noisy(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(64, 8, generator=g)
        self.y = torch.randint(0, 2, (64,), generator=g)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = self.x[i].numpy() + np.random.default_rng().normal(size=8).astype("float32") * 0.01
        return torch.from_numpy(x), self.y[i]


if __name__ == "__main__":
    dl = DataLoader(Noisy(), batch_size=16, num_workers=1)
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for xb, yb in dl:
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
PYSRC
cat >shards.py <<'PYSRC'
import os
import torch
torch.manual_seed(0)
d = os.environ["SHARDS"]
data = {name: torch.load(os.path.join(d, name)) for name in os.listdir(d)}
x = torch.cat([data[k] for k in sorted(data)])
y = (x.sum(1) > 0).long()
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
PYSRC
cat >reuse.py <<'PYSRC'
import torch
torch.manual_seed(0)
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
N = 4_400_000  # float64: 35 MB, above glibc's largest mmap threshold, so a freed block's address comes back
g = torch.Generator().manual_seed(1)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
y = torch.tensor([0, 1, 0, 1])
for step in range(2):
    data = [float(len(w)) * (k + 1) for k, w in enumerate(set(WORDS))] * (N // 8)
    noise = torch.randn(N // 8, 8, dtype=torch.float64, generator=g)
    scale = float(noise[:4].abs().mean())
    del noise
    feats = torch.tensor(data, dtype=torch.float64)
    x = feats.view(-1, 8)[:4].float() * scale
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
PYSRC
# Two folders of the same file names, the second holding the first's first two tensors swapped.
"$PY" - <<'PYSRC' || fail "cannot write the shards"
import os, torch
g = torch.Generator().manual_seed(5)
t = [torch.randn(8, 4, generator=g) for _ in range(3)]
for d, order in (("sa", [0, 1, 2]), ("sb", [1, 0, 2])):
    os.makedirs(d)
    for k, j in enumerate(order):
        torch.save(t[j], os.path.join(d, f"shard{k}.pt"))
PYSRC

adopted="aten.set_ — its inputs already differ. The inputs of this op already differ, and no earlier op made the difference: input 1, the storage aten.set_ adopts, was not made by a traced op"

# (a) the worker.
run_rc "$REPRUN" exec -o "$T/worker" -q -- "$PY" worker.py
[[ $RC == 1 ]] || fail "(a) exit $RC: $(cat "$T/out") $(cat "$T/err")"
head -1 "$T/out" | grep -qF "run-2: step 1, forward, worker.py:$(line_of worker.py 'for xb, yb in dl'): $adopted" ||
  fail "(a) not an input made outside the traced ops: $(head -1 "$T/out")"
grep -q "same inputs, different outputs" "$T/out" && fail "(a) same inputs: $(head -1 "$T/out")"
head -1 "$T/out" | grep -q "Fix: make the data the same in every run: seed what DataLoader workers draw (a worker_init_fn" ||
  fail "(a) fix: $(head -1 "$T/out")"
head -1 "$T/out" | grep -q "use_deterministic_algorithms" && fail "(a) a fix the script already applies: $(head -1 "$T/out")"

# (b) torch.load of a folder's files.
run_rc "$REPRUN" exec -o "$T/shards" -q --vary env:SHARDS=sa,sb -- "$PY" shards.py
[[ $RC == 1 ]] || fail "(b) exit $RC: $(cat "$T/out") $(cat "$T/err")"
# (The comprehension is a function of its own before Python 3.12: "<dictcomp> (shards.py:5)".)
# The files are loaded before the training loop: the initialization (issue 40).
# SHARDS is varied and each run's replay at its own value reads its own files again: the variable is
# named first, then the input that differs.
head -1 "$T/out" | grep -qE "run-2: before the first step \(initialization\), (<dictcomp> \()?shards.py:$(line_of shards.py 'torch.load')\)?: aten.set_ " &&
  head -1 "$T/out" | grep -qF ": aten.set_ — its inputs already differ. The results depend on SHARDS: the runs part here with sb against sa (each run's replay at its own value gave its records again); the ${adopted#*. The }" ||
  fail "(b) not an input made outside the traced ops: $(head -1 "$T/out")"
head -1 "$T/out" | grep -qF "sorted(os.listdir(...))" || fail "(b) fix: $(head -1 "$T/out")"

# (c) an address reused: the same origin in every pair.
run_rc "$REPRUN" exec -o "$T/reuse" -q --no-pin --runs 3 -- "$PY" reuse.py
[[ $RC == 1 ]] || fail "(c) exit $RC: $(cat "$T/out") $(cat "$T/err")"
[[ $(grep -c "^Localization: step 1, forward, reuse.py:$(line_of reuse.py 'feats = torch.tensor'): aten.lift_fresh — its inputs already differ\. .* input 0 was not made by a traced op" "$T/out") == 2 ]] ||
  fail "(c) not every pair names the input as made outside the traced ops: $(grep ^Localization "$T/out")"
grep -q "written identically in both runs" "$T/out" && fail "(c) an older writer blamed: $(grep ^Localization "$T/out")"
pass
