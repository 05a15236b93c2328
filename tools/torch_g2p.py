#!/usr/bin/python3
"""stag-train g2p's recipe in PyTorch, on the same split and for the same wall-clock minutes: is
the recipe the limit, or the framework? (issue 39; docs/training.md, "Grapheme to phoneme").

  build/apps/train/stag-train g2p --max-steps 1 --test-limit 10 \\
      --export-data /tmp/g2p_split.json --out /tmp/g2p_split
  /usr/bin/python3 tools/torch_g2p.py --data /tmp/g2p_split.json --run runs/g2p --minutes 10

The model and recipe come from <run>/config.json of a stag-train g2p run: the preset's dims,
dropout and label smoothing (tools/torch_throughput.py's Seq2Seq, models/transformer.hpp's
Pre-LN Transformer, with stag's initialisation), AdamW with the run's betas, eps, weight
decay (of weights and embeddings, not biases and norm gains, as stag's) and gradient clipping,
linear warmup then cosine to --min-lr, batches of --batch-size words bucketed by length. As
stag-train's --max-seconds does, the cosine is fitted to the steps that fit the time box (after
200 steps, then at each twentieth of the box); the box counts training steps only, not the
periodic evaluations. Every --eval-every steps it decodes
the first 1,000 validation words greedily (the curve in metrics lines like stag-train's); at the
end it decodes every test word greedily and prints, in stag-train's format, test_per / test_wer
(against each word's first pronunciation) and test_per_any / test_wer_any (right when it
matches any of the word's pronunciations; the phoneme errors of the closest one). Compare with
`stag-train g2p --eval-only --beam 1 --resume <run>/model.safetensors` for greedy figures.
float32, 2 threads, OpenBLAS preloaded (as tools/torch_classifier.py).
"""
import argparse
import json
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_classifier import blas_in_use, reexec_with_blas  # noqa: E402
from torch_throughput import modules  # noqa: E402

PAD, BOS, EOS, FIRST = 0, 2, 3, 4  # stag's special ids; letters and phonemes start at 4


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        diag, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            up = row[j]
            row[j] = min(row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1]))
            diag = up
    return row[len(b)]


def error_rates(pred, refs):
    """(per, wer) against the first reference, (per, wer) against the closest of all."""
    e1 = l1 = w1 = e2 = l2 = w2 = 0
    for p, rs in zip(pred, refs):
        d = [edit_distance(p, r) for r in rs]
        e1, l1, w1 = e1 + d[0], l1 + len(rs[0]), w1 + (d[0] > 0)
        k = d.index(min(d))  # the first of the closest
        e2, l2, w2 = e2 + d[k], l2 + len(rs[k]), w2 + (d[k] > 0)
    n = max(len(pred), 1)
    return e1 / max(l1, 1), w1 / n, e2 / max(l2, 1), w2 / n


def batches_of_epoch(train, batch_size, seed, epoch):
    """Length-bucketed batches, reshuffled each epoch: pools of 50 batches sorted by length."""
    rng = random.Random(seed * 1000003 + epoch)
    rows = list(range(len(train)))
    rng.shuffle(rows)
    out, pool = [], 50 * batch_size
    for k in range(0, len(rows), pool):
        part = sorted(rows[k:k + pool], key=lambda i: max(len(train[i][0]), len(train[i][1]) + 1))
        out += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(out)
    return out


def make_batch(torch, pairs):
    s = max(len(a) for a, _ in pairs)
    t = max(len(b) for _, b in pairs) + 1
    src = torch.zeros(len(pairs), s, dtype=torch.long)
    tin = torch.zeros(len(pairs), t, dtype=torch.long)
    tout = torch.full((len(pairs), t), -100, dtype=torch.long)
    for i, (a, b) in enumerate(pairs):
        src[i, :len(a)] = torch.tensor(a)
        tin[i, :len(b) + 1] = torch.tensor([BOS] + b)
        tout[i, :len(b) + 1] = torch.tensor(b + [EOS])
    return src, tin, tout


