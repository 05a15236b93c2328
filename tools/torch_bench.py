#!/usr/bin/python3
"""The PyTorch side of bench.sh: the same three models as bench/model_*.cpp (cls, tf, gpt) at the
same shapes and thread count, timed the same way; prints `torch.<config>.<metric>: <value> <unit>`.
To add a model, add a module and a row to the builders in build_models, and mirror it in bench/
(the architectures must stay op for op the same).

Two variants of each model (--variant): `hand` (the default for one --config), written the way the
articles write them, and `modules`, built on PyTorch's own nn.TransformerEncoder(Layer) (cls) and
nn.Transformer (tf), whose eval-mode fast path (torch._transformer_encoder_layer_fwd, and for cls
with its padding mask nested tensors) runs under torch.inference_mode(). The modules variant's
metrics are named `torch.<config>_modules.<metric>`. gpt has no modules variant: PyTorch 1.13 has
no RoPE, RMSNorm or SwiGLU modules (it prints `torch.gpt_modules: n/a (...)`). Both variants use
stag's initialisation (init_like_stag). A third, `bf16`, is the hand-written model under
torch.autocast("cpu", dtype=torch.bfloat16) (`torch.<config>_bf16.<metric>`), the counterpart of
stag's *_bf16 configs (stag::autocast). --check-variants copies the hand models' weights into the
modules ones and prints the differences of their eval-mode losses (and gradients), and which
fast-path operators ran under inference_mode. The optimiser is AdamW's multi-tensor (foreach)
implementation unless --foreach 0.

Timing: each figure is the median of --steps (15) calls after --warmup (3) untimed ones, in a
fresh process. The first call pays one-off costs (the OpenMP and OpenBLAS thread pools start,
malloc grows its heap to the step's working set, AdamW allocates its moment buffers on its first
step, the first autograd graph is built); the next two let the allocator settle, and the median
of the 15 timed steps, not their mean, drops what outliers a shared machine adds. 3 is what stag's
own benchmark uses by default, too. --warmup-study checks that more does not change the figure: it
times the same --steps after 3, 10 and 30 warm-up steps, each in its own process, and prints
`torch.<config>.warmup_<n>.train_step_ms` (or infer_ms).

Run with Debian's python3 (torch 1.13): /usr/bin/python3 tools/torch_bench.py --threads 2.
Without --config (or with --config all) it runs every config, mode and variant (hand, modules,
bf16) in its own process (peak RSS per process), with OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
torch.set_num_threads all equal to --threads, and OpenBLAS (OpenMP build) preloaded as the BLAS:
Debian's default may be the reference BLAS. --variant all does the same for one --config.
"""
import argparse
import contextlib
import math
import os
import resource
import statistics
import subprocess
import sys
import time

OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"
CONFIGS = ["peak", "cls", "tf", "gpt"]
VARIANTS = ["hand", "modules", "bf16"]
WARMUP_STUDY = [3, 10, 30]
GPT_MODULES_NA = ("torch.gpt_modules: n/a (PyTorch 1.13 has no RoPE, RMSNorm or SwiGLU modules, so no "
                  "faithful nn-module variant of the gpt model exists)")


def emit(config, metric, value, unit, prefix=None):
    """prefix: None, or `schedule.<label>` (--label) or `warmup_<n>` (--warmup-study)."""
    name = f"{prefix}.{metric}" if prefix else metric
    print(f"torch.{config}.{name}: {value:.{3 if value < 10 else 1}f} {unit}", flush=True)


def metric_config(config, variant):
    return config if variant == "hand" or config == "peak" else f"{config}_{variant}"


def rss_peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def blas_in_use():
    with open("/proc/self/maps") as f:
        maps = f.read()
    if "openblas" in maps:
        return "openblas"
    return "reference" if "libblas" in maps else "unknown"


