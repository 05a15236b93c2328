#!/usr/bin/python3
# Makes the PyTorch golden files under tests/golden/ that models/test_golden.cpp compares stag's
# models with: hand-written PyTorch modules named and laid out like stag's parameters (and
# torch.nn.MultiheadAttention for the attention goldens), run forward and backward in float64.
# To add a case: write a make_<case>() returning (tensors, metadata) and list it in CASES.
#
# Usage: /usr/bin/python3 tools/make_goldens.py           (rewrites tests/golden/*.safetensors)
#        /usr/bin/python3 tools/make_goldens.py --check   (exit 1 if a committed file differs)
# Needs PyTorch (Debian's python3-torch 1.13 works); CI only reads the committed files.
#
# File format: safetensors (8-byte little-endian header length, a JSON header, raw little-endian
# data), written by the few lines below. Tensor names: "input/<name>" (graph inputs),
# "param/<name>" (parameters), "output/<name>" (named graph outputs such as logits), "loss"
# (the graph's scalar result), "grad/<name>" (the loss's gradient for each parameter and for
# float inputs). __metadata__ holds the case's config as strings.
import json
import math
import struct
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "golden"
F64 = torch.float64
torch.set_default_dtype(F64)

DTYPE_NAMES = {torch.float64: "F64", torch.float32: "F32", torch.int32: "I32", torch.int64: "I64", torch.bool: "BOOL"}


def safetensors_bytes(tensors, metadata):
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        a = t.numpy()
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


# ---- building blocks, mirroring stag's names and layouts ---------------------------------------


def masked_softmax(scores, keep):
    """softmax over the last dim where keep is True; NOTE: a row with nothing kept gives zeros
    (stag's rule), where PyTorch's own masked attention gives NaN."""
    keep = keep.expand_as(scores)
    m = scores.masked_fill(~keep, float("-inf")).amax(-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m)).detach()
    e = torch.exp(scores - m) * keep
    s = e.sum(-1, keepdim=True)
    return e / torch.where(s > 0, s, torch.ones_like(s))


