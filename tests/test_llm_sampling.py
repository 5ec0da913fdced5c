"""Sampling (infopt.llm.sampling): greedy is the argmax, top-k and top-p keep exactly the right sets, and a seeded
generator reproduces its draws."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from infopt.llm.sampling import SamplingParams, processed_probs, sample  # noqa: E402


def test_greedy_is_a_one_hot_argmax_and_draws_nothing():
    logits = torch.randn(3, 7, 11)
    probs = processed_probs(logits, SamplingParams())
    assert torch.equal(probs.argmax(-1), logits.argmax(-1)) and torch.equal(probs.sum(-1), torch.ones(3, 7))
    gen = torch.Generator().manual_seed(0)
    state = gen.get_state()
    assert torch.equal(sample(logits, SamplingParams(), gen), logits.argmax(-1))
    assert torch.equal(gen.get_state(), state)


def test_temperature_scales_the_softmax():
    logits = torch.randn(5, 9)
    torch.testing.assert_close(processed_probs(logits, SamplingParams(temperature=0.5)),
                               torch.softmax(logits / 0.5, -1))


def test_top_k_keeps_the_k_most_likely():
    logits = torch.randn(4, 20)
    probs = processed_probs(logits, SamplingParams(temperature=1.0, top_k=5))
    top = torch.topk(logits, 5, -1).indices
    for row in range(4):
        assert set(torch.nonzero(probs[row]).flatten().tolist()) == set(top[row].tolist())
        torch.testing.assert_close(probs[row, top[row]], torch.softmax(logits[row, top[row]], -1))


def test_top_p_keeps_the_smallest_set_reaching_the_mass():
    p = torch.tensor([0.05, 0.4, 0.1, 0.3, 0.15])
    logits = p.log()
    keep = lambda top_p: set(torch.nonzero(processed_probs(logits, SamplingParams(1.0, 0, top_p))).flatten().tolist())
    assert keep(0.4) == {1}                  # 0.4 alone reaches 0.4
    assert keep(0.41) == {1, 3}
    assert keep(0.7) == {1, 3}
    assert keep(0.71) == {1, 3, 4}
    assert keep(0.9) == {1, 3, 4, 2}
    assert keep(1.0) == {0, 1, 2, 3, 4}
    out = processed_probs(logits, SamplingParams(1.0, 0, 0.71))
    torch.testing.assert_close(out[[1, 3, 4]], torch.tensor([0.4, 0.3, 0.15]) / 0.85)
    # top-k first, then top-p on what top-k kept (renormalized): top-2 leaves 0.4/0.7 and 0.3/0.7
    assert set(torch.nonzero(processed_probs(logits, SamplingParams(1.0, 2, 0.5))).flatten().tolist()) == {1}
    assert set(torch.nonzero(processed_probs(logits, SamplingParams(1.0, 2, 0.6))).flatten().tolist()) == {1, 3}


def test_seeded_sampling_is_reproducible_and_follows_the_distribution():
    logits = torch.randn(2000, 6)
    params = SamplingParams(temperature=0.8, top_k=4)
    a = sample(logits, params, torch.Generator().manual_seed(7))
    b = sample(logits, params, torch.Generator().manual_seed(7))
    c = sample(logits, params, torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == (2000,)
    probs = processed_probs(logits, params)
    assert bool((probs[torch.arange(2000), a] > 0).all())            # never a token outside the kept set
    one = torch.tensor([2.0, 1.0, 0.0, -1.0])
    draws = sample(one.expand(20000, 4), SamplingParams(temperature=1.0), torch.Generator().manual_seed(1))
    freq = torch.bincount(draws, minlength=4).float() / 20000
    torch.testing.assert_close(freq, torch.softmax(one, -1), atol=0.015, rtol=0)


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError, match="top_k"):
        SamplingParams(top_k=-2)
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
