#!/usr/bin/env python3
"""PyTorch side of the attention benchmark (bench/attn.cpp): a training step (forward and
backward) of hand-written causal attention on q, k, v [1, 8, S, 64], the way the articles write
it (matmul, masked_fill with -inf, softmax, matmul), and the same with an ALiBi bias and a
sliding window of 256 keys as a dense mask. PyTorch 1.13 has no fused attention on the CPU
(scaled_dot_product_attention arrived in 2.0).

    /usr/bin/python3 tools/torch_attn.py [--threads 2] [--steps 3] [--lengths 512,1024,...]

Prints `torch.attn.s<S>.<case>.step_ms: value ms` and the peak resident memory after each case
(`ru_maxrss`, which only grows). One untimed warm-up step, then the median of --steps steps.
"""
import argparse
import math
import resource
import time

import torch

HEADS, HEAD_DIM, WINDOW = 8, 64, 256


def step(q, k, v, w, bias, keep):
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(HEAD_DIM))
    if bias is not None:
        scores = scores + bias
    scores = scores.masked_fill(~keep, float("-inf"))
    o = torch.softmax(scores, dim=-1) @ v
    loss = (o * w).sum()
    loss.backward()
    return loss


def time_case(s, steps, alibi):
    g = torch.Generator().manual_seed(1)
    q, k, v, w = (torch.rand(1, HEADS, s, HEAD_DIM, generator=g) * 2 - 1 for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)
    i = torch.arange(s)
    dist = i[:, None] - i[None, :]  # query - key
    keep = dist >= 0
    bias = None
    if alibi:
        keep = keep & (dist < WINDOW)
        slopes = torch.exp2(-8.0 * torch.arange(1, HEADS + 1) / HEADS)
        bias = -(slopes[:, None, None] * dist[None].float())[None]
    times = []
    for n in range(steps + 1):
        for t in (q, k, v):
            t.grad = None
        t0 = time.perf_counter()
        step(q, k, v, w, bias, keep)
        if n > 0:
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--lengths", default="512,1024,2048,4096")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for s in (int(x) for x in a.lengths.split(",")):
        for name, alibi in (("causal", False), ("alibi_window256", True)):
            t = time_case(s, a.steps, alibi)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
            print(f"torch.attn.s{s}.{name}.step_ms: {1e3 * t:.1f} ms", flush=True)
            print(f"torch.attn.s{s}.{name}.max_rss_mib: {rss:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
