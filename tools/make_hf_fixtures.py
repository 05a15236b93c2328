#!/usr/bin/python3
# Makes the tiny Hugging Face model folders under tests/hf/ that models/test_hf.cpp loads with
# stag::hf::load: config.json and weights exactly as transformers' save_pretrained writes them
# for LlamaForCausalLM and Qwen2ForCausalLM (tensor names, [out, in] linear weights, BF16 / F16
# storage, a sharded set with model.safetensors.index.json) and as openai-community/gpt2's file
# holds GPT-2 (GPT2Model's names, Conv1D weights [in, out], F32, the attn.bias mask buffers,
# vocab.json + merges.txt), and reference.safetensors with the logits and a greedy
# continuation computed here in float64 by a PyTorch reference written to Hugging Face's
# published modelling code (modeling_llama.py, modeling_qwen2.py, modeling_gpt2.py): RMSNorm in
# the input's precision with the weight applied after, rotate_half RoPE with inv_freq =
# theta^(-2i/d) over cat(freqs, freqs), repeat_kv, softmax(q k^T / sqrt(d_head)) with a causal
# mask, down(silu(gate(x)) * up(x)), tied or untied lm_head; for GPT-2 learned positions,
# LayerNorm with bias, c_attn split into q, k, v, gelu_new.
#
# The reference runs on the weights as stored (rounded to BF16 / F16 first), so stag and it see
# the same numbers. It also fine-tunes the model for 20 AdamW steps on one batch and keeps the
# losses and the logits after them. The weights are random: committed test fixtures of a few
# tens of KiB, not a model.
#
# Usage: /usr/bin/python3 tools/make_hf_fixtures.py          (rewrites tests/hf/*)
#        /usr/bin/python3 tools/make_hf_fixtures.py --check  (exit 1 if a committed file differs)
#        /usr/bin/python3 tools/make_hf_fixtures.py --check-export DIR REFERENCE
#            (loads a folder stag wrote with hf::save / --export-hf into the reference and
#             compares its logits with REFERENCE's, within 1e-4)
# Needs PyTorch (Debian's python3-torch 1.13 works); CI only reads the committed files.
import json
import math
import struct
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "hf"
F64 = torch.float64

ST_NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
            torch.int32: "I32", torch.int64: "I64"}
ST_TYPES = {v: k for k, v in ST_NAMES.items()}


