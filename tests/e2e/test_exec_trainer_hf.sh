# reprun exec --vary resume=N on a Hugging Face transformers Trainer (the torch2 leg: transformers
# from PyPI): a tiny BERT built from AutoConfig (no download), a data set made in the script,
# save_steps and resume_from_checkpoint=True, resumed mid-epoch.
#  (a) as it is: PASS, every state restored (the Trainer saves and restores the optimizer, the
#      scheduler, every generator and the data order: its default resume is bitwise here);
#  (b) a Trainer subclass that loads the optimizer of a checkpoint and not its scheduler: exit 1,
#      the scheduler NOT restored, the first differing op the optimizer's update of step 22 at the
#      train() line, whose arguments (the learning rate) differ;
#  (c) a callback that draws an example every 7th step it sees (a count that restarts with the
#      process): exit 1, torch's generator "restored to the save", with the draw's line.
source "$(dirname "$0")/lib.sh"
PY=$(python_with transformers) || skip "no python3 with transformers (the torch2 leg installs it)"
export HF_HUB_OFFLINE=1 TRANSFORMERS_NO_ADVISORY_WARNINGS=1
line_of() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

cat >hf.py <<'PYSRC'
import glob, os, sys
import torch
from transformers import (AutoConfig, AutoModelForSequenceClassification, Trainer, TrainerCallback, TrainingArguments,
                          set_seed)

out = sys.argv[1]
PLANT = os.environ.get("PLANT", "")
set_seed(0)
cfg = AutoConfig.for_model("bert", vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, num_labels=2, max_position_embeddings=64)


class Table(torch.utils.data.Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randint(0, 100, (n, 16), generator=g)
        self.y = self.x.sum(1) % 2

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.y[i]}


class SampleEvery7(TrainerCallback):
    def __init__(self):
        self.calls = 0

    def on_step_begin(self, args, state, control, **kwargs):
        self.calls += 1
        if self.calls % 7 == 0:
            torch.randint(0, 128, (1,))


class ForgetsScheduler(Trainer):
    def _load_optimizer_and_scheduler(self, checkpoint):
        if checkpoint is not None:
            self.optimizer.load_state_dict(torch.load(os.path.join(checkpoint, "optimizer.pt"), weights_only=True))


args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, num_train_epochs=2, save_steps=10,
                         logging_steps=10, seed=0, report_to="none", use_cpu=True, disable_tqdm=True)
cls = ForgetsScheduler if PLANT == "scheduler" else Trainer
trainer = cls(model=AutoModelForSequenceClassification.from_config(cfg), args=args, train_dataset=Table(128),
              callbacks=[SampleEvery7()] if PLANT == "callback" else [])
trainer.train(resume_from_checkpoint=bool(glob.glob(os.path.join(out, "checkpoint-*"))) or None)
PYSRC
train=$(line_of hf.py 'trainer.train(')

# (a)
run_rc "$REPRUN" exec -o "$T/a" -q --vary resume=20 -- "$PY" hf.py '{run_dir}/out'
[[ $RC == 0 ]] || fail "(a) exit $RC: $(cat "$T/out") $(tail -20 "$T/err")"
grep -q "^PASS: 2 runs of the program identical; run-2 killed after step 20 and resumed from step 20: every state restored" "$T/out" ||
  fail "(a) $(head -1 "$T/out")"
grep -qE "^    scheduler 0 \(LambdaLR\) +restored$" "$T/out" || fail "(a) the scheduler is not in the table: $(cat "$T/out")"

# (b)
run_rc "$REPRUN" exec -o "$T/b" -q --pin PLANT=scheduler --vary resume=20 -- "$PY" hf.py '{run_dir}/out'
[[ $RC == 1 ]] || fail "(b) exit $RC: $(cat "$T/out") $(tail -20 "$T/err")"
grep -qE "^FAIL: .*NOT restored: scheduler 0 \(LambdaLR\); step 22, optimizer, hf.py:$train: aten\.[a-z_]+ — same tensor inputs, but its non-tensor arguments differ \(.*the learning rate.*Scheduler 0 \(LambdaLR\) NOT restored at the resume after step 20" "$T/out" ||
  fail "(b) $(head -1 "$T/out")"

# (c)
run_rc "$REPRUN" exec -o "$T/c" -q --pin PLANT=callback --vary resume=20 -- "$PY" hf.py '{run_dir}/out'
[[ $RC == 1 ]] || fail "(c) exit $RC: $(cat "$T/out") $(tail -20 "$T/err")"
grep -qE "^    torch CPU generator +restored to the save: run-1 drew from it between the save and the next step \(aten.randint at hf.py:$(line_of hf.py 'torch.randint(0, 128')\)" "$T/out" ||
  fail "(c) $(cat "$T/out")"
pass
