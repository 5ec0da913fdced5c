"""Speculative decoding: the accept/reject rule's exact rng contract, its output distribution and acceptance
theory at a small vocabulary, and (with the tiny models) greedy exactness, pass counts and the MTP head.

Statistical checks use bounds with a stated false-failure rate DELTA = 1e-6 (so they do not fail by chance):
- distributions: Bretagnolle-Huber-Carol, P(||p_hat - p||_1 >= eps) <= 2^m exp(-N eps^2 / 2) for m cells;
- means of variables in [0, b]: Hoeffding, P(|mean - E| >= t) <= 2 exp(-2 N t^2 / b^2).
Each check is also shown to reject a plausible wrong rule, so it has the power to fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from infopt.llm.speculative import acceptance_probability, expected_accepted, speculative_accept

DELTA = 1e-6


def l1_bound(cells: int, n: int, delta: float = DELTA) -> float:
    """eps with P(||p_hat - p||_1 >= eps) <= delta for n samples over `cells` outcomes (BHC inequality)."""
    return math.sqrt(2.0 * (cells * math.log(2.0) + math.log(1.0 / delta)) / n)


def hoeffding_bound(width: float, n: int, delta: float = DELTA) -> float:
    """t with P(|mean - E| >= t) <= delta for n independent samples in an interval of this width."""
    return width * math.sqrt(math.log(2.0 / delta) / (2.0 * n))


def random_dists(rng: np.random.Generator, rows: int, vocab: int, alpha: float = 0.7) -> np.ndarray:
    return rng.dirichlet(np.full(vocab, alpha), size=rows)


def draw_drafts(gen: np.random.Generator, q: np.ndarray, n: int) -> np.ndarray:
    """n independent rows of drafts, x_i ~ q[i] (vectorized inverse-CDF sampling): [n, k] ints."""
    cdf = np.cumsum(q, axis=1)
    u = gen.random((n, q.shape[0], 1)) * cdf[None, :, -1:]
    return (u >= cdf[None]).sum(axis=2).clip(max=q.shape[1] - 1)


def draw(gen: np.random.Generator, cdf: np.ndarray) -> int:
    """One draw from the distribution whose CDF is `cdf` (faster than Generator.choice in a loop)."""
    return min(int(np.searchsorted(cdf, gen.random() * cdf[-1], side="right")), len(cdf) - 1)


def residual_from_p(draft_tokens, draft_probs, target_probs, rng):
    """A plausible WRONG rule (resamples from p instead of the residual max(0, p - q)): the checks must catch it."""
    p = np.asarray(target_probs, dtype=np.float64)
    q = np.asarray(draft_probs, dtype=np.float64)
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < p[i, x] / q[i, x]:
            out.append(int(x))
            continue
        out.append(int(rng.choice(p.shape[1], p=p[i] / p[i].sum())))
        return out
    out.append(int(rng.choice(p.shape[1], p=p[-1] / p[-1].sum())))
    return out


# ---------------------------------------------------------------- the exact contract (exercise 5's reference)

def test_rng_consumption_order_is_the_documented_one():
    """One rng.random() per tested draft (even when p >= q), then one rng.choice: the same rng state after."""
    vocab = 5
    gen = np.random.default_rng(3)
    for trial in range(200):
        k = int(gen.integers(0, 5))
        q = random_dists(gen, k, vocab)
        p = random_dists(gen, k + 1, vocab)
        drafts = [int(gen.choice(vocab, p=q[i])) for i in range(k)]
        rng = np.random.default_rng(trial)
        mirror = np.random.default_rng(trial)
        out = speculative_accept(drafts, q, p, rng)
        expected = []
        for i, x in enumerate(drafts):
            if mirror.random() < p[i, x] / q[i, x]:
                expected.append(x)
                continue
            r = np.maximum(p[i] - q[i], 0.0)
            expected.append(int(mirror.choice(vocab, p=r / r.sum())))
            break
        else:
            expected.append(int(mirror.choice(vocab, p=p[k] / p[k].sum())))
        assert out == expected, f"trial {trial}: got {out}, the documented rule gives {expected}"
        assert all(type(t) is int for t in out), "tokens must come back as Python ints"
        assert rng.random() == mirror.random(), "the rng must be consumed exactly as documented"


def test_output_is_the_accepted_prefix_plus_one():
    gen = np.random.default_rng(0)
    for _ in range(100):
        k = int(gen.integers(1, 6))
        q = random_dists(gen, k, 7)
        p = random_dists(gen, k + 1, 7)
        drafts = [int(gen.choice(7, p=q[i])) for i in range(k)]
        out = speculative_accept(drafts, q, p, np.random.default_rng(int(gen.integers(1 << 30))))
        assert 1 <= len(out) <= k + 1
        assert out[:-1] == drafts[: len(out) - 1], "every token but the last is an accepted draft"


def test_greedy_one_hot_keeps_the_matching_prefix_then_the_targets_argmax():
    vocab, k = 6, 4
    eye = np.eye(vocab)
    target = [2, 5, 1, 0, 3]                         # the target's argmax at the k + 1 positions
    for drafts, expected in [([2, 5, 1, 0], [2, 5, 1, 0, 3]),   # all kept: the bonus is the target's argmax
                             ([2, 5, 4, 0], [2, 5, 1]),         # first mismatch at 2: the target's token
                             ([0, 5, 1, 0], [2])]:
        out = speculative_accept(drafts, eye[drafts], eye[target], np.random.default_rng(7))
        assert out == expected


def test_zero_target_probability_is_never_accepted_and_p_ge_q_always_is():
    q = np.array([[0.5, 0.5, 0.0]])
    p_never = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    p_always = np.array([[0.9, 0.1, 0.0], [0.0, 0.0, 1.0]])
    for seed in range(50):
        out = speculative_accept([0], q, p_never, np.random.default_rng(seed))
        assert out[0] != 0 and len(out) == 1
        assert speculative_accept([0], q, p_always, np.random.default_rng(seed)) == [0, 2]


def test_k_zero_draws_one_token_from_the_target():
    p = np.array([[0.0, 0.0, 1.0, 0.0]])
    assert speculative_accept([], np.zeros((0, 4)), p, np.random.default_rng(0)) == [2]


@pytest.mark.parametrize("args, message", [
    (([0, 1], np.full((2, 4), 0.25), np.full((2, 4), 0.25)), r"target_probs must have shape \[3, V\]"),
    (([0], np.full((1, 4), 0.25), np.full((2, 5), 0.2)), "vocabulary"),
    (([9], np.full((1, 4), 0.25), np.full((2, 4), 0.25)), "outside the vocabulary"),
    (([0], np.array([[0.0, 1.0, 0.0, 0.0]]), np.full((2, 4), 0.25)), "draft probability 0"),
    (([0], np.full((1, 4), 0.25), np.array([[0.5, -0.1, 0.3, 0.3], [0.25] * 4])), "non-negative"),
])
def test_bad_input_is_a_clear_error(args, message):
    with pytest.raises(ValueError, match=message):
        speculative_accept(*args, np.random.default_rng(0))


def test_rng_must_be_a_numpy_generator():
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        speculative_accept([0], np.full((1, 2), 0.5), np.full((2, 2), 0.5), 0)


# ---------------------------------------------------------------- distribution and acceptance, statistically

def first_token_l1(rule, p, q, n, seed):
    """L1 distance between the empirical law of the first emitted token and p[0], over n calls."""
    rng = np.random.default_rng(seed + 1)
    counts = np.zeros(p.shape[1])
    for drafts in draw_drafts(np.random.default_rng(seed), q, n).tolist():
        counts[rule(drafts, q, p, rng)[0]] += 1
    return float(np.abs(counts / n - p[0]).sum())


def test_first_emitted_token_follows_the_target_distribution():
    n, vocab = 5000, 6
    gen = np.random.default_rng(11)
    q = random_dists(gen, 2, vocab)
    p = random_dists(gen, 3, vocab)
    eps = l1_bound(vocab, n)
    assert first_token_l1(speculative_accept, p, q, n, seed=5) < eps
    # the bound has power: resampling from p instead of the residual is caught, and so would be keeping every
    # draft (the draft's own law q[0] is farther than eps from p[0])
    assert first_token_l1(residual_from_p, p, q, n, seed=5) > eps
    assert float(np.abs(q[0] - p[0]).sum()) > 2 * eps


def markov_spec_sample(rule, p_trans, q_trans, start, length, k, rng, gen):
    """Generate `length` tokens of a Markov chain by speculative decoding with a Markov draft (context = last token)."""
    q_cdf = np.cumsum(q_trans, axis=1)
    out = [start]
    while len(out) - 1 < length:
        drafts, q_rows, ctx = [], [], out[-1]
        for _ in range(k):
            q_rows.append(q_trans[ctx])
            ctx = draw(gen, q_cdf[ctx])
            drafts.append(ctx)
        p_rows = [p_trans[out[-1]]] + [p_trans[d] for d in drafts]
        out.extend(rule(drafts, np.array(q_rows), np.array(p_rows), rng))
    return tuple(out[1: length + 1])


def test_whole_generation_follows_the_target_joint_distribution():
    """Chained steps (accept, rollback, re-draft) give the target chain's joint law of 3 tokens (V^3 = 64 cells)."""
    vocab, length, k, n = 4, 3, 2, 4000
    gen = np.random.default_rng(2)
    p_trans = random_dists(gen, vocab, vocab, alpha=1.0)
    q_trans = random_dists(gen, vocab, vocab, alpha=1.0)
    joint = np.zeros((vocab,) * length)
    for a in range(vocab):
        for b in range(vocab):
            for c in range(vocab):
                joint[a, b, c] = p_trans[0, a] * p_trans[a, b] * p_trans[b, c]
    eps = l1_bound(vocab ** length, n)

    def l1(rule, seed):
        rng, drafter = np.random.default_rng(seed), np.random.default_rng(seed + 100)
        counts = np.zeros_like(joint)
        for _ in range(n):
            counts[markov_spec_sample(rule, p_trans, q_trans, 0, length, k, rng, drafter)] += 1
        return float(np.abs(counts / n - joint).sum())

    assert l1(speculative_accept, 1) < eps
    assert l1(residual_from_p, 1) > eps, "the check must be able to fail"