def time_steps(fn, warmup, steps):
    """Median wall and process CPU milliseconds of `steps` calls after `warmup` untimed ones."""
    wall, cpu = [], []
    for i in range(warmup + steps):
        w0, c0 = time.perf_counter(), time.process_time()
        fn(i)
        if i >= warmup:
            wall.append((time.perf_counter() - w0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(wall), statistics.median(cpu)


# ---- models (imported lazily: the driver process does not load torch) -------------------------

def build_models():
    import warnings
    import torch
    # Printed on each nested-tensor fast path of cls's modules variant in eval mode.
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors is in prototype stage")
    import torch.nn as nn
    import torch.nn.functional as F

    def attention(q, k, v, keep, p, training):
        # q [B, H, Sq, Dh], k/v [B, H, Sk, Dh], keep broadcasts to [B, H, Sq, Sk].
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if keep is not None:
            scores = scores.masked_fill(~keep, float("-inf"))
        w = F.dropout(scores.softmax(-1), p, training)
        return w @ v

    def split(x, h):
        b, s, d = x.shape
        return x.view(b, s, h, d // h).transpose(1, 2)

    def merge(x):
        b, h, s, dh = x.shape
        return x.transpose(1, 2).reshape(b, s, h * dh)

    class MultiHeadAttention(nn.Module):
        def __init__(self, d, h, p):
            super().__init__()
            self.h, self.p = h, p
            self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d, d) for _ in range(4))

        def forward(self, xq, xkv, keep):  # keep [B|1, Sq|1, Sk]
            q, k, v = split(self.w_q(xq), self.h), split(self.w_k(xkv), self.h), split(self.w_v(xkv), self.h)
            return self.w_o(merge(attention(q, k, v, keep.unsqueeze(1), self.p, self.training)))

    class FeedForward(nn.Module):
        def __init__(self, d, f, p):
            super().__init__()
            self.w_1, self.w_2, self.p = nn.Linear(d, f), nn.Linear(f, d), p

        def forward(self, x):
            return self.w_2(F.dropout(F.relu(self.w_1(x)), self.p, self.training))

    class EncoderLayer(nn.Module):
        def __init__(self, d, h, f, p, pre):
            super().__init__()
            self.self_attn, self.ffn = MultiHeadAttention(d, h, p), FeedForward(d, f, p)
            self.norm1, self.norm2, self.p, self.pre = nn.LayerNorm(d), nn.LayerNorm(d), p, pre

        def forward(self, x, keep):
            drop = lambda t: F.dropout(t, self.p, self.training)
            if not self.pre:  # Post-LN
                x = self.norm1(x + drop(self.self_attn(x, x, keep)))
                return self.norm2(x + drop(self.ffn(x)))
            h = self.norm1(x)
            x = x + drop(self.self_attn(h, h, keep))
            return x + drop(self.ffn(self.norm2(x)))

    class DecoderLayer(nn.Module):  # Pre-LN
        def __init__(self, d, h, f, p):
            super().__init__()
            self.self_attn, self.cross_attn = MultiHeadAttention(d, h, p), MultiHeadAttention(d, h, p)
            self.ffn, self.p = FeedForward(d, f, p), p
            self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)

        def forward(self, y, memory, self_keep, cross_keep):
            drop = lambda t: F.dropout(t, self.p, self.training)
            h = self.norm1(y)
            y = y + drop(self.self_attn(h, h, self_keep))
            y = y + drop(self.cross_attn(self.norm2(y), memory, cross_keep))
            return y + drop(self.ffn(self.norm3(y)))

    class Classifier(nn.Module):
        def __init__(self, vocab=8000, max_len=128, d=128, h=4, f=512, layers=1, classes=2, p=0.1):
            super().__init__()
            self.tok, self.pos, self.p = nn.Embedding(vocab, d), nn.Embedding(max_len, d), p
            self.enc = nn.ModuleList(EncoderLayer(d, h, f, p, pre=False) for _ in range(layers))
            self.head = nn.Linear(d, classes)

        def forward(self, ids, keep, label):
            s = ids.shape[1]
            x = F.dropout(self.tok(ids) + self.pos(torch.arange(s)), self.p, self.training)
            for layer in self.enc:
                x = layer(x, keep.unsqueeze(1))
            w = keep.unsqueeze(-1).to(x.dtype)  # masked mean over the real tokens
            pooled = (x * w).sum(1) / w.sum(1).clamp(min=1.0)
            return F.cross_entropy(self.head(pooled), label)

    def sinusoidal(length, d):
        pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
        angle = pos * torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
        return torch.stack([angle.sin(), angle.cos()], -1).view(length, d)

    def embed_pair(m, src, tgt_in):
        # Both Transformer variants: scaled token embeddings plus sinusoidal positions, dropout.
        drop = lambda z: F.dropout(z, m.p, m.training)
        x = drop(m.src_embed(src) * math.sqrt(m.d) + sinusoidal(src.shape[1], m.d))
        return x, drop(m.tgt_embed(tgt_in) * math.sqrt(m.d) + sinusoidal(tgt_in.shape[1], m.d))

    class Transformer(nn.Module):
        def __init__(self, src_vocab=1000, tgt_vocab=1000, d=512, h=8, f=2048, n_enc=6, n_dec=6, p=0.1):
            super().__init__()
            self.d, self.p = d, p
            self.src_embed, self.tgt_embed = nn.Embedding(src_vocab, d), nn.Embedding(tgt_vocab, d)
            self.encoder = nn.ModuleList(EncoderLayer(d, h, f, p, pre=True) for _ in range(n_enc))
            self.decoder = nn.ModuleList(DecoderLayer(d, h, f, p) for _ in range(n_dec))
            self.enc_norm, self.dec_norm = nn.LayerNorm(d), nn.LayerNorm(d)
            self.generator = nn.Linear(d, tgt_vocab)

        def forward(self, src, src_keep, tgt_in, tgt_keep, tgt_out):
            x, y = embed_pair(self, src, tgt_in)
            t = tgt_in.shape[1]
            enc_keep = src_keep.unsqueeze(1)  # [B, 1, S]
            for layer in self.encoder:
                x = layer(x, enc_keep)
            x = self.enc_norm(x)
            causal = torch.ones(t, t, dtype=torch.bool).tril()
            dec_keep = tgt_keep.unsqueeze(1) & causal.unsqueeze(0)  # [B, T, T]
            for layer in self.decoder:
                y = layer(y, x, dec_keep, enc_keep)
            logits = self.generator(self.dec_norm(y))
            return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=-100)

    class RMSNorm(nn.Module):
        def __init__(self, d, eps):
            super().__init__()
            self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rotate_half(x):
        a, b = x.chunk(2, -1)
        return torch.cat([-b, a], -1)

    class Block(nn.Module):  # minimind: RMSNorm, MHA with RoPE, RMSNorm, SwiGLU; no biases
        def __init__(self, d, h, f, eps=1e-5):
            super().__init__()
            self.h = h
            self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.gate_proj, self.up_proj = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
            self.down_proj = nn.Linear(f, d, bias=False)
            self.input_norm, self.post_attention_norm = RMSNorm(d, eps), RMSNorm(d, eps)

        def forward(self, x, keep, cos, sin):
            hx = self.input_norm(x)
            q, k, v = split(self.q_proj(hx), self.h), split(self.k_proj(hx), self.h), split(self.v_proj(hx), self.h)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            x = x + self.o_proj(merge(attention(q, k, v, keep, 0.0, self.training)))
            hx = self.post_attention_norm(x)
            return x + self.down_proj(F.silu(self.gate_proj(hx)) * self.up_proj(hx))

    class LanguageModel(nn.Module):
        def __init__(self, vocab=4096, d=256, h=8, f=1024, layers=4, theta=1e6):
            super().__init__()
            self.h, self.theta = h, theta
            self.embed_tokens = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(Block(d, h, f) for _ in range(layers))
            self.norm = RMSNorm(d, 1e-5)

        def forward(self, ids, targets):
            s, dh = ids.shape[1], self.embed_tokens.weight.shape[1] // self.h
            freqs = self.theta ** (-torch.arange(0, dh, 2, dtype=torch.float32) / dh)
            angle = torch.arange(s, dtype=torch.float32).unsqueeze(1) * freqs  # [S, Dh/2]
            cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)
            keep = torch.ones(s, s, dtype=torch.bool).tril()  # causal, broadcast over B, H
            x = self.embed_tokens(ids)
            for layer in self.layers:
                x = layer(x, keep, cos, sin)
            logits = self.norm(x) @ self.embed_tokens.weight.t()  # tied output projection
            return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)

    # ---- the same cls and tf models on PyTorch's own modules (--variant modules) ----

    class ModulesClassifier(nn.Module):
        def __init__(self, vocab=8000, max_len=128, d=128, h=4, f=512, layers=1, classes=2, p=0.1):
            super().__init__()
            self.tok, self.pos, self.p = nn.Embedding(vocab, d), nn.Embedding(max_len, d), p
            layer = nn.TransformerEncoderLayer(d, h, f, p, activation="relu", batch_first=True, norm_first=False)
            self.enc = nn.TransformerEncoder(layer, layers)  # enable_nested_tensor: the eval fast path
            self.head = nn.Linear(d, classes)

        def forward(self, ids, keep, label):
            s = ids.shape[1]
            x = F.dropout(self.tok(ids) + self.pos(torch.arange(s)), self.p, self.training)
            x = self.enc(x, src_key_padding_mask=~keep)  # True: padding
            if x.shape[1] < s:  # the nested-tensor fast path pads back only to the longest row
                x = F.pad(x, (0, 0, 0, s - x.shape[1]))
            w = keep.unsqueeze(-1).to(x.dtype)  # masked mean over the real tokens
            pooled = (x * w).sum(1) / w.sum(1).clamp(min=1.0)
            return F.cross_entropy(self.head(pooled), label)

    class ModulesTransformer(nn.Module):
        def __init__(self, src_vocab=1000, tgt_vocab=1000, d=512, h=8, f=2048, n_enc=6, n_dec=6, p=0.1):
            super().__init__()
            self.d, self.p = d, p
            self.src_embed, self.tgt_embed = nn.Embedding(src_vocab, d), nn.Embedding(tgt_vocab, d)
            # Pre-LN layers, and final LayerNorms on the encoder and the decoder (the hand model's
            # enc_norm and dec_norm).
            self.transformer = nn.Transformer(d, h, n_enc, n_dec, f, p, activation="relu", batch_first=True,
                                              norm_first=True)
            self.generator = nn.Linear(d, tgt_vocab)

        def forward(self, src, src_keep, tgt_in, tgt_keep, tgt_out):
            x, y = embed_pair(self, src, tgt_in)
            t = tgt_in.shape[1]
            src_pad = ~src_keep  # True: padding, not attended
            causal = ~torch.ones(t, t, dtype=torch.bool).tril()  # True: a later position, not attended
            y = self.transformer(x, y, tgt_mask=causal, src_key_padding_mask=src_pad,
                                 tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=src_pad)
            logits = self.generator(y)
            return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=-100)

    def init_like_stag(model):
        # stag's initialisers: xavier-uniform projections, zero biases, unit gains, N(0, 0.02)
        # embeddings (the loss then starts near log(vocab), as stag's does).
        for m in model.modules():
            if isinstance(m, nn.MultiheadAttention):  # in_proj_weight: w_q, w_k, w_v as one [3d, d]
                for block in m.in_proj_weight.data.chunk(3, 0):  # three d x d xavier bounds, not one
                    nn.init.xavier_uniform_(block)
                if m.in_proj_bias is not None:
                    nn.init.zeros_(m.in_proj_bias)  # out_proj is an nn.Linear: the branch below
            elif isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, 0.0, 0.02)
        return model

    def ids(shape, vocab, seed):
        return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))

    def keep_mask(batch, length, padded):
        keep = torch.ones(batch, length, dtype=torch.bool)
        keep[1::2, length - padded:] = False  # every other row ends in padding
        return keep

    def cls_inputs():
        return ids((32, 128), 8000, 1), keep_mask(32, 128, 32), torch.arange(32) % 2

    def tf_inputs():
        return (ids((8, 32), 1000, 2), keep_mask(8, 32, 0), ids((8, 32), 1000, 3), keep_mask(8, 32, 0),
                ids((8, 32), 1000, 4))

    def gpt_inputs():
        return ids((16, 128), 4096, 5), ids((16, 128), 4096, 6)

    # (config, variant) -> () -> (model, inputs)
    return {("cls", "hand"): lambda: (init_like_stag(Classifier()), cls_inputs()),
            ("cls", "modules"): lambda: (init_like_stag(ModulesClassifier()), cls_inputs()),
            ("tf", "hand"): lambda: (init_like_stag(Transformer()), tf_inputs()),
            ("tf", "modules"): lambda: (init_like_stag(ModulesTransformer()), tf_inputs()),
            ("gpt", "hand"): lambda: (init_like_stag(LanguageModel()), gpt_inputs()),
            # bf16: the hand-written models under torch.autocast("cpu", torch.bfloat16) (run_one)
            ("cls", "bf16"): lambda: (init_like_stag(Classifier()), cls_inputs()),
            ("tf", "bf16"): lambda: (init_like_stag(Transformer()), tf_inputs()),
            ("gpt", "bf16"): lambda: (init_like_stag(LanguageModel()), gpt_inputs())}


