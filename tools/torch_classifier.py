#!/usr/bin/python3
"""stag's text classifier in PyTorch, for two checks of `stag-train classify`:

  check  loads a stag checkpoint (safetensors) into the equivalent PyTorch module and recomputes
         the logits that stag wrote with --dump-logits; prints the largest difference.
  train  trains the same model (same preset, same flags: lr, schedule, warmup, epochs, batch size,
         AdamW settings, clipping, dropout, bucketing) on the same tokenised split (--export-data),
         for one or more seeds; prints val/test accuracy and training tokens/s.

Usage (after `stag-train classify --export-data runs/classify/data.json --dump-logits
runs/classify/logits.json`):
  /usr/bin/python3 tools/torch_classifier.py check --run runs/classify
  /usr/bin/python3 tools/torch_classifier.py train --run runs/classify --seeds 1,2,3

Run it with Debian's python3 (torch 1.13). It re-executes itself with OpenBLAS (OpenMP build)
preloaded and OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = torch threads = --threads (default 2):
Debian's torch otherwise uses the reference BLAS, which would make the comparison unfair.
To mirror another preset or model change, keep Classifier below op for op equal to
models/classifier.hpp.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"


def reexec_with_blas(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    if os.path.exists(OPENBLAS) and OPENBLAS not in env.get("LD_PRELOAD", ""):
        env["LD_PRELOAD"] = (OPENBLAS + " " + env.get("LD_PRELOAD", "")).strip()
    if any(os.environ.get(k) != env.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "LD_PRELOAD")):
        # The script that was run (this module is also imported by torch_throughput.py).
        os.execve(sys.executable, [sys.executable, os.path.abspath(sys.argv[0])] + sys.argv[1:], env)


def blas_in_use():
    with open("/proc/self/maps") as f:
        maps = f.read()
    return "openblas" if "openblas" in maps else ("reference" if "libblas" in maps else "unknown")


def read_safetensors(path):
    """name -> numpy array, metadata (the few lines a safetensors reader needs)."""
    import numpy as np
    kinds = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64, "BOOL": np.bool_}
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=kinds[e["dtype"]]).reshape(e["shape"])
    return out, header.get("__metadata__", {})


def build(torch):
    nn, F = torch.nn, torch.nn.functional

    class MultiHeadAttention(nn.Module):
        """stag::multi_head_attention: nn.Linear projections w_q, w_k, w_v, w_o; dropout on the weights."""

        def __init__(self, d, heads, p):
            super().__init__()
            self.h, self.p = heads, p
            self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d, d) for _ in range(4))

        def forward(self, x, keep):  # keep [B, 1, S] bool, True = attend
            b, s, d = x.shape
            h, dh = self.h, d // self.h
            q, k, v = (w(x).view(b, s, h, dh).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v))
            scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(dh))
            keep4 = keep.unsqueeze(1)  # [B, 1, 1, S]
            # NOTE: stag gives a fully masked row zeros; no row is fully masked here (every text has
            # at least one token), so masked_fill + softmax is the same function.
            w = scores.masked_fill(~keep4, float("-inf")).softmax(-1)
            w = F.dropout(w, self.p, self.training)
            return self.w_o((w @ v).transpose(1, 2).reshape(b, s, d))

    class FeedForward(nn.Module):
        def __init__(self, d, d_ff, p):
            super().__init__()
            self.w_1, self.w_2, self.p = nn.Linear(d, d_ff), nn.Linear(d_ff, d), p

        def forward(self, x):
            return self.w_2(F.dropout(F.relu(self.w_1(x)), self.p, self.training))

    class EncoderLayer(nn.Module):
        def __init__(self, d, heads, d_ff, p, pre_norm):
            super().__init__()
            self.self_attn, self.ffn = MultiHeadAttention(d, heads, p), FeedForward(d, d_ff, p)
            self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
            self.p, self.pre_norm = p, pre_norm

        def forward(self, x, keep):
            drop = lambda t: F.dropout(t, self.p, self.training)
            if not self.pre_norm:
                x = self.norm1(x + drop(self.self_attn(x, keep)))
                return self.norm2(x + drop(self.ffn(x)))
            x = x + drop(self.self_attn(self.norm1(x), keep))
            return x + drop(self.ffn(self.norm2(x)))

    class Classifier(nn.Module):
        """models/classifier.hpp: parameter names and layouts as in stag's checkpoints."""

        def __init__(self, vocab, max_len, d_model, heads, d_ff, layers, classes, dropout, pre_norm):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(max_len, d_model)
            self.enc = nn.ModuleDict({str(i): EncoderLayer(d_model, heads, d_ff, dropout, pre_norm) for i in range(layers)})
            self.final_norm = nn.LayerNorm(d_model, eps=1e-5) if pre_norm else None
            self.head = nn.Linear(d_model, classes)
            self.p = dropout
            for name, w in self.named_parameters():  # stag's initialisers (runtime/params.hpp)
                if name in ("tok.weight", "pos.weight"):
                    nn.init.normal_(w, 0.0, 0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(w)
                elif "norm" in name:
                    nn.init.ones_(w)
                else:
                    nn.init.xavier_uniform_(w)

        def forward(self, ids, keep):
            x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
            x = F.dropout(x, self.p, self.training)
            for i in range(len(self.enc)):
                x = self.enc[str(i)](x, keep.unsqueeze(1))
            if self.final_norm is not None:
                x = self.final_norm(x)
            w = keep.to(x.dtype).unsqueeze(-1)
            pooled = (x * w).sum(1) / w.sum(1).clamp(min=1.0)
            return self.head(pooled)

    return Classifier


def load_run(run_dir):
    with open(os.path.join(run_dir, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("task") != "classify":
        sys.exit(f"{run_dir}/config.json is not a classify run")
    return cfg


def make_model(torch, cfg):
    m = cfg["model"]
    return build(torch)(m["vocab"], m["max_len"], m["d_model"], m["heads"], m["d_ff"], m["layers"], m["classes"],
                        m["dropout"], m["pre_norm"])


def check(args, torch):
    cfg = load_run(args.run)
    model = make_model(torch, cfg)
    with open(args.logits or os.path.join(args.run, "logits.json")) as f:
        dump = json.load(f)
    # The weights stag evaluated: --checkpoint, else the one the dump names (best.safetensors when
    # stag-train kept the best evaluation), else <run>/model.safetensors.
    ckpt = args.checkpoint or dump.get("checkpoint") or os.path.join(args.run, "model.safetensors")
    tensors, meta = read_safetensors(ckpt)
    state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items() if not (k.endswith(".adam_m") or k.endswith(".adam_v"))}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        sys.exit(f"names differ: missing {missing}, unexpected {unexpected}")
    model.eval()
    ids = torch.tensor(dump["ids"], dtype=torch.long)
    keep = torch.tensor(dump["keep"], dtype=torch.bool)
    want = torch.tensor(dump["logits"], dtype=torch.float32)
    with torch.no_grad():
        got = model(ids, keep)
    diff = (got - want).abs().max().item()
    print(f"checkpoint: {ckpt} (step {meta.get('stag.step')}), {len(state)} tensors")
    print(f"inputs: {ids.shape[0]} validation texts, padded to {ids.shape[1]} tokens")
    for r in range(min(3, ids.shape[0])):
        print(f"  row {r}: stag {want[r].tolist()}  torch {[round(x, 6) for x in got[r].tolist()]}")
    print(f"max_abs_logit_diff: {diff:.3e}")
    print(f"same_predictions: {bool((got.argmax(-1) == want.argmax(-1)).all())}")
    return 0 if diff < 1e-4 else 1


def lr_at(run, step, total):
    """runtime/train/lr_schedule.cpp's schedules (steps count from 1)."""
    peak, warm, floor = run["lr"], run["warmup"], run["min_lr"]
    total = max(total, warm + 1)
    if run["schedule"] == "inverse_sqrt":
        raise SystemExit("inverse_sqrt is not mirrored here")
    if warm > 0 and step <= warm:
        return peak * step / warm
    if run["schedule"] == "constant":
        return peak
    if step >= total:
        return floor
    frac = (step - warm) / (total - warm)
    if run["schedule"] == "linear":
        return floor + (peak - floor) * (1 - frac)
    return floor + (peak - floor) * (1 + math.cos(math.pi * frac)) / 2


def batches(torch, split, rows, max_len):
    ids = [split["ids"][r][:max_len] for r in rows]
    s = max(1, max(len(x) for x in ids))
    t = torch.zeros(len(rows), s, dtype=torch.long)
    keep = torch.zeros(len(rows), s, dtype=torch.bool)
    for i, x in enumerate(ids):
        t[i, : len(x)] = torch.tensor(x, dtype=torch.long)
        keep[i, : len(x)] = True
    return t, keep, torch.tensor([split["labels"][r] for r in rows], dtype=torch.long)


def plan(gen, lengths, batch_size, bucket, pool=50):
    """data::plan_batches' scheme: shuffle; with bucketing, sort pools by length; shuffle batches."""
    import torch
    order = torch.randperm(len(lengths), generator=gen).tolist()
    if not bucket:
        return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
    out = []
    for k in range(0, len(order), pool * batch_size):
        part = sorted(order[k:k + pool * batch_size], key=lambda r: lengths[r])
        out += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
    perm = torch.randperm(len(out), generator=gen).tolist()
    return [out[i] for i in perm]


def evaluate(torch, model, split, max_len):
    model.eval()
    right = 0
    with torch.no_grad():
        for k in range(0, len(split["labels"]), 128):
            rows = list(range(k, min(k + 128, len(split["labels"]))))
            ids, keep, y = batches(torch, split, rows, max_len)
            right += (model(ids, keep).argmax(-1) == y).sum().item()
    model.train()
    return right / len(split["labels"])


def train(args, torch):
    cfg = load_run(args.run)
    run = cfg["run"]
    with open(args.data or os.path.join(args.run, "data.json")) as f:
        data = json.load(f)
    max_len = data["max_len"]
    lengths = [min(len(x), max_len) for x in data["train"]["ids"]]
    per_epoch = math.ceil(len(lengths) / run["batch_size"])
    total = run["max_steps"] if run["max_steps"] > 0 else per_epoch * run["epochs"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, BLAS {blas_in_use()}; "
          f"{total} steps of {run['batch_size']}, lr {run['lr']} {run['schedule']} warmup {run['warmup']}")
    results = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        model = make_model(torch, cfg)
        decay = [p for n, p in model.named_parameters() if p.dim() > 1 and n not in ()]
        no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
        # stag decays every parameter created with decay = true: matrices and embeddings, not
        # biases or norm gains.
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": run["weight_decay"]},
                                 {"params": no_decay, "weight_decay": 0.0}],
                                lr=run["lr"], betas=(run["beta1"], run["beta2"]), eps=run["eps"])
        step, tokens, seconds = 0, 0, 0.0
        while step < total:
            for rows in plan(gen, lengths, run["batch_size"], run["bucket"]):
                if step >= total:
                    break
                step += 1
                ids, keep, y = batches(torch, data["train"], rows, max_len)
                t0 = time.perf_counter()
                for g in opt.param_groups:
                    g["lr"] = lr_at(run, step, total)
                loss = torch.nn.functional.cross_entropy(model(ids, keep), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if run["clip_norm"] > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), run["clip_norm"])
                opt.step()
                seconds += time.perf_counter() - t0
                tokens += keep.sum().item()
        va, te = evaluate(torch, model, data["val"], max_len), evaluate(torch, model, data["test"], max_len)
        results.append((va, te, tokens / seconds))
        print(f"seed {seed}: val_accuracy {va:.4f}  test_accuracy {te:.4f}  train_tokens_per_s {tokens / seconds:.0f}"
              f"  ({seconds:.1f} s in steps)")
    n = len(results)
    mean = [sum(r[i] for r in results) / n for i in range(3)]
    std = [math.sqrt(sum((r[i] - mean[i]) ** 2 for r in results) / max(1, n - 1)) for i in range(3)]
    print(f"torch_val_accuracy: {mean[0]:.4f} (std {std[0]:.4f}, {n} seeds)")
    print(f"torch_test_accuracy: {mean[1]:.4f} (std {std[1]:.4f})")
    print(f"torch_train_tokens_per_s: {mean[2]:.0f}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["check", "train"])
    ap.add_argument("--run", default="runs/classify", help="stag-train's --out folder (config.json, model.safetensors)")
    ap.add_argument("--logits", help="stag's logits (default <run>/logits.json, from --dump-logits)")
    ap.add_argument("--data", help="the tokenised splits (default <run>/data.json, from --export-data)")
    ap.add_argument("--checkpoint", help="check: the stag checkpoint (default: the one logits.json names)")
    ap.add_argument("--seeds", default="1", help="train: comma-separated seeds")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    reexec_with_blas(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    return check(args, torch) if args.command == "check" else train(args, torch)


if __name__ == "__main__":
    sys.exit(main())