def test_acceptance_matches_theory():
    """Per-position acceptance = sum_x min(p, q); mean accepted per step = sum_i prod_{j<=i} beta_j."""
    vocab, k, n = 8, 3, 8000
    gen = np.random.default_rng(4)
    q = random_dists(gen, k, vocab, alpha=1.0)
    p = random_dists(gen, k + 1, vocab, alpha=1.0)
    betas = acceptance_probability(p[:k], q)
    assert np.allclose(betas, 1.0 - 0.5 * np.abs(p[:k] - q).sum(axis=1))      # beta = 1 - TV(p, q)
    theory = expected_accepted(betas)
    assert theory == pytest.approx(betas[0] + betas[0] * betas[1] + betas[0] * betas[1] * betas[2])
    rng, drafter = np.random.default_rng(9), np.random.default_rng(10)
    accepted = np.array([len(speculative_accept(drafts, q, p, rng)) - 1
                         for drafts in draw_drafts(drafter, q, n).tolist()])
    assert abs(accepted.mean() - theory) < hoeffding_bound(k, n)
    assert abs((accepted >= 1).mean() - betas[0]) < hoeffding_bound(1, n)


# ---------------------------------------------------------------- the tiny models: caches, greedy exactness, counts

torch = pytest.importorskip("torch")

