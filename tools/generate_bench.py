#!/usr/bin/python3
"""Decode speed of the same models in PyTorch, for docs/generation.md.

The language model is stag's language_model (models/lm.hpp): RMSNorm, grouped-query attention
with rotary positions (rotate-half), SwiGLU, tied output; tokens/s when every new token
recomputes the whole prefix, and with PyTorch's usual key/value cache (torch.cat of the past
keys and values).

--seq2seq: the encoder-decoder of `stag-train seq2seq` (models/presets.hpp kTextSeq2SeqSmall:
pre-norm, d_model 128, 4 heads, d_ff 512, ReLU, 2+2 layers, sinusoidal positions, vocabularies
of 256), decoded greedily as stag-bench-generate does it: each batch of sources encoded once,
each decoder layer's cross-attention keys and values computed once from the memory, the
self-attention keys and values cached with torch.cat, one token per row per step.

Random weights: speed does not depend on them.

  OMP_NUM_THREADS=2 /usr/bin/python3 tools/generate_bench.py --preset char-tiny --prompt 64 --new 128
  OMP_NUM_THREADS=2 /usr/bin/python3 tools/generate_bench.py --seq2seq --src 32 --new 64 --batches 1,16

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


class Seq2Seq(torch.nn.Module):
    """Pre-norm Transformer encoder-decoder with biased linears, as models/blocks.hpp."""

    def __init__(self, vocab=256, d_model=128, heads=4, d_ff=512, layers=2):
        super().__init__()
        self.h, self.d = heads, d_model
        self.src_embed = torch.nn.Embedding(vocab, d_model)
        self.tgt_embed = torch.nn.Embedding(vocab, d_model)
        ln = lambda: torch.nn.LayerNorm(d_model)
        lin = torch.nn.Linear

        def attn():
            m = torch.nn.Module()
            m.q, m.k, m.v, m.o = (lin(d_model, d_model) for _ in range(4))
            return m

        def ffn():
            return torch.nn.Sequential(lin(d_model, d_ff), torch.nn.ReLU(), lin(d_ff, d_model))

        self.enc = torch.nn.ModuleList()
        for _ in range(layers):
            m = torch.nn.Module()
            m.n1, m.att, m.n2, m.ffn = ln(), attn(), ln(), ffn()
            self.enc.append(m)
        self.dec = torch.nn.ModuleList()
        for _ in range(layers):
            m = torch.nn.Module()
            m.n1, m.self_att, m.n2, m.cross, m.n3, m.ffn = ln(), attn(), ln(), attn(), ln(), ffn()
            self.dec.append(m)
        self.enc_norm, self.dec_norm = ln(), ln()
        self.generator = lin(d_model, vocab)

    def positions(self, start, t):
        pos = torch.arange(start, start + t, dtype=torch.float32)[:, None]
        inv = torch.exp(-math.log(10000.0) * torch.arange(0, self.d, 2, dtype=torch.float32) / self.d)
        ang = pos * inv[None, :]
        return torch.stack([ang.sin(), ang.cos()], -1).reshape(t, self.d)

    def heads(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.d // self.h).transpose(1, 2)

    def attend(self, q, k, v, keep=None, causal=False):
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if keep is not None:
            s = s.masked_fill(~keep, float("-inf"))
        if causal:
            t, tk = s.shape[-2:]
            s = s.masked_fill(~torch.ones(t, tk, dtype=torch.bool).tril(tk - t), float("-inf"))
        a = s.softmax(-1) @ v
        b, h, t, dh = a.shape
        return a.transpose(1, 2).reshape(b, t, h * dh)

    def encode(self, src, keep):
        """Memory keys and values per decoder layer, and the mask [B, 1, 1, S]."""
        x = self.src_embed(src) * math.sqrt(self.d) + self.positions(0, src.shape[1])
        k4 = keep[:, None, None, :]
        for m in self.enc:
            h = m.n1(x)
            x = x + m.att.o(self.attend(self.heads(m.att.q(h)), self.heads(m.att.k(h)), self.heads(m.att.v(h)), k4))
            x = x + m.ffn(m.n2(x))
        x = self.enc_norm(x)
        return [(self.heads(m.cross.k(x)), self.heads(m.cross.v(x))) for m in self.dec], k4

    def step(self, ids, start, memory, k4, cache):
        y = self.tgt_embed(ids) * math.sqrt(self.d) + self.positions(start, ids.shape[1])
        new_cache = []
        for i, m in enumerate(self.dec):
            h = m.n1(y)
            k, v = self.heads(m.self_att.k(h)), self.heads(m.self_att.v(h))
            if cache[i] is not None:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            new_cache.append((k, v))
            y = y + m.self_att.o(self.attend(self.heads(m.self_att.q(h)), k, v, causal=True))
            h = m.n2(y)
            y = y + m.cross.o(self.attend(self.heads(m.cross.q(h)), memory[i][0], memory[i][1], k4))
            y = y + m.ffn(m.n3(y))
        return self.generator(self.dec_norm(y)), new_cache


def run_seq2seq(model, src, new):
    """Encode seconds and greedy decode seconds of `new` steps (no early <eos>), as stag's."""
    keep = torch.ones_like(src, dtype=torch.bool)
    t0 = time.perf_counter()
    memory, k4 = model.encode(src, keep)
    t1 = time.perf_counter()
    ids = torch.full((src.shape[0], 1), 2, dtype=torch.long)  # <bos>
    cache = [None] * len(model.dec)
    for t in range(new):
        logits, cache = model.step(ids, t, memory, k4, cache)
        ids = logits[:, -1, 4:].argmax(-1, keepdim=True) + 4
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


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
    ap.add_argument("--seq2seq", action="store_true", help="the encoder-decoder instead of the LM")
    ap.add_argument("--src", type=int, default=32, help="--seq2seq: source ids per row")
    ap.add_argument("--batches", default="1,16", help="--seq2seq: batch sizes")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.seq2seq:
        model = Seq2Seq().eval()
        with torch.inference_mode():
            for b in (int(x) for x in a.batches.split(",")):
                src = torch.randint(4, 256, (b, a.src))
                run_seq2seq(model, src, 4)  # warm-up
                enc, dec = min((run_seq2seq(model, src, a.new) for _ in range(a.repeats)), key=lambda r: r[1])
                print(f"pytorch seq2seq batch {b}: encode {1e3 * enc:.2f} ms ({b} sources of {a.src} ids), "
                      f"decode {b * a.new / dec:.1f} tokens/s ({b} rows x {a.new} steps, {1e3 * dec / a.new:.3f} ms/step)")
        return
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