def variant_pairs(config, hand, mod):
    """The hand model's parameters next to the modules model's: a list of ([hand tensors], modules
    tensor) where the modules tensor is the hand tensors concatenated (q, k, v -> in_proj)."""
    pairs = []

    def same(h, m):  # Linear, LayerNorm, Embedding: weight (and bias)
        pairs.append(([h.weight], m.weight))
        if getattr(h, "bias", None) is not None:
            pairs.append(([h.bias], m.bias))

    def mha(h, m):
        pairs.append(([h.w_q.weight, h.w_k.weight, h.w_v.weight], m.in_proj_weight))
        pairs.append(([h.w_q.bias, h.w_k.bias, h.w_v.bias], m.in_proj_bias))
        same(h.w_o, m.out_proj)

    def ffn(h, m):
        same(h.ffn.w_1, m.linear1)
        same(h.ffn.w_2, m.linear2)

    def enc_layer(h, m):
        mha(h.self_attn, m.self_attn)
        ffn(h, m)
        same(h.norm1, m.norm1)
        same(h.norm2, m.norm2)

    if config == "cls":
        same(hand.tok, mod.tok)
        same(hand.pos, mod.pos)
        for h, m in zip(hand.enc, mod.enc.layers):
            enc_layer(h, m)
        same(hand.head, mod.head)
    else:
        same(hand.src_embed, mod.src_embed)
        same(hand.tgt_embed, mod.tgt_embed)
        for h, m in zip(hand.encoder, mod.transformer.encoder.layers):
            enc_layer(h, m)
        same(hand.enc_norm, mod.transformer.encoder.norm)
        for h, m in zip(hand.decoder, mod.transformer.decoder.layers):
            mha(h.self_attn, m.self_attn)
            mha(h.cross_attn, m.multihead_attn)
            ffn(h, m)
            same(h.norm1, m.norm1)
            same(h.norm2, m.norm2)
            same(h.norm3, m.norm3)
        same(hand.dec_norm, mod.transformer.decoder.norm)
        same(hand.generator, mod.generator)
    return pairs


