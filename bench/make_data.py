#!/usr/bin/env python3
"""Writes the benchmark data set in the IDX (MNIST) format: 60,000 images of 28x28 unsigned bytes,
10 classes (a class template plus noise), so reprun and PyTorch train on exactly the same values."""
import struct
import sys

import numpy as np


def main(out_dir, n=60000, seed=1):
    rng = np.random.default_rng(seed)
    templates = rng.integers(0, 256, size=(10, 784)).astype(np.float32)
    labels = rng.integers(0, 10, size=n).astype(np.uint8)
    images = np.clip(templates[labels] * 0.08 + rng.normal(100, 60, size=(n, 784)), 0, 255).astype(np.uint8)
    with open(f"{out_dir}/images.idx", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28))
        f.write(images.tobytes())
    with open(f"{out_dir}/labels.idx", "wb") as f:
        f.write(struct.pack(">II", 0x801, n))
        f.write(labels.tobytes())


if __name__ == "__main__":
    main(sys.argv[1])
