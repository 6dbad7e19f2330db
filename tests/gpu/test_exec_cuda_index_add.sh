# reprun exec on an unmodified GNN-like PyTorch program whose forward pass scatter-adds with
# index_add_ on CUDA (float32 atomics, 100 sources per row on average, so the order of the additions
# changes from run to run): the runs differ (exit 1) and the report names aten.index_add_ and its
# source line; with torch.use_deterministic_algorithms(True) they agree (exit 0); the repro.py
# written under the work directory shows several distinct outputs without the fix and one with it.
# Skipped (exit 125) without an NVIDIA GPU and a python3 whose torch sees it.
source "$(dirname "$0")/../e2e/lib.sh"
nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA GPU (nvidia-smi -L failed or is not installed)"
PY=$(python_with_cuda_torch) || skip "no python3 with a torch where torch.cuda.is_available() is True"

# The program: no reprun import. CUBLAS_WORKSPACE_CONFIG (also one of exec's pins) lets the Linear
# layers run under use_deterministic_algorithms(True), so that switch is the only difference between
# the two variants below, and index_add_ the only op that needs it.
write_train() {
  cat >"$1" <<'PY'
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch

torch.manual_seed(0)
NODES, EDGES, DIM, CLASSES = 1000, 100_000, 16, 4
dev = torch.device("cuda")
x = torch.randn(NODES, DIM).to(dev)
src = torch.randint(0, NODES, (EDGES,)).to(dev)
dst = torch.randint(0, NODES, (EDGES,)).to(dev)  # many duplicates: about 100 edges into each node
y = torch.randint(0, CLASSES, (NODES,)).to(dev)
x_src = x[src]  # (edges, dim): the features at each edge's source, a fixed input


class MessagePassing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.message = torch.nn.Linear(DIM, DIM)
        self.head = torch.nn.Linear(DIM, CLASSES)

    def forward(self, x_src):
        msg = self.message(x_src)  # (edges, dim)
        agg = torch.zeros(NODES, DIM, device=msg.device)
        agg.index_add_(0, dst, msg)  # (nodes, dim): sum of the messages into each node
        return self.head(torch.relu(agg))


model = MessagePassing().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x_src), y)
    loss.backward()
    opt.step()
    print(f"step {step + 1} loss {loss.item():.6f}")
PY
}

mkdir -p "$T/plain" "$T/fixed"
write_train "$T/plain/train.py"
line=$(grep -n 'index_add_(0, dst, msg)' "$T/plain/train.py" | cut -d: -f1)
[[ $line =~ ^[0-9]+$ ]] || fail "cannot find the index_add_ line in train.py"

report=(--format json)
expect_rc 1 "$REPRUN" exec -o "$T/w" "${report[@]}" -- "$PY" "$T/plain/train.py"
cp "$T/out" "$T/r.json"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/r.json" || fail "the JSON report does not parse"
grep -qF 'aten.index_add_' "$T/out" "$T/r.json" ||
  fail "the report does not name aten.index_add_: $(head -c 3000 "$T/out")"
grep -qE "train\.py:${line}([^0-9]|$)" "$T/out" "$T/r.json" ||
  fail "the report does not name train.py:$line (the index_add_ call): $(head -c 3000 "$T/out")"

# (2) With the deterministic-algorithms switch at the top: identical.
{
  echo 'import torch; torch.use_deterministic_algorithms(True)'
  cat "$T/plain/train.py"
} >"$T/fixed/train.py"
expect_rc 0 "$REPRUN" exec -o "$T/w-fixed" -- "$PY" "$T/fixed/train.py"

# (3) repro.py under the work directory of (1): the op alone, run several times, with and without the fix.
repro=$(find "$T/w" -name repro.py | head -n 1)
[[ -n $repro ]] || fail "no repro.py under $T/w: $(find "$T/w" -maxdepth 2 | head -n 40)"
"$PY" "$repro" >"$T/repro.out" 2>"$T/repro.err" || fail "python3 $repro failed: $(tail -n 20 "$T/repro.err")"
without=$(grep -E '^without the fix.*: [0-9]+ runs, [0-9]+ distinct outputs?$' "$T/repro.out" | head -n 1)
[[ -n $without ]] || fail "repro.py printed no 'without the fix: N runs, K distinct outputs' line: $(cat "$T/repro.out")"
k=$(sed -E 's/.*, ([0-9]+) distinct outputs?$/\1/' <<<"$without")
((k > 1)) || fail "repro.py without the fix gave $k distinct output(s), expected more than 1: $without"
grep -qE '^with the fix.*: [0-9]+ runs, 1 distinct output$' "$T/repro.out" ||
  fail "repro.py with the fix does not give 1 distinct output: $(cat "$T/repro.out")"
pass
