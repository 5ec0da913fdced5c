"""The baseline nobody here wrote: Hugging Face ``generate`` serving a trace with static batches.

The same tiny model (``infopt.llm.hf.to_hf_model``), the same requests and the same virtual clock as
``infopt.llm.engine.StaticEngine``: when idle, wait until ``batch_size`` requests have arrived (or no more will),
left-pad their prompts, run ``generate`` (greedy, EOS ignored, as long as the batch's longest request asks) and
time every token with a streamer. Transformers is imported inside the functions.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

from .run_stats import RequestStats, RunStats
from .traces import Request


def _streamer(times: list[float]) -> Any:
    """A transformers streamer that records when ``generate`` hands out each step's tokens (the prompt first)."""
    from transformers.generation.streamers import BaseStreamer

    class _Clock(BaseStreamer):
        def put(self, value: Any) -> None:
            times.append(time.perf_counter())

        def end(self) -> None:
            pass

    return _Clock()


def hf_static_generate(model: Any, trace: Sequence[Request], batch_size: int, hf_model: Any = None) -> RunStats:
    """Serve ``trace`` with transformers' ``generate`` in static batches of ``batch_size`` (left padding, greedy,
    EOS ignored): per-request TTFT and TPOT from the streamer's token times on the virtual clock. ``model`` is our
    TinyLlama (converted with ``to_hf_model`` unless ``hf_model`` is given)."""
    import torch

    from .hf import to_hf_model
    from .tokenizer import PAD

    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    hf = to_hf_model(model) if hf_model is None else hf_model
    pending = sorted(trace, key=lambda r: (r.arrival_s, r.req_id))
    clock, out = 0.0, []
    with torch.inference_mode():
        for start in range(0, len(pending), batch_size):
            batch = pending[start:start + batch_size]
            clock = max(clock, batch[-1].arrival_s)       # a static batch starts when its last member is there
            width = max(len(r.prompt_ids) for r in batch)
            ids = torch.tensor([[PAD] * (width - len(r.prompt_ids)) + list(r.prompt_ids) for r in batch])
            mask = torch.tensor([[0] * (width - len(r.prompt_ids)) + [1] * len(r.prompt_ids) for r in batch])
            new = max(r.max_new_tokens for r in batch)
            times: list[float] = []
            t0 = time.perf_counter()
            gen = hf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=0,
                              do_sample=False, pad_token_id=PAD, eos_token_id=None, streamer=_streamer(times))
            total = time.perf_counter() - t0
            step_end = [t - t0 for t in times[1:]]          # times[0]: the prompt handed to the streamer
            if len(step_end) != new or gen.shape[1] != width + new:
                raise RuntimeError(f"generate made {gen.shape[1] - width} tokens ({len(step_end)} streamed) for a "
                                   f"batch asking {new}; did it stop early at an EOS?")
            for b, r in enumerate(batch):
                n = r.max_new_tokens
                out.append(RequestStats(r.req_id, r.arrival_s, len(r.prompt_ids), gen[b, width:width + n].tolist(),
                                        first_token_s=clock + step_end[0], finish_s=clock + step_end[n - 1]))
            clock += total
    reqs = sorted(out, key=lambda r: r.req_id)
    return RunStats(requests=reqs, steps=[], num_blocks=0, block_size=1, peak_blocks=0, preemptions=0,
                    extra={"batch_size": batch_size, "engine": "transformers.generate"})
