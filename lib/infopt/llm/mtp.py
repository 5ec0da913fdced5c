"""Multi-token prediction (MTP): an extra head on the frozen target that guesses the token after next, for
self-speculation without a separate draft model.

`MTPHead` is DeepSeek-V3's MTP module at depth 1, made small: from the target's final hidden state h_t (which
predicts token t+1) and the embedding of token t+1 it predicts token t+2:
    logits = lm_head(norm(z + MLP(norm(z)))),  z = W [hnorm(h_t); enorm(embed(x_{t+1}))]
with the target's own (frozen, shared) embedding and lm_head, as DeepSeek-V3 shares them. DeepSeek's module has a
full transformer block (attention with its own KV cache); ours is a SwiGLU MLP block only, so it needs no cache: h_t
already summarises the context. `python -m infopt.llm.mtp` trains it with the target frozen (300 AdamW steps;
22 s to 41 s on one thread of this shared 2-core machine, measured) and writes data/mtp.npz.
`self_speculative_generate` uses it: each target pass verifies the head's guess made from the previous pass's
features and yields 1 or 2 tokens, the output law staying exactly the target's
(`infopt.llm.speculative.speculative_accept`, k = 1).

EAGLE, against this: EAGLE (Li et al. 2024) also drafts from the target's features, but AUTOREGRESSIVELY at the
feature level: a one-layer head takes (feature f_t, embedding of the sampled token x_{t+1}) and predicts the next
FEATURE f_{t+1}, which the (frozen) lm_head turns into tokens and which feeds the head again, so it drafts several
tokens from one target pass; it samples a tree of candidates and the target verifies the whole tree in one pass with
a tree attention mask. EAGLE-2 grows that tree dynamically from the draft's confidence; EAGLE-3 drops the feature
regression, trains on the token loss through the draft's own rollouts ("training-time test") and fuses low, middle
and high layers' features. MTP heads are trained with the model (DeepSeek-V3 trains them in pre-training, as an
extra loss, one module per extra depth) and chained sequentially per depth; ours, like EAGLE's, is trained after
the fact with the target frozen. vLLM serves these as speculative_config methods "mtp" (DeepSeek-V3's shipped MTP
layers) and "eagle" / "eagle3"; TensorRT-LLM as MTPDecodingConfig(num_nextn_predict_layers=...) and
Eagle3DecodingConfig; Hugging Face transformers' `generate` drafts with a separate `assistant_model` (as
`infopt.llm.speculative.speculative_generate` does) or by prompt lookup (`prompt_lookup_num_tokens`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from .model import DATA_DIR, META_KEY, MLP, RMSNorm, TinyConfig, TinyLlama, load_model, save_weights
from .sampling import SamplingParams, processed_probs
from .speculative import (EVAL_PROMPTS, IncrementalModel, SpecResult, check_generation_args, compare_runs,
                          draw_token, speculative_accept)
from .tokenizer import BOS, EOS, ByteTokenizer

__all__ = ["MTPHead", "mtp_training_data", "train_mtp_head", "save_mtp_head", "load_mtp_head",
           "self_speculative_generate", "compare_mtp_with_plain", "target_digest", "main"]

MTP_PATH = DATA_DIR / "mtp.npz"


class MTPHead(nn.Module):
    """Predicts token t+2 from the target's final hidden state at t and the embedding of token t+1."""

    def __init__(self, config: TinyConfig, seed: int = 0):
        super().__init__()
        if not isinstance(config, TinyConfig):
            raise TypeError(f"MTPHead takes the target's TinyConfig, got {type(config).__name__}")
        self.config = config
        self.hnorm = RMSNorm(config.dim, config.norm_eps)
        self.enorm = RMSNorm(config.dim, config.norm_eps)
        self.proj = nn.Linear(2 * config.dim, config.dim, bias=False)
        self.block_norm = RMSNorm(config.dim, config.norm_eps)
        self.mlp = MLP(config)
        self.norm = RMSNorm(config.dim, config.norm_eps)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if not name.endswith("norm.weight"):
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.02)

    def forward(self, hidden: torch.Tensor, next_tokens: torch.Tensor, target: TinyLlama) -> torch.Tensor:
        """Logits [..., V] (float32) for token t+2, from hidden [..., dim] (h_t) and next_tokens [...] (x_{t+1})."""
        if target.config != self.config:
            raise ValueError("this MTP head was built for another target config")
        emb = target.embed_tokens(next_tokens)
        z = self.proj(torch.cat([self.hnorm(hidden), self.enorm(emb)], dim=-1))
        z = z + self.mlp(self.block_norm(z))
        return target.lm_head(self.norm(z)).to(torch.float32)


def target_digest(target: TinyLlama) -> str:
    """sha256 of the target's weights (recorded with a trained head: a retrained target needs a retrained head)."""
    h = hashlib.sha256()
    for name, t in sorted(target.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().to(torch.float16).cpu().numpy().tobytes())
    return h.hexdigest()