# Matmul FLOPs of one forward pass, by formula (an independent check of stag's count, which
# walks its graph). A training step does each product three times: forward, dX and dW.
def forward_matmul_flops(config):
    lin = lambda tokens, i, o: 2 * tokens * i * o
    att = lambda b, h, sq, sk, dh: 2 * 2 * b * h * sq * sk * dh  # q k^T and w v
    if config == "cls":
        b, s, d, f = 32, 128, 128, 512
        return 4 * lin(b * s, d, d) + att(b, 4, s, s, d // 4) + 2 * lin(b * s, d, f) + lin(b, d, 2)
    if config == "tf":
        b, s, t, d, f, h = 8, 32, 32, 512, 2048, 8
        enc = 4 * lin(b * s, d, d) + att(b, h, s, s, d // h) + 2 * lin(b * s, d, f)
        dec = (4 * lin(b * t, d, d) + att(b, h, t, t, d // h) + 2 * lin(b * t, d, d) + 2 * lin(b * s, d, d)
               + att(b, h, t, s, d // h) + 2 * lin(b * t, d, f))
        return 6 * enc + 6 * dec + lin(b * t, d, 1000)
    b, s, d, f, h, v = 16, 128, 256, 1024, 8, 4096
    return 4 * (4 * lin(b * s, d, d) + att(b, h, s, s, d // h) + 3 * lin(b * s, d, f)) + lin(b * s, d, v)


def run_one(config, mode, variant, args):
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    prefix = args.prefix or (f"schedule.{args.label}" if args.label else None)
    if config == "peak":
        n = 2048 if args.device == "cpu" else 8192
        a, b = torch.randn(n, n, device=args.device), torch.randn(n, n, device=args.device)
        sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

        def mm(i):
            torch.mm(a, b)
            sync()
        ms, _ = time_steps(mm, 2, 10)
        emit("peak" if args.device == "cpu" else "cuda_peak", "matmul_gflops",
             2 * n ** 3 / 1e9 / (ms / 1e3), "GFLOP/s", prefix)
        if args.device == "cuda":
            a16, b16 = a.bfloat16(), b.bfloat16()
            ms, _ = time_steps(lambda i: (torch.mm(a16, b16), sync()), 2, 10)
            emit("cuda_peak", "matmul_bf16_gflops", 2 * n ** 3 / 1e9 / (ms / 1e3), "GFLOP/s", prefix)
        return
    name = metric_config(config, variant)
    model, inputs = build_models()[config, variant]()
    # --device cuda: everything on the GPU, each timed step ends with a synchronize; --compile:
    # torch.compile's default mode. Their metrics are torch.cuda_<config>.* and torch.compile_...
    dev = torch.device(args.device)
    model = model.to(dev)
    inputs = tuple(t.to(dev) for t in inputs)
    if args.compile:
        model = torch.compile(model)
    if args.device == "cuda":
        name = "cuda_" + name
    if args.compile:
        name = "compile_" + name
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    # The bf16 variant: PyTorch's autocast (matmuls in bf16, f32 master weights), as stag's
    # *_bf16 configs; the other variants run f32.
    autocast = (lambda: torch.autocast(args.device, dtype=torch.bfloat16)) if variant == "bf16" \
        else contextlib.nullcontext
    if mode == "train":
        model.train()
        decay = [p for p in model.parameters() if p.dim() >= 2]  # as stag: not biases, not gains
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=1e-4, weight_decay=0.01, foreach=bool(args.foreach))
        loss_box = [0.0]

        def step(i):
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = model(*inputs)
            loss.backward()
            opt.step()
            loss_box[0] = loss.item()

        ms, cpu = time_steps(step, args.warmup, args.steps)
        emit(name, "train_step_ms", ms, "ms", prefix)
        emit(name, "train_cpu_ms", cpu, "ms", prefix)
        if prefix:
            return
        flops = 3 * forward_matmul_flops(config)
        emit(name, "matmul_gflop_per_step", flops / 1e9, "GFLOP")
        emit(name, "matmul_gflops", flops / 1e9 / (ms / 1e3), "GFLOP/s")
        state = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values()
                    if torch.is_tensor(t) and t.dim() > 0)
        params = sum(p.numel() * p.element_size() for p in model.parameters())
        emit(name, "params_mib", (params + state) / 1048576.0, "MiB")
        emit(name, "rss_peak_mib", rss_peak_mib(), "MiB")
        emit(name, "loss", loss_box[0], "nats")
    else:
        model.eval()
        loss_box = [0.0]

        def forward(i):
            with torch.inference_mode(), autocast():
                loss_box[0] = model(*inputs)
            sync()

        ms, cpu = time_steps(forward, args.warmup, args.steps)
        if not math.isfinite(float(loss_box[0])):
            print(f"torch_bench: {name} infer: the loss is {float(loss_box[0])}", file=sys.stderr)
            sys.exit(1)
        emit(name, "infer_ms", ms, "ms", prefix)
        emit(name, "infer_cpu_ms", cpu, "ms", prefix)
        if prefix:
            return
        emit(name, "infer_matmul_gflops", forward_matmul_flops(config) / 1e9 / (ms / 1e3), "GFLOP/s")
        emit(name, "infer_rss_peak_mib", rss_peak_mib(), "MiB")


ONNX_INPUTS = {"cls": ["ids", "keep", "label"],
               "tf": ["src", "src_keep", "tgt_in", "tgt_keep", "tgt_out"],
               "gpt": ["ids", "targets"]}


def export_onnx(args):
    """The hand-written models exported by torch.onnx.export (opset 14) as DIR/<config>_torch.onnx
    with their inputs in DIR/<config>_torch/ (inputs.json and raw files), for tools/ort_bench.js:
    ONNX Runtime on PyTorch's own export, next to stag's (./bench.sh)."""
    import json
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    configs = ["cls", "tf", "gpt"] if args.config == "all" else [args.config]
    dtypes = {torch.int64: "int64", torch.int32: "int32", torch.bool: "bool", torch.float32: "float32"}
    for config in configs:
        model, inputs = build_models()[config, "hand"]()
        model.eval()
        out = os.path.join(args.export_onnx, f"{config}_torch")
        os.makedirs(out, exist_ok=True)
        path = out + ".onnx"
        with torch.no_grad():
            torch.onnx.export(model, tuple(inputs), path, opset_version=14,
                              input_names=ONNX_INPUTS[config], output_names=["loss"])
        listing = []
        for name, t in zip(ONNX_INPUTS[config], inputs):
            t = t.contiguous()
            t.numpy().tofile(os.path.join(out, name + ".bin"))
            listing.append({"name": name, "dtype": dtypes[t.dtype], "dims": list(t.shape),
                            "file": name + ".bin"})
        with open(os.path.join(out, "inputs.json"), "w") as f:
            json.dump(listing, f)
        print(f"torch.{config}.onnx_export: {path}", flush=True)
    return 0


def check_variants(args):
    """The hand models' weights copied into the modules ones; both in eval mode (no dropout): the
    losses under inference_mode (the modules' fast path) and with autograd (the path training takes),
    and the gradients (in float32, where rounding differs by up to ~1 % of a tensor's largest
    gradient in tf's encoder, and in float64, where they agree to ~1e-14). Prints `torch.check.<config>.<what>:
    <value>`; returns 1 past a loss difference of 1e-4 or a float64 gradient difference of 1e-9."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.set_num_threads(args.threads)
    builders, worst, worst_grad = build_models(), 0.0, 0.0
    for config in ("cls", "tf"):
        torch.manual_seed(1)
        hand, inputs = builders[config, "hand"]()
        mod, _ = builders[config, "modules"]()
        pairs = variant_pairs(config, hand, mod)
        covered = {id(m) for _, m in pairs}
        missing = [n for n, p in mod.named_parameters() if id(p) not in covered]
        if missing or len(pairs) != len(list(mod.parameters())) or \
                sum(len(h) for h, _ in pairs) != len(list(hand.parameters())):
            print(f"torch_bench: check {config}: the parameters do not pair up (missing {missing})",
                  file=sys.stderr)
            return 1
        with torch.no_grad():
            for h, m in pairs:
                m.copy_(torch.cat(h, 0))
        hand.eval(), mod.eval()
        out = lambda what, value: print(f"torch.check.{config}.{what}: {value}", flush=True)
        with torch.inference_mode():
            lh = hand(*inputs).item()
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                lm = mod(*inputs).item()
        fast = sorted({e.key for e in prof.key_averages()
                       if e.key in ("aten::_transformer_encoder_layer_fwd", "aten::_nested_tensor_from_mask",
                                    "aten::_native_multi_head_attention", "aten::to_padded_tensor")})
        out("infer_loss_hand", f"{lh:.7f}")
        out("infer_loss_modules", f"{lm:.7f}")
        out("infer_loss_abs_diff", f"{abs(lh - lm):.3g}")
        out("infer_fast_path_ops", " ".join(fast) or "none")

        def grads(dtype):  # eval mode with autograd: the path a training step takes, less dropout
            hand.to(dtype), mod.to(dtype)
            for p in list(hand.parameters()) + list(mod.parameters()):
                p.grad = None
            gh, gm = hand(*inputs), mod(*inputs)
            gh.backward(), gm.backward()
            rel = max(float((torch.cat([t.grad for t in h], 0) - m.grad).abs().max() /
                            torch.cat([t.grad for t in h], 0).abs().max().clamp(min=1e-30)) for h, m in pairs)
            return gh.item(), gm.item(), rel

        gh, gm, rel = grads(torch.float32)
        out("autograd_loss_abs_diff", f"{abs(gh - gm):.3g}")
        out("grad_max_rel_diff", f"{rel:.3g} (float32: rounding, see float64)")
        gh64, gm64, rel64 = grads(torch.float64)
        out("grad_max_rel_diff_float64", f"{rel64:.3g}")
        worst = max(worst, abs(lh - lm), abs(gh - gm), abs(gh64 - gm64))
        worst_grad = max(worst_grad, rel64)
        if not all(math.isfinite(x) for x in (lh, lm, gh, gm)):
            worst = math.inf
    good = worst <= 1e-4 and worst_grad <= 1e-9
    print(f"torch.check.verdict: {'ok' if good else 'DIFFERENT'} (largest loss difference {worst:.3g}, bound "
          f"1e-4; largest float64 gradient difference {worst_grad:.3g} of the largest gradient, bound 1e-9)",
          flush=True)
    return 0 if good else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="all", choices=["all"] + CONFIGS)
    ap.add_argument("--mode", default="both", choices=["both", "train", "infer"])
    ap.add_argument("--variant", default=None, choices=VARIANTS + ["all"],
                    help="hand (the default for one --config), modules (nn.Transformer*), or all: hand then "
                         "modules (the default without --config)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before the timed ones")
    ap.add_argument("--warmup-study", action="store_true",
                    help=f"time --steps after {', '.join(map(str, WARMUP_STUDY))} warm-up steps, each in its "
                         "own process: torch.<config>.warmup_<n>.<metric>")
    ap.add_argument("--label", default=None, help="name metrics <config>.schedule.<label>.<metric>")
    ap.add_argument("--prefix", default=None, help=argparse.SUPPRESS)  # warmup_<n>, for the study's children
    ap.add_argument("--foreach", type=int, default=1, choices=[0, 1],
                    help="AdamW's multi-tensor (foreach) implementation (1, the default) or its loop over "
                         "tensors (0)")
    ap.add_argument("--check-variants", action="store_true",
                    help="compare the hand and modules variants of cls and tf on the same weights and exit")
    ap.add_argument("--show-config", action="store_true", help="print torch.__config__.show() and exit")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: models, inputs and optimizer on the GPU (metrics torch.cuda_<config>.*)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model (metrics torch.compile_<config>.*)")
    ap.add_argument("--export-onnx", default=None, metavar="DIR",
                    help="export the hand-written models with torch.onnx.export (opset 14) into DIR, "
                         "with their inputs, for tools/ort_bench.js, and exit")
    args = ap.parse_args()
    variant = args.variant or ("all" if args.config == "all" else "hand")
    if args.warmup_study and args.label:
        ap.error("--warmup-study names its metrics warmup_<n>: it takes no --label")
    if args.warmup_study and args.config == "peak":
        ap.error("--warmup-study: peak's matmul has no warm-up steps to study")

    # The thread counts and the BLAS must be set before torch (and libgomp) load: set them and
    # start again when they are not.
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    if os.path.exists(OPENBLAS) and OPENBLAS not in env.get("LD_PRELOAD", ""):
        env["LD_PRELOAD"] = (OPENBLAS + " " + env.get("LD_PRELOAD", "")).strip()
    if any(os.environ.get(k) != env.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                     "OMP_WAIT_POLICY", "LD_PRELOAD")):
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env)

    if args.check_variants:
        return check_variants(args)
    if args.export_onnx:
        return export_onnx(args)

    if args.config != "all" and args.mode != "both" and variant != "all" and not args.warmup_study:
        if args.config == "gpt" and variant == "modules":
            print(GPT_MODULES_NA, flush=True)
            return 0
        import torch
        if args.show_config:
            print(torch.__config__.show())
        blas = blas_in_use()
        if blas != "openblas":
            print(f"torch_bench: warning: torch's BLAS is {blas}, not OpenBLAS; figures are not comparable",
                  file=sys.stderr)
        if args.config == "peak" and not args.label:
            print(f"torch.blas: {blas} (torch {torch.__version__})", flush=True)
        run_one(args.config, args.mode, variant, args)
        return 0

    # The driver: each config, variant (hand, then modules), mode (and warm-up count of the study)
    # in its own process.
    configs = CONFIGS if args.config == "all" else [args.config]
    if args.warmup_study:
        configs = [c for c in configs if c != "peak"]  # peak's matmul has no steps to warm up
    if args.config == "all" and not args.label and not args.warmup_study:
        print(f"torch.threads: {args.threads}", flush=True)
    variants = VARIANTS if variant == "all" else [variant]
    warmups = WARMUP_STUDY if args.warmup_study else [args.warmup]
    rc, first = 0, True
    for c in configs:
        for v in (["hand"] if c == "peak" else variants):  # peak is a matmul: no variants
            if c == "gpt" and v == "modules":
                print(GPT_MODULES_NA, flush=True)
                continue
            for m in (["train"] if c == "peak" else ["train", "infer"]):
                if args.mode not in ("both", m):
                    continue
                for w in warmups:
                    cmd = [sys.executable, os.path.abspath(__file__), "--config", c, "--mode", m, "--variant", v,
                           "--threads", str(args.threads), "--steps", str(args.steps), "--warmup", str(w),
                           "--foreach", str(args.foreach), "--device", args.device]
                    if args.compile:
                        cmd.append("--compile")
                    if args.warmup_study:
                        cmd += ["--prefix", f"warmup_{w}"]
                    elif args.label:
                        cmd += ["--label", args.label]
                    if args.show_config and first:
                        cmd.append("--show-config")
                    first = False
                    rc |= subprocess.run(cmd).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