def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: the same 16 bits as int16
        return t.view(torch.int16).numpy().astype("<i2", copy=False).tobytes()
    a = t.numpy()
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def safetensors_bytes(tensors, metadata=None):
    """The safetensors format as the Rust crate writes it: tensors sorted by dtype size (largest
    first) then name, an 8-byte little-endian header length, JSON padded with spaces to 8."""
    header = {}
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    order = sorted(tensors, key=lambda n: (-tensors[n].element_size(), n))
    blobs, offset = [], 0
    for name in order:
        t = tensors[name]
        data = tensor_bytes(t)
        header[name] = {"dtype": ST_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def read_safetensors(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        data = bytearray(raw[8 + n + b:8 + n + end])
        dt = ST_TYPES[e["dtype"]]
        if dt == torch.bfloat16:
            t = torch.frombuffer(data, dtype=torch.int16).view(torch.bfloat16) if data else torch.empty(0, dtype=dt)
        else:
            t = torch.frombuffer(data, dtype=dt) if data else torch.empty(0, dtype=dt)
        out[name] = t.reshape(e["shape"])
    return out


# ---- a tiny byte-level BPE tokenizer.json (GPT-2's format) -----------------------------------------


def bytes_to_unicode():
    """GPT-2's table: every byte as a printable character (printable Latin-1 as itself, the rest
    from U+0100 on)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


TEXT = ("Once upon a time there was a little model that learned to read. It read the whole text "
        "of the fortunes, then it wrote a story of its own, and the story was not very good.")


def tiny_tokenizer(vocab_size, added):
    """A byte-level BPE with 256 byte tokens, merges learned greedily on TEXT (words split at
    spaces, a leading space written as G-dot, as GPT-2 does) until vocab_size - len(added) ids,
    then the added special tokens."""
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    words = [[b2u[c] for c in (w if i == 0 else " " + w).encode()] for i, w in enumerate(TEXT.split(" "))]
    merges = []
    while len(vocab) < vocab_size - len(added):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        (a, b), _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(f"{a} {b}")
        vocab[a + b] = len(vocab)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    added_tokens = []
    for content in added:
        added_tokens.append({"id": len(vocab), "content": content, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True})
        vocab[content] = len(vocab)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


# ---- the reference, after transformers' modeling_llama.py / modeling_qwen2.py --------------------


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_cos_sin(positions, dim, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).to(F64) / dim))
    freqs = positions.to(F64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x, n):
    b, kvh, s, d = x.shape
    return x if n == 1 else x[:, :, None].expand(b, kvh, n, s, d).reshape(b, kvh * n, s, d)


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu_new(x):
    """GPT-2's activation ("gelu_new"): GELU's tanh approximation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def forward_gpt2(cfg, w, ids):
    """Logits [B, S, V] in float64 for ids [B, S] (GPT2LMHeadModel, modeling_gpt2.py): learned
    positions, Pre-LN blocks with LayerNorm(weight, bias), Conv1D projections y = x @ W + b with
    W [in, out], q/k/v as the three thirds of c_attn, scores / sqrt(d_head) with a causal mask,
    c_proj(gelu_new(c_fc(x))), ln_f, a head tied to wte (or lm_head). Names with or without
    GPT2LMHeadModel's "transformer." prefix."""
    pre = "transformer." if "transformer.wte.weight" in w else ""
    d, h_n = cfg["n_embd"], cfg["n_head"]
    dh = d // h_n
    eps = cfg["layer_norm_epsilon"]
    b, s = ids.shape
    x = w[pre + "wte.weight"][ids] + w[pre + "wpe.weight"][torch.arange(s)]
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    conv1d = lambda t, p: t @ w[p + ".weight"] + w[p + ".bias"]
    for layer in range(cfg["n_layer"]):
        p = f"{pre}h.{layer}."
        a = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        q, k, v = (t.view(b, s, h_n, dh).transpose(1, 2) for t in conv1d(a, p + "attn.c_attn").split(d, dim=2))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        scores = scores.masked_fill(~causal, float("-inf"))
        o = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + conv1d(o, p + "attn.c_proj")
        m = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        x = x + conv1d(gelu_new(conv1d(m, p + "mlp.c_fc")), p + "mlp.c_proj")
    x = layer_norm(x, w[pre + "ln_f.weight"], w[pre + "ln_f.bias"], eps)
    head = w[pre + "wte.weight"] if cfg.get("tie_word_embeddings", True) else w["lm_head.weight"]
    return x @ head.T


def forward(cfg, w, ids):
    """Logits [B, S, V] in float64 for ids [B, S] (LlamaForCausalLM / Qwen2ForCausalLM /
    GPT2LMHeadModel)."""
    if cfg["model_type"] == "gpt2":
        return forward_gpt2(cfg, w, ids)
    h_n, kv_n = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg["hidden_size"]
    dh = d // h_n
    eps = cfg["rms_norm_eps"]
    b, s = ids.shape
    x = w["model.embed_tokens.weight"][ids]
    cos, sin = rope_cos_sin(torch.arange(s), dh, cfg["rope_theta"])
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        proj = lambda n: linear(a, w[p + f"self_attn.{n}.weight"], w.get(p + f"self_attn.{n}.bias"))
        q = proj("q_proj").view(b, s, h_n, dh).transpose(1, 2)
        k = proj("k_proj").view(b, s, kv_n, dh).transpose(1, 2)
        v = proj("v_proj").view(b, s, kv_n, dh).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, h_n // kv_n), repeat_kv(v, h_n // kv_n)
        scores = (q @ k.transpose(2, 3)) / math.sqrt(dh)
        scores = scores.masked_fill(~causal, float("-inf"))
        o = torch.softmax(scores, dim=-1) @ v
        o = o.transpose(1, 2).reshape(b, s, d)
        x = x + linear(o, w[p + "self_attn.o_proj.weight"])
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(linear(m, w[p + "mlp.gate_proj.weight"]))
        x = x + linear(g * linear(m, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def greedy(cfg, w, prompt, n):
    """n greedy tokens after prompt (full recomputation each step), and the smallest gap between
    the best and the second-best logit on the way (a tie would make the test depend on rounding)."""
    ids = list(prompt)
    gap = float("inf")
    for _ in range(n):
        last = forward(cfg, w, torch.tensor([ids]))[0, -1]
        top = torch.topk(last, 2).values
        gap = min(gap, (top[0] - top[1]).item())
        ids.append(int(last.argmax()))
    return ids[len(prompt):], gap


# ---- the cases ------------------------------------------------------------------------------------


def make_weights(cfg, gen, qkv_bias):
    d, v, f = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    dh = d // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * dh
    rand = lambda *shape, std: torch.randn(*shape, generator=gen, dtype=F64) * std
    # A tied head with large embeddings repeats the last token forever; 0.1 gives a varied
    # greedy continuation.
    emb_std = 0.1 if cfg["tie_word_embeddings"] else 1.0
    w = {"model.embed_tokens.weight": rand(v, d, std=emb_std), "model.norm.weight": 1 + rand(d, std=0.1)}
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        w[p + "input_layernorm.weight"] = 1 + rand(d, std=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + rand(d, std=0.1)
        for name, out in (("q_proj", d), ("k_proj", kv), ("v_proj", kv)):
            w[p + f"self_attn.{name}.weight"] = rand(out, d, std=d ** -0.5)
            if qkv_bias:
                w[p + f"self_attn.{name}.bias"] = rand(out, std=0.2)
        w[p + "self_attn.o_proj.weight"] = rand(d, d, std=d ** -0.5)
        w[p + "mlp.gate_proj.weight"] = rand(f, d, std=d ** -0.5)
        w[p + "mlp.up_proj.weight"] = rand(f, d, std=d ** -0.5)
        w[p + "mlp.down_proj.weight"] = rand(d, f, std=f ** -0.5)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = rand(v, d, std=d ** -0.5)
    return w


def make_gpt2_weights(cfg, gen):
    """GPT-2's tensors under GPT2Model's names (as openai-community/gpt2's model.safetensors
    has them), Conv1D weights [in, out]."""
    d, v, n_pos = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    f = cfg.get("n_inner") or 4 * d
    rand = lambda *shape, std: torch.randn(*shape, generator=gen, dtype=F64) * std
    w = {"wte.weight": rand(v, d, std=0.1), "wpe.weight": rand(n_pos, d, std=0.1),
         "ln_f.weight": 1 + rand(d, std=0.1), "ln_f.bias": rand(d, std=0.1)}
    for layer in range(cfg["n_layer"]):
        p = f"h.{layer}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = 1 + rand(d, std=0.1)
            w[p + ln + ".bias"] = rand(d, std=0.1)
        for name, fan_in, out in (("attn.c_attn", d, 3 * d), ("attn.c_proj", d, d), ("mlp.c_fc", d, f),
                                  ("mlp.c_proj", f, d)):
            w[p + name + ".weight"] = rand(fan_in, out, std=fan_in ** -0.5)
            w[p + name + ".bias"] = rand(out, std=0.2)
    return w


def gpt2_buffers(cfg):
    """The causal-mask buffers that GPT-2 checkpoints written by older transformers carry."""
    n = cfg["n_positions"]
    mask = torch.ones(n, n, dtype=torch.float32).tril().view(1, 1, n, n)
    return {f"h.{layer}.attn.bias": mask for layer in range(cfg["n_layer"])}


LLAMA = {
    # SmolLM-135M's config.json with small sizes; rope_theta and rms_norm_eps moved off the
    # defaults so that a loader ignoring them shows.
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 298, "eos_token_id": 299, "hidden_act": "silu", "hidden_size": 32,
    "initializer_range": 0.02, "intermediate_size": 48, "max_position_embeddings": 64,
    "mlp_bias": False, "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
    "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
    "rope_theta": 500.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.46.0", "use_cache": True, "vocab_size": 300,
}
# The Llama folder's tokenizer.json: 256 bytes, 42 merges, two special tokens (ids 298, 299).
LLAMA_ADDED = ["<|endoftext|>", "<|im_start|>"]
QWEN2 = {
    # Qwen2.5's config.json with small sizes, untied (as Qwen2.5-7B), q/k/v biases.
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 0,
    "eos_token_id": 3, "hidden_act": "silu", "hidden_size": 48, "initializer_range": 0.02,
    "intermediate_size": 40, "max_position_embeddings": 128, "max_window_layers": 3,
    "model_type": "qwen2", "num_attention_heads": 6, "num_hidden_layers": 3,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 128,
    "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.46.0",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 67,
}
GPT2 = {
    # openai-community/gpt2's config.json with small sizes, and an n_inner that is not 4 * n_embd
    # so that a loader ignoring it shows.
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 299, "embd_pdrop": 0.1, "eos_token_id": 299, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 24, "n_embd": 32, "n_head": 4,
    "n_inner": 40, "n_layer": 2, "n_positions": 24, "resid_pdrop": 0.1, "summary_activation": None,
    "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
    "summary_use_proj": True, "vocab_size": 300,
}
CASES = {
    # name: (config, storage dtype, shards, seed)
    "llama": (LLAMA, torch.bfloat16, 1, 501),
    "qwen2": (QWEN2, torch.float16, 2, 502),
    "gpt2": (GPT2, torch.float32, 1, 503),
}


def finetune(cfg, w, seed, steps=20):
    """Steps of torch.optim.AdamW (float64) from weights w on one batch of next-token targets:
    decay on matrices and embeddings only (stag's parameters: biases and norm gains have none),
    a tied head is the embedding tensor itself. Returns the batch, the loss before each step
    and the logits on the batch's ids after the last step."""
    gen = torch.Generator().manual_seed(seed + 2000)
    seq = torch.randint(0, cfg["vocab_size"], (2, 11), generator=gen)
    ids, targets = seq[:, :-1], seq[:, 1:].clone()
    targets[1, :3] = -100  # a prompt that is not trained on
    params = {k: t.clone().requires_grad_(True) for k, t in w.items()}
    decay = [t for t in params.values() if t.dim() >= 2]
    no_decay = [t for t in params.values() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = forward(cfg, params, ids)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                                 ignore_index=-100)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        after = forward(cfg, params, ids)
    return {"finetune/ids": ids.to(torch.int32), "finetune/targets": targets.to(torch.int32),
            "finetune/losses": torch.tensor(losses, dtype=F64), "finetune/logits": after}


def reference(cfg, w, seed):
    gen = torch.Generator().manual_seed(seed + 1000)
    v = cfg["vocab_size"]
    ids = torch.randint(0, v, (2, 11), generator=gen)
    logits = forward(cfg, w, ids)
    prompt = ids[0, :4].tolist()
    new, gap = greedy(cfg, w, prompt, 12)
    if gap < 1e-3:
        raise SystemExit(f"greedy continuation has a near tie ({gap}): change the seed")
    return {"ids": ids.to(torch.int32), "logits": logits,
            "greedy/prompt": torch.tensor(prompt, dtype=torch.int32),
            "greedy/new": torch.tensor(new, dtype=torch.int32), **finetune(cfg, w, seed)}, gap


def make_case(name):
    cfg, dtype, shards, seed = CASES[name]
    gen = torch.Generator().manual_seed(seed)
    gpt2 = cfg["model_type"] == "gpt2"
    w = make_gpt2_weights(cfg, gen) if gpt2 else make_weights(cfg, gen, cfg["model_type"] == "qwen2")
    stored = {k: t.to(dtype) for k, t in w.items()}
    w = {k: t.to(F64) for k, t in stored.items()}  # the reference sees the stored values
    files = {}
    if shards == 1:
        # GPT-2's file as openai-community/gpt2 has it: with the causal-mask buffers.
        extra = gpt2_buffers(cfg) if gpt2 else {}
        files["model.safetensors"] = safetensors_bytes({**stored, **extra}, {"format": "pt"})
    else:
        names = list(stored)
        per = math.ceil(len(names) / shards)
        weight_map, total = {}, 0
        for i in range(shards):
            part = names[i * per:(i + 1) * per]
            fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
            files[fname] = safetensors_bytes({n: stored[n] for n in part}, {"format": "pt"})
            for n in part:
                weight_map[n] = fname
                total += stored[n].numel() * stored[n].element_size()
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        files["model.safetensors.index.json"] = (json.dumps(index, indent=2) + "\n").encode()
    ref, gap = reference(cfg, w, seed)
    if name == "llama":
        # A tokeniser, and as end-of-sequence id the first token of the greedy continuation
        # that is new after two or more tokens, so that a test sees generation stop where
        # config.json says (not at the first step, not at the end).
        tokenizer = tiny_tokenizer(cfg["vocab_size"], LLAMA_ADDED)
        files["tokenizer.json"] = (json.dumps(tokenizer, indent=2, ensure_ascii=False) + "\n").encode()
        new = ref["greedy/new"].tolist()
        stops = [t for k, t in enumerate(new[:-1]) if k >= 2 and t not in new[:k]]
        if not stops:
            raise SystemExit("the greedy continuation repeats itself: change the seed")
        cfg = dict(cfg, eos_token_id=stops[0])
    if gpt2:
        # GPT-2's own tokeniser files: vocab.json (with <|endoftext|>, the last id) and
        # merges.txt, no tokenizer.json.
        tokenizer = tiny_tokenizer(cfg["vocab_size"], ["<|endoftext|>"])
        files["vocab.json"] = (json.dumps(tokenizer["model"]["vocab"], ensure_ascii=False) + "\n").encode()
        files["merges.txt"] = ("#version: 0.2\n" + "\n".join(tokenizer["model"]["merges"]) + "\n").encode()
    files["config.json"] = (json.dumps(cfg, indent=2) + "\n").encode()
    files["reference.safetensors"] = safetensors_bytes(ref, {"case": name, "torch": torch.__version__})
    return files, gap


def check_export(folder, reference_path):
    folder = Path(folder)
    cfg = json.loads((folder / "config.json").read_text())
    w = {k: t.to(F64) for k, t in read_safetensors(folder / "model.safetensors").items()}
    ref = read_safetensors(reference_path)
    got = forward(cfg, w, ref["ids"].long())
    err = (got - ref["logits"].to(F64)).abs().max().item()
    print(f"{folder}: {len(w)} tensors, max |logit difference| {err:.3g}")
    sys.exit(0 if err <= 1e-4 else 1)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--check-export"]:
        check_export(args[1], args[2])
    check = "--check" in args
    stale = []
    for name in CASES:
        files, gap = make_case(name)
        folder = OUT_DIR / name
        folder.mkdir(parents=True, exist_ok=True)
        for fname, data in files.items():
            path = folder / fname
            if check:
                if not path.exists() or path.read_bytes() != data:
                    stale.append(str(path.relative_to(ROOT)))
                continue
            path.write_bytes(data)
        if not check:
            size = sum(len(d) for d in files.values())
            print(f"tests/hf/{name}: {len(files)} files, {size} bytes, smallest greedy margin {gap:.4f}")
    if check:
        print("stale: " + ", ".join(stale) if stale else "all fixtures are up to date")
        sys.exit(1 if stale else 0)


if __name__ == "__main__":
    main()