class MultiHeadAttention(nn.Module):
    """stag::multi_head_attention: w_q, w_k, w_v, w_o as nn.Linear(d, d)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, xq, xkv, keep):  # keep: bool, broadcasts to [B, Sq, Sk]; True = attend
        b, sq, d = xq.shape
        sk, h = xkv.shape[1], self.heads
        dh = d // h
        q = self.w_q(xq).view(b, sq, h, dh).transpose(1, 2)
        k = self.w_k(xkv).view(b, sk, h, dh).transpose(1, 2)
        v = self.w_v(xkv).view(b, sk, h, dh).transpose(1, 2)
        w = masked_softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), keep.unsqueeze(1))
        return self.w_o((w @ v).transpose(1, 2).reshape(b, sq, d)), w


class FeedForward(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x):
        return self.w_2(F.relu(self.w_1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, d_ff, pre_norm):
        super().__init__()
        self.pre_norm = pre_norm
        self.self_attn = MultiHeadAttention(d, heads)
        self.ffn = FeedForward(d, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)

    def forward(self, x, keep):
        if not self.pre_norm:
            x = self.norm1(x + self.self_attn(x, x, keep)[0])
            return self.norm2(x + self.ffn(x))
        h = self.norm1(x)
        x = x + self.self_attn(h, h, keep)[0]
        return x + self.ffn(self.norm2(x))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, d_ff, pre_norm):
        super().__init__()
        self.pre_norm = pre_norm
        self.self_attn, self.cross_attn = MultiHeadAttention(d, heads), MultiHeadAttention(d, heads)
        self.ffn = FeedForward(d, d_ff)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d, eps=1e-5) for _ in range(3))

    def forward(self, y, memory, self_keep, cross_keep):
        if not self.pre_norm:
            y = self.norm1(y + self.self_attn(y, y, self_keep)[0])
            y = self.norm2(y + self.cross_attn(y, memory, cross_keep)[0])
            return self.norm3(y + self.ffn(y))
        h = self.norm1(y)
        y = y + self.self_attn(h, h, self_keep)[0]
        y = y + self.cross_attn(self.norm2(y), memory, cross_keep)[0]
        return y + self.ffn(self.norm3(y))


class Stack(nn.Module):
    """Layers named 0, 1, ... and an optional final LayerNorm named norm (stag's scopes)."""

    def __init__(self, layers, final_norm_dim=None):
        super().__init__()
        for i, layer in enumerate(layers):
            self.add_module(str(i), layer)
        self.n = len(layers)
        self.norm = nn.LayerNorm(final_norm_dim, eps=1e-5) if final_norm_dim else None

    def layers(self):
        return [getattr(self, str(i)) for i in range(self.n)]


def sinusoidal_positions(length, d):
    """The Annotated Transformer's table: pe[p, 2i] = sin(p w_i), pe[p, 2i+1] = cos(p w_i)."""
    pe = torch.zeros(length, d)
    pos = torch.arange(length, dtype=F64).unsqueeze(1)
    w = torch.exp(torch.arange(0, d, 2, dtype=F64) * (-math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(pos * w)
    pe[:, 1::2] = torch.cos(pos * w)
    return pe


def masked_mean(x, keep):
    w = keep.to(x.dtype).unsqueeze(-1)
    count = w.sum(1)
    return (x * w).sum(1) / torch.where(count == 0, torch.ones_like(count), count)


def causal(length):
    return torch.ones(length, length, dtype=torch.bool).tril()


# ---- weights and inputs ---------------------------------------------------------------------


def init_weights(module, seed):
    """Deterministic, non-trivial values: norms' gains near 1, small biases, scaled matrices."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            r = torch.randn(p.shape, generator=gen, dtype=F64)
            if p.dim() == 1 and name.endswith("bias"):
                p.copy_(0.1 * r)
            elif p.dim() == 1:
                p.copy_(1 + 0.1 * r)
            else:
                p.copy_(r / math.sqrt(p.shape[1]))


def pack(module, inputs, outputs, loss, float_inputs=()):
    """The tensors of a golden file; call after loss.backward()."""
    t = {f"input/{k}": v for k, v in inputs.items()}
    for name, p in module.named_parameters():
        t[f"param/{name}"] = p
    for k, v in outputs.items():
        t[f"output/{k}"] = v
    t["loss"] = loss
    for name, p in module.named_parameters():
        t[f"grad/{name}"] = p.grad
    for k in float_inputs:
        t[f"grad/{k}"] = inputs[k].grad
    return t


def float_input(gen, *shape):
    return torch.randn(shape, generator=gen, dtype=F64).requires_grad_()


def keep_from_lengths(lengths, length):
    return torch.arange(length).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)


def ids(gen, vocab, *shape):
    return torch.randint(0, vocab, shape, generator=gen, dtype=torch.int32)


# ---- cases ----------------------------------------------------------------------------------


def make_mha_self():
    """Self-attention with padding & causal masks against torch.nn.MultiheadAttention."""
    d, heads, b, s = 6, 2, 3, 5
    gen = torch.Generator().manual_seed(101)
    x, w = float_input(gen, b, s, d), torch.randn(b, s, d, generator=gen)
    keep = keep_from_lengths([5, 3, 1], s)  # right padding: every query row keeps key 0
    ours = nn.Module()
    ours.mha = MultiHeadAttention(d, heads)
    init_weights(ours, 1)
    ref = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
    m = ours.mha
    with torch.no_grad():  # nn.MultiheadAttention packs q, k, v into in_proj
        ref.in_proj_weight.copy_(torch.cat([m.w_q.weight, m.w_k.weight, m.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([m.w_q.bias, m.w_k.bias, m.w_v.bias]))
        ref.out_proj.weight.copy_(m.w_o.weight)
        ref.out_proj.bias.copy_(m.w_o.bias)
    # NOTE: nn.MultiheadAttention's masks say True = masked, stag's say True = keep.
    out, weights = ref(x, x, x, key_padding_mask=~keep, attn_mask=~causal(s), need_weights=True,
                       average_attn_weights=False)
    loss = (out * w).sum()
    loss.backward()
    ours_out, ours_w = m(x.detach(), x.detach(), keep.unsqueeze(1) & causal(s).unsqueeze(0))
    assert torch.allclose(ours_out, out, atol=1e-12) and torch.allclose(ours_w, weights, atol=1e-12)
    t = {"input/x": x, "input/w": w, "input/keep": keep}
    for i, part in enumerate(["w_q", "w_k", "w_v"]):
        t[f"param/mha.{part}.weight"] = ref.in_proj_weight[i * d:(i + 1) * d]
        t[f"param/mha.{part}.bias"] = ref.in_proj_bias[i * d:(i + 1) * d]
    t["param/mha.w_o.weight"], t["param/mha.w_o.bias"] = ref.out_proj.weight, ref.out_proj.bias
    t["output/out"], t["output/weights"], t["loss"] = out, weights, loss
    for i, part in enumerate(["w_q", "w_k", "w_v"]):
        t[f"grad/mha.{part}.weight"] = ref.in_proj_weight.grad[i * d:(i + 1) * d]
        t[f"grad/mha.{part}.bias"] = ref.in_proj_bias.grad[i * d:(i + 1) * d]
    t["grad/mha.w_o.weight"], t["grad/mha.w_o.bias"] = ref.out_proj.weight.grad, ref.out_proj.bias.grad
    t["grad/x"] = x.grad
    return t, {"d_model": d, "heads": heads, "mask": "padding & causal", "reference": "nn.MultiheadAttention"}


def make_mha_cross():
    """Cross-attention (q_len 3 != k_len 5) with a key padding mask against nn.MultiheadAttention."""
    d, heads, b, sq, sk = 6, 3, 2, 3, 5
    gen = torch.Generator().manual_seed(102)
    xq, mem, w = float_input(gen, b, sq, d), float_input(gen, b, sk, d), torch.randn(b, sq, d, generator=gen)
    keep = keep_from_lengths([4, 2], sk)
    ours = nn.Module()
    ours.mha = MultiHeadAttention(d, heads)
    init_weights(ours, 2)
    ref = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
    m = ours.mha
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([m.w_q.weight, m.w_k.weight, m.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([m.w_q.bias, m.w_k.bias, m.w_v.bias]))
        ref.out_proj.weight.copy_(m.w_o.weight)
        ref.out_proj.bias.copy_(m.w_o.bias)
    out, weights = ref(xq, mem, mem, key_padding_mask=~keep, need_weights=True, average_attn_weights=False)
    loss = (out * w).sum()
    loss.backward()
    t = {"input/xq": xq, "input/memory": mem, "input/w": w, "input/keep": keep}
    for i, part in enumerate(["w_q", "w_k", "w_v"]):
        t[f"param/mha.{part}.weight"] = ref.in_proj_weight[i * d:(i + 1) * d]
        t[f"param/mha.{part}.bias"] = ref.in_proj_bias[i * d:(i + 1) * d]
    t["param/mha.w_o.weight"], t["param/mha.w_o.bias"] = ref.out_proj.weight, ref.out_proj.bias
    t["output/out"], t["output/weights"], t["loss"] = out, weights, loss
    for i, part in enumerate(["w_q", "w_k", "w_v"]):
        t[f"grad/mha.{part}.weight"] = ref.in_proj_weight.grad[i * d:(i + 1) * d]
        t[f"grad/mha.{part}.bias"] = ref.in_proj_bias.grad[i * d:(i + 1) * d]
    t["grad/mha.w_o.weight"], t["grad/mha.w_o.bias"] = ref.out_proj.weight.grad, ref.out_proj.bias.grad
    t["grad/xq"], t["grad/memory"] = xq.grad, mem.grad
    return t, {"d_model": d, "heads": heads, "mask": "key padding", "reference": "nn.MultiheadAttention"}


def make_encoder_layer(pre_norm, seed):
    d, heads, d_ff, b, s = 6, 2, 10, 3, 5
    gen = torch.Generator().manual_seed(seed)
    x, w = float_input(gen, b, s, d), torch.randn(b, s, d, generator=gen)
    keep = keep_from_lengths([5, 2, 0], s)  # the last sequence is all padding: zero weights
    m = nn.Module()
    m.enc = EncoderLayer(d, heads, d_ff, pre_norm)
    init_weights(m, seed)
    out = m.enc(x, keep.unsqueeze(1))
    loss = (out * w).sum()
    loss.backward()
    t = pack(m, {"x": x, "w": w, "keep": keep}, {"out": out}, loss, ["x"])
    return t, {"d_model": d, "heads": heads, "d_ff": d_ff, "norm": "pre" if pre_norm else "post", "eps": 1e-5}


class Classifier(nn.Module):
    def __init__(self, vocab, max_len, d, heads, d_ff, layers, classes, pre_norm):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.enc = Stack([EncoderLayer(d, heads, d_ff, pre_norm) for _ in range(layers)])
        self.final_norm = nn.LayerNorm(d, eps=1e-5) if pre_norm else None
        self.head = nn.Linear(d, classes)

    def forward(self, ids, keep, label):
        x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        for layer in self.enc.layers():
            x = layer(x, keep.unsqueeze(1))
        if self.final_norm is not None:
            x = self.final_norm(x)
        logits = self.head(masked_mean(x, keep))
        return logits, F.cross_entropy(logits, label.long())


def make_classifier():
    cfg = dict(vocab=11, max_len=8, d=6, heads=2, d_ff=10, layers=2, classes=3, pre_norm=False)
    b, s = 3, 5
    gen = torch.Generator().manual_seed(201)
    inputs = {"ids": ids(gen, cfg["vocab"], b, s), "keep": keep_from_lengths([5, 3, 0], s),
              "label": torch.tensor([2, 0, 1], dtype=torch.int32)}
    m = Classifier(**cfg)
    init_weights(m, 201)
    logits, loss = m(**inputs)
    loss.backward()
    return pack(m, inputs, {"logits": logits}, loss), cfg


class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, shared_vocab, d, heads, d_ff, enc_layers, dec_layers, pre_norm):
        super().__init__()
        self.shared, self.d = shared_vocab, d
        self.src_embed = nn.Embedding(src_vocab, d)
        self.tgt_embed = None if shared_vocab else nn.Embedding(tgt_vocab, d)
        self.encoder = Stack([EncoderLayer(d, heads, d_ff, pre_norm) for _ in range(enc_layers)], d if pre_norm else None)
        self.decoder = Stack([DecoderLayer(d, heads, d_ff, pre_norm) for _ in range(dec_layers)], d if pre_norm else None)
        self.generator = None if shared_vocab else nn.Linear(d, tgt_vocab)

    def forward(self, src, src_keep, tgt_in, tgt_keep, tgt_out):
        tgt_table = self.src_embed.weight if self.shared else self.tgt_embed.weight
        scale = math.sqrt(self.d)
        x = F.embedding(src.long(), self.src_embed.weight) * scale + sinusoidal_positions(src.shape[1], self.d)
        y = F.embedding(tgt_in.long(), tgt_table) * scale + sinusoidal_positions(tgt_in.shape[1], self.d)
        enc_keep = src_keep.unsqueeze(1)
        for layer in self.encoder.layers():
            x = layer(x, enc_keep)
        if self.encoder.norm is not None:
            x = self.encoder.norm(x)
        dec_keep = tgt_keep.unsqueeze(1) & causal(tgt_in.shape[1]).unsqueeze(0)
        for layer in self.decoder.layers():
            y = layer(y, x, dec_keep, enc_keep)
        if self.decoder.norm is not None:
            y = self.decoder.norm(y)
        logits = y @ tgt_table.t() if self.shared else self.generator(y)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1).long(), ignore_index=-100)
        return logits, loss


def make_transformer(shared_vocab, pre_norm, seed):
    vocab = 13 if shared_vocab else None
    cfg = dict(src_vocab=vocab or 13, tgt_vocab=vocab or 11, shared_vocab=shared_vocab, d=6, heads=2, d_ff=10,
               enc_layers=2, dec_layers=2, pre_norm=pre_norm)
    b, s, t = 2, 5, 4
    gen = torch.Generator().manual_seed(seed)
    tgt_keep = keep_from_lengths([4, 2], t)
    tgt_out = ids(gen, cfg["tgt_vocab"], b, t).masked_fill(~tgt_keep, -100)  # ignored at padding
    inputs = {"src": ids(gen, cfg["src_vocab"], b, s), "src_keep": keep_from_lengths([5, 3], s),
              "tgt_in": ids(gen, cfg["tgt_vocab"], b, t), "tgt_keep": tgt_keep, "tgt_out": tgt_out}
    m = Transformer(**cfg)
    init_weights(m, seed)
    logits, loss = m(**inputs)
    loss.backward()
    return pack(m, inputs, {"logits": logits}, loss), cfg


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_tables(length, head_dim, theta):
    """minimind's precompute_freqs_cis: cos/sin [S, Dh], each half repeated (rotate-half)."""
    freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=F64)[: head_dim // 2] / head_dim)
    angles = torch.outer(torch.arange(length, dtype=F64), freqs)
    return torch.cat([angles.cos(), angles.cos()], -1), torch.cat([angles.sin(), angles.sin()], -1)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d, heads, kv_heads, theta):
        super().__init__()
        self.h, self.kvh, self.dh, self.theta = heads, kv_heads, d // heads, theta
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x):  # minimind's layout: [B, S, H, Dh], rope on positions along dim 1
        b, s, d = x.shape
        q = self.q_proj(x).view(b, s, self.h, self.dh)
        k = self.k_proj(x).view(b, s, self.kvh, self.dh)
        v = self.v_proj(x).view(b, s, self.kvh, self.dh)
        cos, sin = rope_tables(s, self.dh, self.theta)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.h // self.kvh  # minimind's repeat_kv: kv head j serves query heads j*rep ...
        k = k[:, :, :, None, :].expand(b, s, self.kvh, rep, self.dh).reshape(b, s, self.h, self.dh)
        v = v[:, :, :, None, :].expand(b, s, self.kvh, rep, self.dh).reshape(b, s, self.h, self.dh)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        scores = scores + torch.full((s, s), float("-inf")).triu(1)  # minimind's causal mask
        out = (F.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, d)
        return self.o_proj(out)


class SwiGLU(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d, d_ff, bias=False)
        self.up_proj = nn.Linear(d, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlmBlock(nn.Module):
    def __init__(self, d, heads, kv_heads, d_ff, theta, eps):
        super().__init__()
        self.input_norm = RMSNorm(d, eps)
        self.self_attn = GroupedQueryAttention(d, heads, kv_heads, theta)
        self.post_attention_norm = RMSNorm(d, eps)
        self.mlp = SwiGLU(d, d_ff)

    def forward(self, x):
        x = x + self.self_attn(self.input_norm(x))
        return x + self.mlp(self.post_attention_norm(x))


class LanguageModel(nn.Module):
    def __init__(self, vocab, d, heads, kv_heads, d_ff, layers, theta, eps):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = Stack([LlmBlock(d, heads, kv_heads, d_ff, theta, eps) for _ in range(layers)])
        self.norm = RMSNorm(d, eps)

    def forward(self, ids, targets):
        x = self.embed_tokens(ids.long())
        for layer in self.layers.layers():
            x = layer(x)
        logits = self.norm(x) @ self.embed_tokens.weight.t()  # tied output projection
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long(), ignore_index=-100)
        return logits, loss


def make_lm():
    # theta 500 (not the default 1e6) so that a wrong or ignored theta shows; head_dim 4 gives
    # two rotation frequencies (1 and 500^-0.5).
    cfg = dict(vocab=17, d=16, heads=4, kv_heads=2, d_ff=12, layers=2, theta=500.0, eps=1e-5)
    b, s = 2, 7
    gen = torch.Generator().manual_seed(301)
    targets = ids(gen, cfg["vocab"], b, s)
    targets[0, 5:] = -100
    targets[1, 0] = -100
    inputs = {"ids": ids(gen, cfg["vocab"], b, s), "targets": targets}
    m = LanguageModel(**cfg)
    init_weights(m, 301)
    logits, loss = m(**inputs)
    loss.backward()
    return pack(m, inputs, {"logits": logits}, loss), cfg


CASES = {
    "mha_self": make_mha_self,
    "mha_cross": make_mha_cross,
    "encoder_post": lambda: make_encoder_layer(False, 111),
    "encoder_pre": lambda: make_encoder_layer(True, 112),
    "classifier": make_classifier,
    "transformer_pre": lambda: make_transformer(False, True, 401),
    "transformer_post_shared": lambda: make_transformer(True, False, 402),
    "lm": make_lm,
}


def main():
    check = "--check" in sys.argv[1:]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, make in CASES.items():
        tensors, meta = make()
        meta = {"case": name, "torch": torch.__version__, **meta}
        data = safetensors_bytes(tensors, meta)
        path = OUT_DIR / f"{name}.safetensors"
        if check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(path.name)
            continue
        path.write_bytes(data)
        print(f"{path.relative_to(ROOT)}: {len(tensors)} tensors, {len(data)} bytes, loss {tensors['loss'].item():.6f}")
    if check:
        print("stale: " + ", ".join(stale) if stale else "all golden files are up to date")
        sys.exit(1 if stale else 0)


if __name__ == "__main__":
    main()