from infopt.llm.model import DRAFT_CONFIG, TARGET_CONFIG, TinyConfig, TinyLlama, load_model  # noqa: E402
from infopt.llm.sampling import SamplingParams  # noqa: E402
from infopt.llm.speculative import IncrementalModel, speculative_generate  # noqa: E402
from infopt.llm.tokenizer import EOS, ByteTokenizer  # noqa: E402

PROMPTS = ["def __init__(self", "import os\nimport sys\n", "    return "]


@pytest.fixture(scope="module")
def models():
    torch.set_num_threads(1)
    return load_model("target"), load_model("draft")


@pytest.fixture(scope="module")
def prompts():
    return [ByteTokenizer().encode(text) for text in PROMPTS]


def greedy_reference(model, prompt, n):
    """The target's greedy continuation by full recomputation (no cache at all: independent of the caches)."""
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            seq.append(int(model(torch.tensor([seq]))[0, -1].argmax()))
    return seq[len(prompt):]


def test_rollback_then_feed_equals_recomputing_the_sequence():
    model = TinyLlama(TARGET_CONFIG, seed=3).eval()
    runner = IncrementalModel(model, max_len=32)
    runner.feed([257, 10, 20, 30])
    runner.feed([40, 50, 60])            # three "drafts"
    runner.rollback(5)                   # keep 40, reject 50 and 60: their slots hold stale K/V now
    hidden = runner.feed([70, 80])       # overwrites positions 5 and 6
    seq = [257, 10, 20, 30, 40, 70, 80]
    with torch.no_grad():
        expected = model.hidden(torch.tensor([seq]))[0, 5:]
    assert torch.allclose(hidden, expected, atol=1e-5), "stale K/V of rejected drafts leaked into attention"
    assert runner.length == 7 and runner.passes == 3 and runner.cache.length(0) == 7
    with pytest.raises(ValueError, match="outside 0..7"):
        runner.rollback(8)


