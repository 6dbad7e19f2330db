#!/usr/bin/env python3
"""The programs of `make bench`'s inputs rows: what recording the files a program read costs
(bench/run.py, bench_inputs). Each is run by `reprun exec`, with and without --no-inputs.

    inputs_program.py loader DIR   a PyTorch DataLoader, 2 workers, batches of 100, over every
                                   file of DIR (one sample a file: its bytes as a uint8 tensor)
    inputs_program.py stream DIR   reads DIR/big.bin once, in 1 MiB chunks

Prints one JSON line: the samples (loader) or bytes (stream) read, so that the caller can check
the program did its work.
"""
import json
import os
import sys


def loader(folder):
    import torch

    torch.set_num_threads(1)
    names = sorted(os.listdir(folder))

    class Files(torch.utils.data.Dataset):
        def __len__(self):
            return len(names)

        def __getitem__(self, i):
            with open(os.path.join(folder, names[i]), "rb") as f:
                return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)

    total, samples = 0, 0
    for batch in torch.utils.data.DataLoader(Files(), batch_size=100, num_workers=2):
        total += int(batch.sum())
        samples += batch.shape[0]
    return {"samples": samples, "sum": total}


def stream(folder):
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    read = 0
    with open(os.path.join(folder, "big.bin"), "rb", buffering=0) as f:
        while True:
            n = f.readinto(view)
            if not n:
                break
            read += n
    return {"bytes": read}


def main():
    mode, folder = sys.argv[1], sys.argv[2]
    print(json.dumps(loader(folder) if mode == "loader" else stream(folder)))


if __name__ == "__main__":
    main()
