#!/usr/bin/env python3
"""A PyTorch training script with the usual checkpoint and auto-resume pattern, for
`reprun exec --vary resume=N`:

    reprun exec --vary resume=40 -- python3 examples/python/train_resume.py --ckpt {run_dir}/ckpt.pt

At the end of every epoch it saves a checkpoint to --ckpt; at its start it loads the checkpoint when
the file exists and goes on from the epoch after it. Nothing else of the script knows it was resumed.
The --forget switches leave out of the checkpoint what real scripts forget (repeatable):

    torch-rng    torch's CPU generator (dropout draws from it)
    loader-rng   the DataLoader's shuffle generator (the data order of the epochs after the resume)
    scheduler    the LR scheduler (the learning rate decays at the wrong step)
    optimizer    the optimizer's state (Adam's moments and step counts restart)

--draw-after-save draws from torch's generator after the save (a random validation subset), so that
a resumed process, restored to its state at the save, is a draw behind the uninterrupted run.
"""

import argparse
import os

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default="ckpt.pt")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--forget", action="append", default=[],
                    choices=["torch-rng", "loader-rng", "scheduler", "optimizer"])
    ap.add_argument("--draw-after-save", action="store_true")
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    n, f, h, c = 640, 16, 64, 4
    data_gen = torch.Generator().manual_seed(1)
    centres = torch.randn(c, f, generator=data_gen) * 2
    y = torch.randint(0, c, (n,), generator=data_gen)
    x = centres[y] + torch.randn(n, f, generator=data_gen)
    dataset = torch.utils.data.TensorDataset(x, y)
    loader_gen = torch.Generator().manual_seed(2)
    loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True, generator=loader_gen)

    model = torch.nn.Sequential(torch.nn.Linear(f, h), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                                torch.nn.Linear(h, c))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    loss_fn = torch.nn.CrossEntropyLoss()

    start_epoch = 0
    if os.path.exists(args.ckpt):
        ckpt = torch.load(args.ckpt)
        model.load_state_dict(ckpt["model"])
        if "optimizer" in ckpt:
            opt.load_state_dict(ckpt["optimizer"])
        if "scheduler" in ckpt:
            sched.load_state_dict(ckpt["scheduler"])
        if "torch_rng" in ckpt:
            torch.set_rng_state(ckpt["torch_rng"])
        if "loader_rng" in ckpt:
            loader_gen.set_state(ckpt["loader_rng"])
        start_epoch = ckpt["epoch"] + 1
        print(f"resumed from {args.ckpt} (epoch {ckpt['epoch']})")

    for epoch in range(start_epoch, args.epochs):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
        sched.step()
        ckpt = {"epoch": epoch, "model": model.state_dict()}
        if "optimizer" not in args.forget:
            ckpt["optimizer"] = opt.state_dict()
        if "scheduler" not in args.forget:
            ckpt["scheduler"] = sched.state_dict()
        if "torch-rng" not in args.forget:
            ckpt["torch_rng"] = torch.get_rng_state()
        if "loader-rng" not in args.forget:
            ckpt["loader_rng"] = loader_gen.get_state()
        os.makedirs(os.path.dirname(os.path.abspath(args.ckpt)), exist_ok=True)
        torch.save(ckpt, args.ckpt)
        model.eval()
        with torch.no_grad():
            rows = torch.randperm(n)[:128] if args.draw_after_save else torch.arange(128)
            accuracy = (model(x[rows]).argmax(1) == y[rows]).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.6f} accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
