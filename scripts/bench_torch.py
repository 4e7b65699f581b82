#!/usr/bin/env python3
"""PyTorch reference for `konane bench-net` and `konane bench-train`: the same network.

The speed target of the network issue is "PyTorch's level per core". This
script measures that level on the machine at hand, with the architecture of
crates/nn/src/model.rs (ReZero residual tower, fully convolutional policy
head, mean+max pooled value head), so the two numbers compare like for like.

    python3 -m venv /tmp/torch && /tmp/torch/bin/pip install torch
    /tmp/torch/bin/python scripts/bench_torch.py --blocks 6 --channels 64 --size 8x8

Prints positions/s and GFLOP/s (2 x multiply-adds, as bench-net counts) per
batch size, in inference mode on one thread. With `--train`, prints training
samples/s per thread count instead, for the step `konane bench-train` times:
AdamW (lr 1e-3, weight decay 1e-4) on masked-policy cross-entropy plus value
mean squared error, batch 256 of random planes with ~12 legal moves each.

    /tmp/torch/bin/python scripts/bench_torch.py --train --blocks 4 --channels 48 --threads 1,2
"""

import argparse
import time

import torch
from torch import nn

INPUT_PLANES = 6
MOVE_KINDS = 37


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.first = nn.Conv2d(c, c, 3, padding=1)
        self.second = nn.Conv2d(c, c, 3, padding=1)
        self.gate = nn.Parameter(torch.full((1,), 0.5))

    def forward(self, x):
        return torch.relu(x + self.gate * self.second(torch.relu(self.first(x))))


class Net(nn.Module):
    def __init__(self, blocks, c, p=32, v=32, hidden=64):
        super().__init__()
        self.stem = nn.Conv2d(INPUT_PLANES, c, 3, padding=1)
        self.blocks = nn.Sequential(*[Block(c) for _ in range(blocks)])
        self.policy_hidden = nn.Conv2d(c, p, 3, padding=1)
        self.policy_out = nn.Conv2d(p, MOVE_KINDS, 1)
        self.value_conv = nn.Conv2d(c, v, 1)
        self.value_hidden = nn.Linear(2 * v, hidden)
        self.value_out = nn.Linear(hidden, 1)

    def forward(self, x):
        x = self.blocks(torch.relu(self.stem(x)))
        policy = self.policy_out(torch.relu(self.policy_hidden(x))).flatten(1)
        v = torch.relu(self.value_conv(x)).flatten(2)
        pooled = torch.cat([v.mean(2), v.amax(2)], 1)
        value = torch.tanh(self.value_out(torch.relu(self.value_hidden(pooled))))
        return policy, value.flatten()


def multiply_adds(blocks, c, rows, cols, p=32, v=32, hidden=64):
    per_cell = 9 * INPUT_PLANES * c + blocks * 2 * 9 * c * c + 9 * c * p + p * MOVE_KINDS + c * v
    return rows * cols * per_cell + 2 * v * hidden + hidden


def train(args, rows, cols):
    cells = rows * cols
    per = MOVE_KINDS * cells
    macs = multiply_adds(args.blocks, args.channels, rows, cols)
    print(f"torch {torch.__version__}, training b{args.blocks}c{args.channels} on {args.size}, "
          f"batch {args.batch}, {2 * 3 * macs / 1e6:.1f} MFLOP/sample (forward + backward)")
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(args.batch, INPUT_PLANES, rows, cols, generator=generator)
    legal = torch.rand(args.batch, per, generator=generator) < 12 / per
    legal[:, 0] = True
    mask = torch.where(legal, 0.0, -1e9)
    target = torch.rand(args.batch, per, generator=generator) * legal
    target = target / target.sum(1, keepdim=True)
    z = torch.rand(args.batch, generator=generator) * 2 - 1
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        torch.manual_seed(1)
        net = Net(args.blocks, args.channels).train()
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-4)

        def step():
            policy, value = net(x)
            log_probs = torch.log_softmax(policy + mask, 1)
            loss = -(target * log_probs).sum(1).mean() + ((value - z) ** 2).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        for _ in range(3):
            step()
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            step()
            done += args.batch
        rate = done / (time.perf_counter() - start)
        print(f"threads {threads}: {rate:.0f} samples/s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--size", default="8x8")
    parser.add_argument("--batches", default="1,8,32,128")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--train", action="store_true", help="time training steps instead of inference")
    parser.add_argument("--batch", type=int, default=256, help="training batch (with --train)")
    parser.add_argument("--threads", default="1,2", help="thread counts (with --train)")
    args = parser.parse_args()
    rows, cols = (int(n) for n in args.size.split("x"))
    if args.train:
        train(args, rows, cols)
        return
    torch.set_num_threads(1)
    net = Net(args.blocks, args.channels).eval()
    macs = multiply_adds(args.blocks, args.channels, rows, cols)
    print(f"torch {torch.__version__}, 1 thread, b{args.blocks}c{args.channels} on {args.size}, "
          f"{2 * macs / 1e6:.1f} MFLOP/position")
    with torch.inference_mode():
        for batch in (int(b) for b in args.batches.split(",")):
            x = torch.rand(batch, INPUT_PLANES, rows, cols)
            for _ in range(5):
                net(x)
            done, start = 0, time.perf_counter()
            while time.perf_counter() - start < args.seconds:
                net(x)
                done += batch
            rate = done / (time.perf_counter() - start)
            print(f"batch {batch:4}: {rate:8.0f} positions/s  {rate * 2 * macs / 1e9:6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
