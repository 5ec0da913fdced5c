"""Train the tiny target and draft models on Python standard-library source (text every machine has) and ship them.

`python -m infopt.llm.train` regenerates lib/infopt/llm/data/{target,draft}.npz (float16 weights plus metadata:
corpus hash, steps, losses, Python version) in under a minute on 2 cores. The corpus is a fixed list of stdlib
modules read with `inspect.getsource`, so it changes only with the Python version (its hash is recorded).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import math
import platform
import time
from pathlib import Path

import numpy as np
import torch

from .model import DATA_DIR, DRAFT_CONFIG, TARGET_CONFIG, TinyConfig, TinyLlama, load_weights, save_weights
from .tokenizer import BOS

__all__ = ["CORPUS_MODULES", "STEPS", "LR", "corpus_text", "corpus_bytes", "train_model", "save_weights", "load_weights",
           "main"]

CORPUS_MODULES = (
    "textwrap", "string", "heapq", "bisect", "functools", "fnmatch", "shlex", "glob", "copy", "contextlib",
    "dataclasses", "enum", "json.encoder", "json.decoder", "statistics", "queue", "base64", "colorsys", "calendar",
    "difflib", "pprint", "tokenize", "argparse", "random",
)
# Steps per model, sized so both train in well under a minute on 2 cores.
STEPS = {"target": 260, "draft": 300}
LR = {"target": 1.5e-3, "draft": 3e-3}     # the wider, deeper target learns best with the smaller step
SEQ_LEN = 128
BATCH = 8


def corpus_text() -> str:
    """The source of CORPUS_MODULES, each file once, joined by blank lines (the training text)."""
    parts = []
    for name in CORPUS_MODULES:
        parts.append(inspect.getsource(importlib.import_module(name)))
    return "\n\n".join(parts)


def corpus_bytes(text: str | None = None) -> np.ndarray:
    """The corpus as a uint8 array of its UTF-8 bytes (the tokens, BOS aside)."""
    return np.frombuffer((corpus_text() if text is None else text).encode("utf-8"), dtype=np.uint8)


def _batches(data: np.ndarray, steps: int, batch: int, seq_len: int, seed: int):
    """Yield (x, y) [batch, seq_len] windows that start at a random line: x = BOS + bytes, y = the same bytes shifted."""
    starts = np.flatnonzero(data[:-seq_len] == ord("\n")) + 1
    if len(starts) == 0:
        raise ValueError(f"the corpus needs more than {seq_len} bytes and at least one line break")
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        offs = rng.choice(starts, size=batch)
        win = np.stack([data[o:o + seq_len] for o in offs]).astype(np.int64)
        x = np.concatenate([np.full((batch, 1), BOS), win[:, :-1]], axis=1)
        yield torch.from_numpy(x), torch.from_numpy(win)


def train_model(config: TinyConfig, steps: int, seed: int = 0, *, batch: int = BATCH, seq_len: int = SEQ_LEN,
                lr: float = 3e-3, text: str | None = None) -> tuple[TinyLlama, list[float]]:
    """Train a fresh `TinyLlama(config, seed)` for `steps` AdamW steps of next-byte prediction on the corpus (warm-up
    then cosine decay); returns the model in eval mode and each step's mean cross-entropy (nats per byte)."""
    if steps <= 0:
        raise ValueError(f"steps must be positive, got {steps}")
    if seq_len > config.max_seq_len:
        raise ValueError(f"seq_len {seq_len} exceeds the model's max_seq_len {config.max_seq_len}")
    data = corpus_bytes(text)
    model = TinyLlama(config, seed=seed).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    warm = max(1, min(20, steps // 10))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))))
    losses = []
    for x, y in _batches(data, steps, batch, seq_len, seed):
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config.vocab_size), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return model.eval(), losses


def main(argv: list[str] | None = None) -> dict:
    """Train both models, write their npz files and print the loss falling and the time taken."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="folder for target.npz and draft.npz")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps-scale", type=float, default=1.0, help="multiply the step counts (for quick tries)")
    parser.add_argument("--models", nargs="+", choices=("target", "draft"), default=["target", "draft"])
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    text = corpus_text()
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    args.out.mkdir(parents=True, exist_ok=True)
    report = {}
    for name, config, seed in (("target", TARGET_CONFIG, 0), ("draft", DRAFT_CONFIG, 1)):
        if name not in args.models:
            continue
        steps = max(1, round(STEPS[name] * args.steps_scale))
        start = time.perf_counter()
        model, losses = train_model(config, steps, seed, lr=LR[name], text=text)
        seconds = time.perf_counter() - start
        first, last = float(np.mean(losses[:10])), float(np.mean(losses[-10:]))
        save_weights(model, args.out / f"{name}.npz", corpus_sha256=digest, corpus_modules=list(CORPUS_MODULES),
                     steps=steps, seed=seed, lr=LR[name], batch=BATCH, seq_len=SEQ_LEN, loss_first10=round(first, 4),
                     loss_last10=round(last, 4), train_seconds=round(seconds, 1),
                     python_version=platform.python_version(), torch_version=torch.__version__)
        marks = ", ".join(f"step {i}: {losses[i]:.3f}" for i in sorted({0, steps // 4, steps // 2, steps - 1}))
        print(f"{name}: {model.num_parameters():,} parameters, {steps} steps in {seconds:.1f} s; loss (nats/byte) "
              f"{marks}; mean of first 10 steps {first:.3f} -> last 10 {last:.3f}")
        w = max(1, min(10, steps // 3))       # short (test) runs compare their first and last thirds
        report[name] = {"seconds": seconds, "loss_start": float(np.mean(losses[:w])),
                        "loss_end": float(np.mean(losses[-w:])), "steps": steps}
    print(f"corpus: {len(text):,} chars from {len(CORPUS_MODULES)} stdlib modules, sha256 {digest[:16]}...")
    return report


if __name__ == "__main__":
    main()