@torch.no_grad()
def mtp_training_data(target: TinyLlama, windows: int, seq_len: int = 128, seed: int = 0, text: str | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(h_t [N, dim], x_{t+1} [N], x_{t+2} [N]) from `windows` corpus windows (BOS + bytes, starting at a line)
    run through the frozen target once."""
    from .train import corpus_bytes
    data = corpus_bytes(text)
    starts = np.flatnonzero(data[:-seq_len] == ord("\n")) + 1
    rng = np.random.default_rng(seed)
    offs = rng.choice(starts, size=windows)
    win = np.stack([data[o:o + seq_len - 1] for o in offs]).astype(np.int64)
    tokens = torch.from_numpy(np.concatenate([np.full((windows, 1), BOS), win], axis=1))
    hidden = torch.cat([target.hidden(tokens[i:i + 32]) for i in range(0, windows, 32)])
    return (hidden[:, :-2].reshape(-1, hidden.shape[-1]).clone(), tokens[:, 1:-1].reshape(-1).clone(),
            tokens[:, 2:].reshape(-1).clone())


def train_mtp_head(target: TinyLlama, steps: int = 300, seed: int = 0, *, windows: int = 128, batch: int = 1024,
                   lr: float = 3e-3, val_windows: int = 32, text: str | None = None) -> tuple[MTPHead, dict]:
    """Train an `MTPHead` (target frozen) on the corpus with AdamW; returns it (eval) and a report (losses, held-out
    top-1 accuracy of token t+2 for the head and, as a floor, for reusing the target's own next-token guess)."""
    if steps <= 0:
        raise ValueError(f"steps must be positive, got {steps}")
    target.eval().requires_grad_(False)
    hid, nxt, lab = mtp_training_data(target, windows, seed=seed, text=text)
    val_hid, val_nxt, val_lab = mtp_training_data(target, val_windows, seed=seed + 1000, text=text)
    head = MTPHead(target.config, seed=seed).train()
    opt = torch.optim.AdamW(head.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20) * max(0.1, 1 - s / steps))
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, len(lab), (batch,), generator=gen)
        loss = nn.functional.cross_entropy(head(hid[idx], nxt[idx], target), lab[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    head.eval()
    with torch.inference_mode():
        val_logits = head(val_hid, val_nxt, target)
        val_loss = float(nn.functional.cross_entropy(val_logits, val_lab))
        acc = float((val_logits.argmax(-1) == val_lab).float().mean())
        # floor: the target's own guess for t+1 taken as the guess for t+2 (what a head that learned nothing gives)
        floor = float((target.lm_head(val_hid).argmax(-1) == val_lab).float().mean())
    return head, {"steps": steps, "loss_first10": float(np.mean(losses[:10])),
                  "loss_last10": float(np.mean(losses[-10:])), "val_loss": val_loss, "val_top1": acc,
                  "val_top1_reusing_next_token": floor, "train_positions": len(lab)}


def save_mtp_head(head: MTPHead, path: str | Path, target: TinyLlama, **meta: object) -> Path:
    """Write the head's weights (float16) and metadata, with the digest of the target it was trained on."""
    return save_weights(head, path, target_sha256=target_digest(target), **meta)


def load_mtp_head(target: TinyLlama | None = None, path: str | Path = MTP_PATH) -> MTPHead:
    """The shipped head (weights as float32, eval), checked to belong to `target` (default: load_model("target"))."""
    target = load_model("target") if target is None else target
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run `python -m infopt.llm.mtp` to train the MTP head")
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data[META_KEY]))
        state = {k: torch.from_numpy(data[k].astype(np.float32)) for k in data.files if k != META_KEY}
    head = MTPHead(TinyConfig(**meta["config"]))
    if head.config != target.config or meta.get("target_sha256") != target_digest(target):
        raise ValueError(f"{path} was trained on other target weights: retrain it with `python -m infopt.llm.mtp`")
    head.load_state_dict(state)
    head.meta = meta
    return head.eval()


