#!/usr/bin/env python3
"""A small Fashion-MNIST-shaped set for the CNN's tests: N_TRAIN training and
N_TEST test images of 28x28, a bright 5x5 block per class on noise, as IDX
files in DIR.
    test/cnn/small_set.py DIR N_TRAIN N_TEST SEED"""
import os, random, struct, sys

d, n_train, n_test, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(d)
rnd = random.Random(seed)


def write(prefix, n):
    labels = [rnd.randrange(10) for _ in range(n)]
    pix = bytearray()
    for c in labels:
        img = bytearray(rnd.randrange(40) for _ in range(784))
        r0, c0 = 4 + 6 * (c // 4), 2 + 6 * (c % 4)
        for y in range(r0, r0 + 5):
            for x in range(c0, c0 + 5):
                img[y * 28 + x] = 230
        pix += img
    open(f"{d}/{prefix}-images-idx3-ubyte", "wb").write(struct.pack(">IIII", 0x803, n, 28, 28) + pix)
    open(f"{d}/{prefix}-labels-idx1-ubyte", "wb").write(struct.pack(">II", 0x801, n) + bytes(labels))


write("train", n_train)
write("t10k", n_test)