@pytest.fixture(scope="module")
def greedy_refs(models, prompts):
    return [greedy_reference(models[0], prompt, 40) for prompt in prompts]


@pytest.mark.parametrize("k", [1, 4])
def test_greedy_equals_the_targets_greedy_exactly(models, prompts, greedy_refs, k):
    target, draft = models
    for prompt, ref in zip(prompts, greedy_refs):
        res = speculative_generate(target, draft, prompt, 40, k=k, stop_at_eos=False)
        assert res.tokens == ref, f"k={k}, prompt {prompt[:8]}..."


def test_pass_counts_and_acceptance_are_consistent(models, prompts):
    target, draft = models
    res = speculative_generate(target, draft, prompts[0], 60, k=4, stop_at_eos=False)
    steps = len(res.accepted_per_step)
    assert len(res.tokens) == 60 == sum(res.accepted_per_step) + steps    # each step: accepted drafts + 1
    assert res.target_passes == 1 + steps                                  # the prefill, then one per step
    assert res.draft_passes == 1 + sum(res.proposed_per_step)             # the draft's prefill too
    assert all(0 <= a <= p <= 4 for a, p in zip(res.accepted_per_step, res.proposed_per_step))
    assert res.acceptance_rate == pytest.approx(sum(res.accepted_per_step) / sum(res.proposed_per_step))
    assert res.tokens_per_target_pass == pytest.approx(60 / res.target_passes)
    assert res.acceptance_rate > 0.2, "the trained draft should agree with the target on a fair share of bytes"
    assert res.target_passes < 60                                           # fewer passes than plain decoding


def test_draft_equal_to_target_accepts_everything(models, prompts):
    """q == p exactly only if the draft's cache (catch-up after a bonus token, rollback) is right."""
    target, _ = models
    n, k = 40, 4
    res = speculative_generate(target, target, prompts[1], n, k=k, params=SamplingParams(temperature=1.0),
                               seed=5, stop_at_eos=False)
    assert res.acceptance_rate > 0.99
    assert res.target_passes == 1 + math.ceil(n / (k + 1))


