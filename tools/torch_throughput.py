#!/usr/bin/python3
"""PyTorch's training throughput for the model and batch shapes of a stag-train run, to print
next to the run's train_tokens_per_s (docs/training.md). It reads <run>/config.json (the preset's
dims and the run's flags), builds the same model in PyTorch (float32, same dropout, AdamW with the
run's settings and clipping) and times training steps on batches shaped like the run's:

  lm   B x max_len windows (token ids drawn uniformly: the cost does not depend on the ids)
  g2p  CMUdict words (data/npm/datasets-cmudict@0.2.3) in length-bucketed batches of batch_size;
       tokens are the real letters plus phonemes, as stag-train counts them
  classify: use tools/torch_classifier.py train, which trains on the real split.

Usage: /usr/bin/python3 tools/torch_throughput.py --run runs/lm [--steps 40] [--threads 2]
It re-executes itself with OpenBLAS (OpenMP) preloaded and 2 threads, like torch_classifier.py.
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_classifier import blas_in_use, reexec_with_blas  # noqa: E402


def modules(torch):
    nn, F = torch.nn, torch.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, d, eps):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rope(length, dh, theta):
        freqs = 1.0 / theta ** (torch.arange(0, dh, 2).float() / dh)
        ang = torch.outer(torch.arange(length).float(), freqs)
        return torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], -1)

    class Gqa(nn.Module):
        def __init__(self, d, heads, kv_heads, theta):
            super().__init__()
            self.h, self.kvh, self.dh, self.theta = heads, kv_heads, d // heads, theta
            self.q_proj = nn.Linear(d, d, bias=False)
            self.k_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
            self.v_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
            self.o_proj = nn.Linear(d, d, bias=False)

        def forward(self, x):
            b, s, d = x.shape
            q = self.q_proj(x).view(b, s, self.h, self.dh)
            k = self.k_proj(x).view(b, s, self.kvh, self.dh)
            v = self.v_proj(x).view(b, s, self.kvh, self.dh)
            cos, sin = rope(s, self.dh, self.theta)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            rep = self.h // self.kvh
            k = k[:, :, :, None, :].expand(b, s, self.kvh, rep, self.dh).reshape(b, s, self.h, self.dh)
            v = v[:, :, :, None, :].expand(b, s, self.kvh, rep, self.dh).reshape(b, s, self.h, self.dh)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.dh) + torch.full((s, s), float("-inf")).triu(1)
            return self.o_proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d))

    class Lm(nn.Module):
        """models/lm.hpp: minimind's block (RMSNorm, GQA + RoPE, SwiGLU), tied output."""

        def __init__(self, c):
            super().__init__()
            d, eps = c["d_model"], 1e-5
            self.embed = nn.Embedding(c["vocab"], d)
            self.blocks = nn.ModuleList()
            for _ in range(c["layers"]):
                blk = nn.Module()
                blk.n1, blk.attn, blk.n2 = RMSNorm(d, eps), Gqa(d, c["heads"], c["kv_heads"], c["rope_theta"]), RMSNorm(d, eps)
                blk.gate = nn.Linear(d, c["d_ff"], bias=False)
                blk.up = nn.Linear(d, c["d_ff"], bias=False)
                blk.down = nn.Linear(c["d_ff"], d, bias=False)
                self.blocks.append(blk)
            self.norm = RMSNorm(d, eps)

        def forward(self, ids, targets):
            x = self.embed(ids)
            for b in self.blocks:
                x = x + b.attn(b.n1(x))
                h = b.n2(x)
                x = x + b.down(F.silu(b.gate(h)) * b.up(h))
            logits = self.norm(x) @ self.embed.weight.t()
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def attention(q, k, v, keep, p, training):
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        w = scores.masked_fill(~keep, float("-inf")).softmax(-1)
        return F.dropout(w, p, training) @ v

    class Mha(nn.Module):
        def __init__(self, d, h, p):
            super().__init__()
            self.h, self.p = h, p
            self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d, d) for _ in range(4))

        def forward(self, xq, xkv, keep):  # keep broadcasts to [B, Sq, Sk]
            b, sq, d = xq.shape
            sk, h = xkv.shape[1], self.h
            sp = lambda t, s: t.view(b, s, h, d // h).transpose(1, 2)
            a = attention(sp(self.w_q(xq), sq), sp(self.w_k(xkv), sk), sp(self.w_v(xkv), sk), keep.unsqueeze(1), self.p,
                          self.training)
            return self.w_o(a.transpose(1, 2).reshape(b, sq, d))

    class Ffn(nn.Module):
        def __init__(self, d, f, p):
            super().__init__()
            self.w_1, self.w_2, self.p = nn.Linear(d, f), nn.Linear(f, d), p

        def forward(self, x):
            return self.w_2(F.dropout(F.relu(self.w_1(x)), self.p, self.training))

    class Seq2Seq(nn.Module):
        """models/transformer.hpp with pre_norm: scaled embeddings + sinusoids, Pre-LN layers."""

        def __init__(self, c):
            super().__init__()
            d, p, f, h = c["d_model"], c["dropout"], c["d_ff"], c["heads"]
            self.d, self.p, self.label_smoothing = d, p, c.get("label_smoothing", 0.0)
            self.src, self.tgt = nn.Embedding(c["src_vocab"], d), nn.Embedding(c["tgt_vocab"], d)
            self.enc = nn.ModuleList()
            for _ in range(c["enc_layers"]):
                m = nn.Module()
                m.n1, m.att, m.n2, m.ffn = nn.LayerNorm(d), Mha(d, h, p), nn.LayerNorm(d), Ffn(d, f, p)
                self.enc.append(m)
            self.dec = nn.ModuleList()
            for _ in range(c["dec_layers"]):
                m = nn.Module()
                m.n1, m.att, m.n2, m.cross, m.n3, m.ffn = (nn.LayerNorm(d), Mha(d, h, p), nn.LayerNorm(d), Mha(d, h, p),
                                                           nn.LayerNorm(d), Ffn(d, f, p))
                self.dec.append(m)
            self.enc_norm, self.dec_norm = nn.LayerNorm(d), nn.LayerNorm(d)
            self.gen = nn.Linear(d, c["tgt_vocab"])
            # stag's initialisation (ops/parameter/parameter.hpp): embeddings N(0, 0.02^2),
            # projection weights Xavier-uniform, biases 0 (norms: gain 1, bias 0, as PyTorch's).
            for m in self.modules():
                if isinstance(m, nn.Embedding):
                    nn.init.normal_(m.weight, 0.0, 0.02)
                elif isinstance(m, nn.Linear):
                    nn.init.xavier_uniform_(m.weight)
                    nn.init.zeros_(m.bias)

        def pe(self, s):
            pos = torch.arange(s).float().unsqueeze(1)
            w = torch.exp(torch.arange(0, self.d, 2).float() * (-math.log(10000.0) / self.d))
            pe = torch.zeros(s, self.d)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
            return pe

        def drop(self, t):
            return F.dropout(t, self.p, self.training)

        def encode(self, src, src_keep):
            x = self.drop(self.src(src) * math.sqrt(self.d) + self.pe(src.shape[1]))
            ek = src_keep.unsqueeze(1)
            for m in self.enc:
                h = m.n1(x)
                x = x + self.drop(m.att(h, h, ek))
                x = x + self.drop(m.ffn(m.n2(x)))
            return self.enc_norm(x)

        def decode(self, tgt_in, tgt_keep, memory, src_keep):  # logits at every target position
            y = self.drop(self.tgt(tgt_in) * math.sqrt(self.d) + self.pe(tgt_in.shape[1]))
            t = tgt_in.shape[1]
            dk = tgt_keep.unsqueeze(1) & torch.ones(t, t, dtype=torch.bool).tril().unsqueeze(0)
            ek = src_keep.unsqueeze(1)
            for m in self.dec:
                h = m.n1(y)
                y = y + self.drop(m.att(h, h, dk))
                y = y + self.drop(m.cross(m.n2(y), memory, ek))
                y = y + self.drop(m.ffn(m.n3(y)))
            return self.gen(self.dec_norm(y))

        def forward(self, src, src_keep, tgt_in, tgt_keep, tgt_out):
            logits = self.decode(tgt_in, tgt_keep, self.encode(src, src_keep), src_keep)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=-100,
                                   label_smoothing=self.label_smoothing)

    return Lm, Seq2Seq


