#!/usr/bin/python3
"""PyTorch baseline for bench/cnn.sh: the CNN's seed network, trained with the
same hyper-parameters on the same IDX files, in the same batch order.

  bench/cnn_torch.py --data data/fashion-mnist --epochs 1 --batch 10 --lr 0.01 --threads 1

Network (build/bin/cnn --net seed): conv 3x3, 4 filters -> ReLU -> max-pool 2
-> dense 676 -> 10, softmax cross-entropy, plain SGD. Pixels are scaled to
[0, 1]. Epoch 0 visits the training set in file order; epoch e > 0 in the
permutation that build/bin/cnn uses (Fisher-Yates driven by splitmix64
seeded with seed + e). Only the training loop is timed. The last line on
stdout is one JSON object.
"""
import argparse
import json
import struct
import sys
import time

import torch
from torch import nn


def read_idx(path, magic, dims):
    with open(path, "rb") as f:
        head = f.read(4 + 4 * dims)
        got = struct.unpack(">" + "I" * (1 + dims), head)
        if got[0] != magic:
            sys.exit(f"{path}: bad magic {got[0]:#x}")
        data = f.read()
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return t.reshape(got[1:])


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, z ^ (z >> 31)


def epoch_order(n, seed, epoch):
    order = list(range(n))
    if epoch == 0:
        return order
    state = (seed + epoch) & 0xFFFFFFFFFFFFFFFF
    for i in range(n - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-batches", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    d = a.data
    xtr = read_idx(f"{d}/train-images-idx3-ubyte", 0x803, 3).float().div_(255).unsqueeze(1)
    ytr = read_idx(f"{d}/train-labels-idx1-ubyte", 0x801, 1).long()
    xte = read_idx(f"{d}/t10k-images-idx3-ubyte", 0x803, 3).float().div_(255).unsqueeze(1)
    yte = read_idx(f"{d}/t10k-labels-idx1-ubyte", 0x801, 1).long()

    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(676, 10))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    loss_fn = nn.CrossEntropyLoss()
    n = xtr.shape[0]
    batches = n // a.batch
    if a.max_batches:
        batches = min(batches, a.max_batches)
    seconds, loss_sum, seen = 0.0, 0.0, 0
    for epoch in range(a.epochs):
        idx = torch.tensor(epoch_order(n, a.seed, epoch))
        x_ep, y_ep = xtr[idx], ytr[idx]
        loss_sum, seen = 0.0, 0
        t0 = time.perf_counter()
        for b in range(batches):
            x = x_ep[b * a.batch:(b + 1) * a.batch]
            y = y_ep[b * a.batch:(b + 1) * a.batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            seen += 1
        seconds += time.perf_counter() - t0
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    samples = batches * a.batch * a.epochs
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": a.threads,
                      "epochs": a.epochs, "batch": a.batch, "lr": a.lr,
                      "train_samples": samples, "seconds": seconds,
                      "samples_per_s": samples / seconds, "test_accuracy": acc,
                      "final_loss": loss_sum / max(seen, 1)}))


if __name__ == "__main__":
    main()