def test_stops_at_max_new_tokens_and_at_eos(models, prompts):
    target, draft = models
    for n in (0, 1, 2, 7):
        assert len(speculative_generate(target, draft, prompts[2], n, k=5, stop_at_eos=False).tokens) == n
    eos_target = TinyLlama(DRAFT_CONFIG, seed=0).eval()
    eos_target.lm_head = AlwaysEOS()                     # a target that always says EOS
    assert speculative_generate(eos_target, draft, prompts[2], 20, k=3).tokens == [EOS]
    assert len(speculative_generate(eos_target, draft, prompts[2], 20, k=3, stop_at_eos=False).tokens) == 20


class AlwaysEOS(torch.nn.Module):
    def forward(self, hidden):
        logits = torch.zeros(*hidden.shape[:-1], 259)
        logits[..., EOS] = 10.0
        return logits


def test_bad_arguments_are_clear_errors(models):
    target, draft = models
    with pytest.raises(ValueError, match="empty"):
        speculative_generate(target, draft, [], 5)
    with pytest.raises(ValueError, match="k .* must be >= 1"):
        speculative_generate(target, draft, [257], 5, k=0)
    with pytest.raises(ValueError, match="max_seq_len"):
        speculative_generate(target, draft, [257] * 500, 20, k=4)
    with pytest.raises(ValueError, match="must lie in 0..258"):
        speculative_generate(target, draft, [257, 300], 5)
    small = TinyLlama(TinyConfig(vocab_size=10, dim=8, n_layers=1, n_heads=1, n_kv_heads=1, head_dim=8, ffn_dim=8))
    with pytest.raises(ValueError, match="vocabularies differ"):
        speculative_generate(target, small, [1, 2], 5)


class BigramModel(torch.nn.Module):
    """A stand-in 'model' whose next-token law depends on the last token only (logits = log trans[token]), with the
    TinyLlama interface speculative_generate uses (config, hidden, lm_head): cheap, and its exact law is known."""

    def __init__(self, trans: np.ndarray):
        super().__init__()
        vocab = trans.shape[0]
        self.config = TinyConfig(vocab_size=vocab, dim=vocab, n_layers=1, n_heads=1, n_kv_heads=1, head_dim=2,
                                 ffn_dim=1, max_seq_len=64)
        self.lm_head = torch.nn.Linear(vocab, vocab, bias=False)
        with torch.no_grad():
            self.lm_head.weight.copy_(torch.from_numpy(np.log(trans).T.copy()))

    def hidden(self, tokens, positions=None, cache=None, seq_ids=None):
        return torch.nn.functional.one_hot(tokens, self.config.vocab_size).to(torch.float32)


def test_sampled_generation_follows_the_target_law():
    """The whole loop (drafting, one verification pass, rollback, the draft catching up after a bonus token) at
    T = 1 gives the target's joint law of 3 tokens: checked on bigram stand-ins (V = 3, 27 cells) within the BHC
    bound at DELTA. (Its power: with the accept rule swapped for `residual_from_p` the same run gives L1 0.42
    against a bound of 0.23; the numpy checks above run such wrong rules themselves.)"""
    n, vocab = 1200, 3
    gen = np.random.default_rng(9)
    p_trans = random_dists(gen, vocab, vocab, alpha=1.0)
    q_trans = random_dists(gen, vocab, vocab, alpha=1.0)
    target, draft = BigramModel(p_trans), BigramModel(q_trans)
    joint = np.einsum("a,ab,bc->abc", p_trans[1], p_trans, p_trans)
    counts = np.zeros_like(joint)
    accepted = proposed = 0
    for seed in range(n):
        res = speculative_generate(target, draft, [0, 1], 3, k=2, params=SamplingParams(temperature=1.0),
                                   seed=seed, stop_at_eos=False)
        counts[tuple(res.tokens)] += 1
        accepted += sum(res.accepted_per_step)
        proposed += sum(res.proposed_per_step)
    assert float(np.abs(counts / n - joint).sum()) < l1_bound(joint.size, n)
    assert 0 < accepted < proposed, "the run should mix acceptances and rejections"