def g2p_batches(torch, root, batch_size, max_len, seed):
    """Length-bucketed batches of CMUdict words (letters in, stress-free phonemes out)."""
    path = os.path.join(root, "data", "npm", "datasets-cmudict@0.2.3", "data", "dict.txt")
    pairs, phone_ids = [], {}
    with open(path, encoding="latin-1") as f:
        for line in f:
            if ";;;" in line[:3] or "  " not in line:
                continue
            word, phones = line.rstrip("\n").split("  ", 1)
            if "(" in word or not all(c.isalpha() or c == "'" for c in word):
                continue
            pairs.append(([4 + (ord(c) % 60) for c in word.lower()][:max_len],
                          [4 + phone_ids.setdefault(p.rstrip("012"), len(phone_ids)) for p in phones.split()][:max_len]))
    rng = random.Random(seed)
    rng.shuffle(pairs)
    out = []
    pool = 50 * batch_size
    for k in range(0, len(pairs), pool):
        part = sorted(pairs[k:k + pool], key=lambda p: max(len(p[0]), len(p[1]) + 1))
        out += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(out)
    for rows in out:
        s = max(len(r[0]) for r in rows)
        t = max(len(r[1]) for r in rows) + 1
        src = torch.zeros(len(rows), s, dtype=torch.long)
        tin = torch.zeros(len(rows), t, dtype=torch.long)
        tout = torch.full((len(rows), t), -100, dtype=torch.long)
        for i, (a, b) in enumerate(rows):
            src[i, :len(a)] = torch.tensor(a)
            tin[i, :len(b) + 1] = torch.tensor([2] + b)
            tout[i, :len(b) + 1] = torch.tensor(b + [3])
        yield (src, src != 0, tin, tout != -100, tout), int((src != 0).sum() + (tout != -100).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="stag-train's --out folder (config.json)")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    reexec_with_blas(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    with open(os.path.join(args.run, "config.json")) as f:
        cfg = json.load(f)
    task, c, run = cfg["task"], cfg["model"], cfg["run"]
    torch.manual_seed(1)
    Lm, Seq2Seq = modules(torch)
    if task == "lm":
        model = Lm(c)
        b, s = run["batch_size"], run["max_len"]
        batches = (((torch.randint(4, c["vocab"], (b, s)), torch.randint(4, c["vocab"], (b, s))), b * s)
                   for _ in iter(int, 1))
    elif task == "g2p":
        model = Seq2Seq(c)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        batches = g2p_batches(torch, root, run["batch_size"], run["max_len"], 1)
    else:
        sys.exit("classify: use tools/torch_classifier.py train")
    decay = [p for p in model.parameters() if p.dim() > 1]
    rest = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": run["weight_decay"]}, {"params": rest, "weight_decay": 0}],
                            lr=run["lr"], betas=(run["beta1"], run["beta2"]), eps=run["eps"])
    model.train()
    times, tokens = [], []
    for i, (inputs, n) in enumerate(batches):
        if i >= args.steps + 3:
            break
        t0 = time.perf_counter()
        loss = model(*inputs)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if run["clip_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), run["clip_norm"])
        opt.step()
        if i >= 3:  # the first steps allocate
            times.append(time.perf_counter() - t0)
            tokens.append(n)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, BLAS {blas_in_use()}; {task} preset "
          f"{cfg['preset']}, {len(times)} steps, median step {1e3 * statistics.median(times):.1f} ms")
    print(f"torch_train_tokens_per_s: {sum(tokens) / sum(times):.0f}")


if __name__ == "__main__":
    main()
