"""Generation (infopt.llm.generate): every cache gives the same tokens (greedy and seeded sampling), one forward pass
per new token, stop at EOS, clear errors; the trained model continues Python source with Python-looking text."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from infopt.llm.generate import generate  # noqa: E402
from infopt.llm.model import DRAFT_CONFIG, TinyLlama, load_model  # noqa: E402
from infopt.llm.sampling import SamplingParams  # noqa: E402
from infopt.llm.tokenizer import EOS, ByteTokenizer  # noqa: E402

torch.set_num_threads(1)
CACHES = ["none", "contiguous", "paged"]


class EOSAfterThree(TinyLlama):
    """A model that makes EOS the argmax from its third generated position on (to test stopping)."""

    def forward(self, tokens, positions=None, cache=None, seq_ids=None):
        out = super().forward(tokens, positions, cache, seq_ids)
        pos = torch.arange(tokens.shape[1]) if positions is None else positions[0]
        out[:, pos >= self.eos_from, EOS] += 1e4
        return out


def test_every_cache_gives_the_same_tokens_greedy_and_sampled():
    model = load_model("draft")
    prompt = ByteTokenizer().encode("import os\n\ndef ")
    for params in (SamplingParams(), SamplingParams(temperature=0.9, top_k=20, top_p=0.95)):
        runs = [generate(model, prompt, 40, params, cache=c, seed=5, block_size=4) for c in CACHES]
        assert runs[0].tokens == runs[1].tokens == runs[2].tokens
        assert all(r.forward_passes == len(r.tokens) == 40 for r in runs)
    sampled = [generate(model, prompt, 40, SamplingParams(temperature=1.0), seed=s).tokens for s in (1, 1, 2)]
    assert sampled[0] == sampled[1] != sampled[2]


def test_stops_after_eos_unless_told_not_to():
    model = EOSAfterThree(DRAFT_CONFIG, seed=0).eval()
    prompt = [257, 100, 101]
    model.eos_from = len(prompt) + 2        # the logits at this position pick the 4th new token
    for cache in CACHES:
        r = generate(model, prompt, 10, cache=cache)
        assert len(r.tokens) == 4 and r.tokens[-1] == EOS and EOS not in r.tokens[:-1]
        assert r.forward_passes == 4
    assert len(generate(model, prompt, 10, stop_at_eos=False).tokens) == 10


def test_trained_model_writes_python_looking_text():
    model = load_model("target")
    tok = ByteTokenizer()
    params = SamplingParams(temperature=0.7, top_k=40)
    text = "".join(tok.decode(generate(model, tok.encode("    def __init__(self"), 100, params, seed=s).tokens)
                   for s in range(3))
    printable = sum(c.isascii() and (c.isprintable() or c in "\n\t") for c in text) / max(1, len(text))
    assert printable > 0.95, repr(text)
    assert any(w in text for w in ("self", "return", "def ", " = ", "if ", "None")), repr(text)


def test_bad_requests_are_named():
    model = TinyLlama(DRAFT_CONFIG)
    with pytest.raises(ValueError, match="empty"):
        generate(model, [], 3)
    with pytest.raises(ValueError, match="max_seq_len=512"):
        generate(model, [257] * 500, 20)
    with pytest.raises(ValueError, match="cache must be one of"):
        generate(model, [257], 3, cache="static")