def decode_greedy(torch, model, words, vocab_limit, max_len, batch=256):
    """Greedy decoding over <eos> and the phoneme ids only (as stag's vocab_limit), no cache."""
    out = []
    model.eval()
    allowed = torch.full((model.gen.out_features,), float("-inf"))
    allowed[EOS] = 0
    allowed[FIRST:vocab_limit] = 0
    with torch.no_grad():
        for k in range(0, len(words), batch):
            part = words[k:k + batch]
            src = torch.zeros(len(part), max(len(w) for w in part), dtype=torch.long)
            for i, w in enumerate(part):
                src[i, :len(w)] = torch.tensor(w)
            keep = src != PAD
            memory = model.encode(src, keep)
            ys = torch.full((len(part), 1), BOS, dtype=torch.long)
            done = torch.zeros(len(part), dtype=torch.bool)
            for _ in range(max_len + 1):
                logits = model.decode(ys, torch.ones_like(ys, dtype=torch.bool), memory, keep)[:, -1] + allowed
                nxt = torch.where(done, torch.full((len(part),), EOS, dtype=torch.long), logits.argmax(-1))
                ys = torch.cat([ys, nxt.unsqueeze(1)], 1)
                done |= nxt == EOS
                if bool(done.all()):
                    break
            for row in ys[:, 1:].tolist():
                out.append(row[:row.index(EOS)] if EOS in row else row)
    model.train()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="stag-train g2p --export-data's JSON (the split)")
    ap.add_argument("--run", required=True, help="a stag-train g2p --out folder (config.json: preset and flags)")
    ap.add_argument("--minutes", type=float, required=True, help="time box of the training steps")
    ap.add_argument("--eval-every", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--metrics", help="write the curve as JSON lines here")
    args = ap.parse_args()
    reexec_with_blas(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    with open(os.path.join(args.run, "config.json")) as f:
        cfg = json.load(f)
    if cfg["task"] != "g2p":
        sys.exit(f"{args.run}: a {cfg['task']} run, not g2p")
    c, run = cfg["model"], cfg["run"]
    with open(args.data) as f:
        split = json.load(f)
    letters = sorted({ch for w, _ in split["train"] for ch in w})
    letter_id = {ch: FIRST + i for i, ch in enumerate(letters)}
    phone_id = {p: FIRST + i for i, p in enumerate(split["phonemes"])}
    if FIRST + len(letters) > c["src_vocab"] or FIRST + len(phone_id) > c["tgt_vocab"]:
        sys.exit("the split's letters or phonemes do not fit the preset's vocabularies")
    max_len = run["max_len"]
    enc_word = lambda w: [letter_id.get(ch, 1) for ch in w][:max_len]  # 1: <unk>
    enc_pron = lambda p: [phone_id[x] for x in p.split()][:max_len]
    train = [(enc_word(w), enc_pron(p)) for w, p in split["train"]]
    held = {name: ([enc_word(w) for w, _ in split[name]], [[enc_pron(p) for p in ps] for _, ps in split[name]])
            for name in ("val", "test")}
    vocab_limit = FIRST + len(phone_id)

    _, Seq2Seq = modules(torch)
    model = Seq2Seq(c)
    # stag decays weights and embeddings, not biases and norm gains (ParamOpts::decay).
    decay = [p for p in model.parameters() if p.dim() > 1]
    rest = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": run["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=run["lr"], betas=(run["beta1"], run["beta2"]), eps=run["eps"])
    peak, warmup, floor = run["lr"], run["warmup"], run["min_lr"]
    budget = 60 * args.minutes
    total = 10 ** 9  # fitted after the first steps

    def lr_at(step):  # step counts from 1, as stag's schedule
        if step <= warmup:
            return peak * step / max(warmup, 1)
        frac = min(1.0, (step - warmup) / max(total - warmup, 1))
        return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * frac))

    metrics = open(args.metrics, "w") if args.metrics else None
    curve_words, curve_refs = held["val"][0][:1000], held["val"][1][:1000]

    def evaluate(step, train_s):
        pred = decode_greedy(torch, model, curve_words, vocab_limit, max_len)
        per, wer, per_any, wer_any = error_rates(pred, curve_refs)
        print(f"valid step {step}:  per {per:.4f}  wer {wer:.4f}  per_any {per_any:.4f}  wer_any {wer_any:.4f}  "
              f"train_seconds {train_s:.1f}", flush=True)
        if metrics:
            metrics.write(json.dumps({"step": step, "split": "valid", "per": per, "wer": wer, "per_any": per_any,
                                      "wer_any": wer_any, "train_seconds": train_s}) + "\n")

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, BLAS {blas_in_use()}; preset "
          f"{cfg['preset']}, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, "
          f"{len(train)} training words, time box {budget:.0f} s", flush=True)
    model.train()
    step, epoch, train_s, tokens, next_fit = 0, 0, 0.0, 0, 0.0
    clip = run["clip_norm"]
    while step < total and train_s < budget:
        for rows in batches_of_epoch(train, run["batch_size"], run["seed"], epoch):
            if step >= total or train_s >= budget:
                break
            t0 = time.perf_counter()
            step += 1
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            src, tin, tout = make_batch(torch, [train[i] for i in rows])
            loss = model(src, src != PAD, tin, tout != -100, tout)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            train_s += time.perf_counter() - t0
            tokens += int((src != PAD).sum() + (tout != -100).sum())
            if step >= 200 and train_s >= next_fit:  # fit the cosine to the time box
                next_fit = train_s + budget / 20
                fit = max(step + 1, int(budget / (train_s / step)))
                if abs(fit - total) * 50 > total:
                    print(f"time box of {budget:.0f} s: {fit} steps fit (cosine, warmup {warmup})", flush=True)
                total = fit
            if step % 500 == 0:
                print(f"step {step}/{total}  epoch {epoch}  loss {loss.item():.4f}  lr {lr_at(step):.2e}  "
                      f"{tokens / train_s:.0f} tok/s", flush=True)
            if args.eval_every > 0 and step % args.eval_every == 0:
                evaluate(step, train_s)
        epoch += 1
    evaluate(step, train_s)
    t0 = time.perf_counter()
    pred = decode_greedy(torch, model, held["test"][0], vocab_limit, max_len)
    per, wer, per_any, wer_any = error_rates(pred, held["test"][1])
    print(f"test_per: {per:.6f}\ntest_wer: {wer:.6f}\ntest_per_any: {per_any:.6f}\ntest_wer_any: {wer_any:.6f}")
    print(f"test_examples: {len(pred)}\ndecode_seconds: {time.perf_counter() - t0:.1f}")
    print(f"steps: {step}\nepochs: {epoch}\ntrain_seconds: {train_s:.1f}\ntrain_tokens_per_s: {tokens / train_s:.0f}")


if __name__ == "__main__":
    main()
