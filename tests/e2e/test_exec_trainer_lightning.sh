# reprun exec --vary resume=N on a Lightning Trainer (the torch2 leg: pytorch-lightning from PyPI)
# with ModelCheckpoint(every_n_train_steps, save_last=True) and ckpt_path="last".
#  (a) a callback that keeps torch's generator in the checkpoint, resumed at an epoch boundary: PASS;
#  (b) without it (Lightning saves no global generator): exit 1, torch's generator NOT restored and
#      the batch blamed on it;
#  (c) with it, resumed mid-epoch: exit 1, the generator "restored by the program" and the batch
#      DIFFERS (Lightning starts the epoch's data over with a new shuffle).
source "$(dirname "$0")/lib.sh"
PY=$(python_with pytorch_lightning) || skip "no python3 with pytorch_lightning (the torch2 leg installs it)"

cat >pl.py <<'PYSRC'
import os, sys
import torch
import pytorch_lightning as L
from pytorch_lightning.callbacks import ModelCheckpoint

out = sys.argv[1]
PLANT = os.environ.get("PLANT", "")
L.seed_everything(0, workers=True)


class TorchRngInCheckpoint(L.Callback):
    def on_save_checkpoint(self, trainer, module, checkpoint):
        checkpoint["torch_rng"] = torch.get_rng_state()

    def on_load_checkpoint(self, trainer, module, checkpoint):
        torch.set_rng_state(checkpoint["torch_rng"])


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(32, 2))

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=0.01)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


g = torch.Generator().manual_seed(1)
x = torch.randn(256, 16, generator=g)
y = (x.sum(1) > 0).long()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16, shuffle=True)
ckpt = ModelCheckpoint(dirpath=out, every_n_train_steps=int(os.environ.get("EVERY", "16")), save_top_k=-1, save_last=True)
callbacks = [ckpt] + ([] if PLANT == "no-rng" else [TorchRngInCheckpoint()])
trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, callbacks=callbacks, logger=False,
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Net(), loader, ckpt_path="last" if os.path.exists(os.path.join(out, "last.ckpt")) else None)
PYSRC

# (a)
run_rc "$REPRUN" exec -o "$T/a" -q --vary resume=16 -- "$PY" pl.py '{run_dir}/ck'
[[ $RC == 0 ]] || fail "(a) exit $RC: $(cat "$T/out") $(tail -20 "$T/err")"
grep -q "^PASS: 2 runs of the program identical; run-2 killed after step 16 and resumed from step 16: every state restored" "$T/out" ||
  fail "(a) $(head -1 "$T/out")"
grep -q "IDENTICAL: 48 step records bitwise identical" "$T/out" || fail "(a) $(cat "$T/out")"

# (b)
run_rc "$REPRUN" exec -o "$T/b" -q --pin PLANT=no-rng --vary resume=16 -- "$PY" pl.py '{run_dir}/ck'
[[ $RC == 1 ]] || fail "(b) exit $RC: $(cat "$T/out") $(tail -20 "$T/err")"
grep -q "^FAIL: .*NOT restored: torch CPU generator, batch; step 17, forward, Net.training_step (pl.py:" "$T/out" ||
  fail "(b) $(head -1 "$T/out")"
grep -qE "^    batch +DIFFERS: its order is drawn from torch CPU generator, which was not restored$" "$T/out" || fail "(b) $(cat "$T/out")"

# (c)
run_rc "$REPRUN" exec -o "$T/c" -q --pin EVERY=10 --vary resume=20 -- "$PY" pl.py '{run_dir}/ck'
[[ $RC == 1 ]] || fail "(c) exit $RC: $(cat "$T/out") $(tail -20 "$T/err")"
grep -q "^FAIL: .*NOT restored: batch; step 21, forward" "$T/out" || fail "(c) $(head -1 "$T/out")"
grep -qE "^    torch CPU generator +restored by the program: torch.set_rng_state at pl.py:[0-9]+ set it back to its state at the save" "$T/out" ||
  fail "(c) $(cat "$T/out")"
pass
