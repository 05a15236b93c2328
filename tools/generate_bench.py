#!/usr/bin/python3
"""Decode speed of the same language model in PyTorch, for docs/generation.md: tokens/s when
every new token recomputes the whole prefix, and with PyTorch's usual key/value cache
(torch.cat of the past keys and values). The model is stag's language_model (models/lm.hpp):
RMSNorm, grouped-query attention with rotary positions (rotate-half), SwiGLU, tied output.
Random weights: speed does not depend on them.

  OMP_NUM_THREADS=2 /usr/bin/python3 tools/generate_bench.py --preset char-tiny --prompt 64 --new 128

Needs torch (Debian's python3-torch 1.13 with libopenblas0-openmp for a fair BLAS)."""
import argparse
import math
import time

import torch
import torch.nn.functional as F

PRESETS = {  # models/lm_presets.hpp
    "char-tiny": dict(vocab=128, d_model=128, heads=4, kv_heads=2, d_ff=384, layers=4, theta=1e4),
    "char-small": dict(vocab=128, d_model=256, heads=8, kv_heads=2, d_ff=768, layers=6, theta=1e4),
    "bpe-base": dict(vocab=4096, d_model=256, heads=8, kv_heads=2, d_ff=1024, layers=4, theta=1e6),
    "small": dict(vocab=256, d_model=192, heads=6, kv_heads=2, d_ff=512, layers=4, theta=1e4),
}


class Lm(torch.nn.Module):
    def __init__(self, vocab, d_model, heads, kv_heads, d_ff, layers, theta):
        super().__init__()
        self.h, self.kvh, self.dh, self.theta = heads, kv_heads, d_model // heads, theta
        self.embed = torch.nn.Embedding(vocab, d_model)
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            m = torch.nn.Module()
            m.q, m.k, m.v, m.o = lin(d_model, d_model), lin(d_model, kv_heads * self.dh), lin(d_model, kv_heads * self.dh), lin(d_model, d_model)
            m.gate, m.up, m.down = lin(d_model, d_ff), lin(d_model, d_ff), lin(d_ff, d_model)
            m.n1, m.n2 = torch.nn.Parameter(torch.ones(d_model)), torch.nn.Parameter(torch.ones(d_model))
            self.layers.append(m)
        self.norm = torch.nn.Parameter(torch.ones(d_model))

    @staticmethod
    def rms(x, w, eps=1e-5):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def rope(self, x, start):
        t = x.shape[-2]
        inv = self.theta ** (-torch.arange(0, self.dh, 2, dtype=torch.float64) / self.dh)
        ang = torch.arange(start, start + t, dtype=torch.float64)[:, None] * inv[None, :]
        cos, sin = ang.cos().float(), ang.sin().float()
        x1, x2 = x[..., : self.dh // 2], x[..., self.dh // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def forward(self, ids, cache=None, start=0):
        b, t = ids.shape
        x = self.embed(ids)
        new_cache = []
        for i, m in enumerate(self.layers):
            h = self.rms(x, m.n1)
            q = m.q(h).view(b, t, self.h, self.dh).transpose(1, 2)
            k = m.k(h).view(b, t, self.kvh, self.dh).transpose(1, 2)
            v = m.v(h).view(b, t, self.kvh, self.dh).transpose(1, 2)
            q, k = self.rope(q, start), self.rope(k, start)
            if cache is not None:
                if cache[i] is not None:
                    k = torch.cat([cache[i][0], k], 2)
                    v = torch.cat([cache[i][1], v], 2)
                new_cache.append((k, v))
            rep = self.h // self.kvh
            kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            s = q @ kk.transpose(-1, -2) / math.sqrt(self.dh)
            tk = kk.shape[-2]
            mask = torch.ones(t, tk, dtype=torch.bool).tril(tk - t)
            a = s.masked_fill(~mask, float("-inf")).softmax(-1) @ vv
            x = x + m.o(a.transpose(1, 2).reshape(b, t, -1))
            h = self.rms(x, m.n2)
            x = x + m.down(F.silu(m.gate(h)) * m.up(h))
        return self.rms(x, self.norm) @ self.embed.weight.t(), new_cache


def run(model, prompt, new, cached):
    ids = prompt.clone()
    t0 = time.perf_counter()
    if cached:
        logits, cache = model(ids, [None] * len(model.layers), 0)
        t1 = time.perf_counter()
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(new - 1):
            logits, cache = model(nxt, cache, ids.shape[1])
            ids = torch.cat([ids, nxt], 1)
            nxt = logits[:, -1].argmax(-1, keepdim=True)
    else:
        logits, _ = model(ids)
        t1 = time.perf_counter()
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(new - 1):
            ids = torch.cat([ids, nxt], 1)
            logits, _ = model(ids)
            nxt = logits[:, -1].argmax(-1, keepdim=True)
    t2 = time.perf_counter()
    return prompt.shape[1] / (t1 - t0), (new - 1) / (t2 - t1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="char-tiny", choices=PRESETS)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Lm(**PRESETS[a.preset]).eval()
    prompt = torch.randint(0, PRESETS[a.preset]["vocab"], (1, a.prompt))
    with torch.inference_mode():
        run(model, prompt, 4, True)  # warm-up
        for cached in (False, True):
            best = max((run(model, prompt, a.new, cached) for _ in range(a.repeats)), key=lambda r: r[1])
            print(f"pytorch {'kv-cache  ' if cached else 'recompute '} {a.preset}: prompt {a.prompt}, new {a.new}: "
                  f"prefill {best[0]:.0f} tokens/s, decode {best[1]:.1f} tokens/s")


if __name__ == "__main__":
    main()