def self_speculative_generate(target: TinyLlama, head: MTPHead, prompt_ids: Sequence[int], max_new_tokens: int,
                              params: SamplingParams = SamplingParams(), seed: int = 0, *,
                              stop_at_eos: bool = True) -> SpecResult:
    """Generate with the target verifying its own MTP head's guess: 1 or 2 tokens per target pass.

    The prefill pass gives the first token; from then on each pass feeds [last token, the head's guess d] (2
    positions): the logits at the last token verify d (`speculative_accept` with k = 1), those at d give the bonus
    token; the cache rolls back if d is rejected. The next guess comes from the hidden state at the second-to-last
    committed token and the embedding of the last. `draft_passes` counts head evaluations; the output law is the
    target's with `params`, and at temperature 0 it is the target's greedy output exactly.
    """
    check_generation_args((target,), prompt_ids, max_new_tokens, 1)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    prompt = [int(t) for t in prompt_ids]
    tgt = IncrementalModel(target, len(prompt) + max_new_tokens + 1)

    def guess(hidden_row: torch.Tensor, last: int) -> tuple[int, np.ndarray]:
        with torch.inference_mode():
            logits = head(hidden_row, torch.tensor(last), target)
        q = processed_probs(logits, params).double().numpy()
        return draw_token(q, rng), q

    seq, out, accepted, proposed, head_calls = list(prompt), [], [], [], 0
    if max_new_tokens > 0:
        hidden = tgt.feed(prompt)
        first = draw_token(processed_probs(tgt.logits(hidden[-1]), params).double().numpy(), rng)
        seq.append(first)
        out.append(first)
        h_base = hidden[-1]
    while len(out) < max_new_tokens and not (stop_at_eos and EOS in out):
        if max_new_tokens - len(out) == 1:           # room for one token: a plain decode step
            p = processed_probs(tgt.logits(tgt.feed(seq[-1:])), params).double().numpy()
            emitted = speculative_accept([], np.zeros((0, p.shape[1])), p, rng)
            accepted.append(0)
            proposed.append(0)
        else:
            d, q = guess(h_base, seq[-1])
            head_calls += 1
            hidden = tgt.feed([seq[-1], d])
            p = processed_probs(tgt.logits(hidden), params).double().numpy()
            emitted = speculative_accept([d], q[None], p, rng)
            n_acc = len(emitted) - 1
            tgt.rollback(len(seq) + n_acc)
            h_base = hidden[n_acc]
            accepted.append(n_acc)
            proposed.append(1)
        seq += emitted
        out += emitted
    if stop_at_eos and EOS in out:
        out = out[: out.index(EOS) + 1]
    return SpecResult(tokens=out, target_passes=tgt.passes, draft_passes=head_calls, accepted_per_step=accepted,
                      proposed_per_step=proposed, acceptance_rate=sum(accepted) / max(1, sum(proposed)),
                      seconds=time.perf_counter() - start)


def compare_mtp_with_plain(target: TinyLlama, head: MTPHead, prompts: Sequence[Sequence[int]],
                           max_new_tokens: int, params: SamplingParams = SamplingParams(), seed: int = 0,
                           repeats: int = 3) -> dict:
    """`self_speculative_generate` vs plain cached generation, side by side (`speculative.compare_runs`)."""
    def run(prompt: Sequence[int], run_seed: int) -> SpecResult:
        return self_speculative_generate(target, head, prompt, max_new_tokens, params, run_seed)

    return {"k": 1, **compare_runs(target, run, prompts, max_new_tokens, params, seed, repeats)}


def main(argv: list[str] | None = None) -> dict:
    """Train the MTP head on the shipped target, write data/mtp.npz, print the losses and held-out accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MTP_PATH)
    parser.add_argument("--threads", type=int, default=1, help="1 is fastest on a shared, loaded machine")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--measure", action="store_true",
                        help="train nothing: measure the shipped head against plain decoding, greedy and at T=0.8")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    target = load_model("target")
    if args.measure:
        head, prompts, rows = load_mtp_head(target), [ByteTokenizer().encode(t) for t in EVAL_PROMPTS], []
        for temperature in (0.0, 0.8):
            rows.append(compare_mtp_with_plain(target, head, prompts, 96, SamplingParams(temperature=temperature),
                                               repeats=2))
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}))
        return {"measured": rows}
    begin = time.perf_counter()
    head, report = train_mtp_head(target, steps=args.steps)
    seconds = time.perf_counter() - begin
    prompts = [ByteTokenizer().encode(text) for text in EVAL_PROMPTS]
    greedy = compare_mtp_with_plain(target, head, prompts, 96, repeats=1)
    report["greedy_acceptance"] = greedy["acceptance_rate"]
    report["greedy_target_pass_reduction"] = greedy["target_pass_reduction"]
    report = {k: round(v, 4) if isinstance(v, float) else v for k, v in report.items()}
    save_mtp_head(head, args.out, target, train_seconds=round(seconds, 1), threads=args.threads,
                  python_version=platform.python_version(), torch_version=torch.__version__, **report)
    print(f"MTP head: {sum(p.numel() for p in head.parameters()):,} parameters, {report['steps']} steps in "
          f"{seconds:.1f} s; loss {report['loss_first10']:.3f} -> {report['loss_last10']:.3f} (nats, token t+2); "
          f"held-out top-1 {report['val_top1']:.3f} (reusing the next-token guess: "
          f"{report['val_top1_reusing_next_token']:.3f})")
    print(f"self-speculation, greedy, {len(prompts)} prompts x 96 tokens: acceptance {greedy['acceptance_rate']:.3f}, "
          f"{greedy['target_pass_reduction']:.2f}x fewer target passes, same tokens as plain greedy: "
          f"{greedy['identical_outputs']}; wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