# ---------------------------------------------------------------- multi-token prediction (self-speculation)

from infopt.llm.mtp import (MTPHead, compare_mtp_with_plain, load_mtp_head,  # noqa: E402
                            self_speculative_generate, train_mtp_head)


def test_self_speculation_greedy_equals_the_targets_greedy_even_with_an_untrained_head(models, prompts,
                                                                                        greedy_refs):
    target, _ = models
    untrained = MTPHead(target.config, seed=1).eval()
    for prompt, ref in zip(prompts, greedy_refs):
        res = self_speculative_generate(target, untrained, prompt, 40, stop_at_eos=False)
        assert res.tokens == ref
        steps = len(res.accepted_per_step)
        assert res.target_passes == 1 + steps and len(res.tokens) == 1 + steps + sum(res.accepted_per_step)
        assert res.draft_passes == sum(res.proposed_per_step)
        assert res.acceptance_rate < 0.2, "an untrained head should rarely guess the token after next"


def test_the_shipped_head_is_accepted_far_more_often(models, prompts):
    target, _ = models
    head = load_mtp_head(target)
    res = compare_mtp_with_plain(target, head, prompts, 40, repeats=1)
    assert res["identical_outputs"] is True
    assert res["acceptance_rate"] > 0.3 and res["target_pass_reduction"] > 1.2
    assert res["target_pass_reduction"] <= 40 / 21 + 1e-9       # at most 2 tokens per pass after the prefill
    with pytest.raises(ValueError, match="other target weights"):
        load_mtp_head(TinyLlama(TARGET_CONFIG, seed=7))


def test_training_lowers_the_loss_of_the_token_after_next(models):
    target, _ = models
    _, report = train_mtp_head(target, steps=25, windows=8, batch=256, val_windows=4)
    assert report["loss_last10"] < report["loss_first10"] - 0.3
    assert 0.0 <= report["val_top1"] <= 1.0


class BigramWithEmbedding(BigramModel):
    """The bigram stand-in with the embedding an MTP head reads."""

    def __init__(self, trans: np.ndarray):
        super().__init__(trans)
        self.embed_tokens = torch.nn.Embedding(trans.shape[0], trans.shape[0])


def test_self_speculative_sampling_follows_the_target_law():
    """At T = 1 the tokens of self-speculation (head guess verified, bonus, or residual draw) have the target's
    joint law of 3 tokens: bigram stand-in, V = 3, BHC bound at DELTA."""
    n, vocab = 1200, 3
    gen = np.random.default_rng(9)
    p_trans = random_dists(gen, vocab, vocab, alpha=1.0)
    target = BigramWithEmbedding(p_trans)
    head = MTPHead(target.config, seed=2).eval()
    with torch.no_grad():
        for param in head.parameters():
            param.mul_(40.0)                     # a head whose guesses are confident and often wrong
    joint = np.einsum("a,ab,bc->abc", p_trans[1], p_trans, p_trans)
    counts = np.zeros_like(joint)
    accepted = proposed = 0
    for seed in range(n):
        res = self_speculative_generate(target, head, [0, 1], 3, SamplingParams(temperature=1.0), seed,
                                        stop_at_eos=False)
        counts[tuple(res.tokens)] += 1
        accepted += sum(res.accepted_per_step)
        proposed += sum(res.proposed_per_step)
    assert float(np.abs(counts / n - joint).sum()) < l1_bound(joint.size, n)
    assert 0 < accepted < proposed, "the run should mix acceptances and rejections"
