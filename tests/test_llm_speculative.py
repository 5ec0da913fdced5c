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
    vocab, length, k, n = 4, 3, 2, 5000
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
