"""Tests for autograder/nbgrader_config.py: the settings nbgrader gets and the nbclient#312 workaround."""
from __future__ import annotations

import asyncio
import time
from queue import Empty

from autograder import nbgrader_config


def test_config_values():
    c = nbgrader_config.c
    assert c.ClearSolutions.code_stub["python"].endswith("raise NotImplementedError()")
    assert c.Execute.timeout > 0 and c.Execute.raise_on_iopub_timeout is True


class _Channel:
    """A fake socket channel: the message is ready only after `ready_at` (monotonic), and a poll that starts
    before then never wakes up (the missed wake-up of nbclient#312)."""

    def __init__(self, ready_at: float):
        self.ready_at, self.calls = ready_at, []

    async def get_msg(self, timeout=None):
        self.calls.append(timeout)
        if time.monotonic() >= self.ready_at:
            return {"msg": "reply"}
        await asyncio.sleep(timeout)  # missed wake-up: waits the whole timeout, then Empty
        raise Empty


def test_sliced_get_msg_recovers_a_missed_wakeup_within_one_slice():
    ch = _Channel(time.monotonic() + 0.15)
    get = nbgrader_config.sliced_get_msg(type(ch).get_msg, slice_s=0.05)
    t0 = time.monotonic()
    assert asyncio.run(get(ch, timeout=30)) == {"msg": "reply"}
    assert time.monotonic() - t0 < 5, "a missed wake-up must not cost the whole 30 s timeout"
    assert all(t <= 0.05 for t in ch.calls) and len(ch.calls) >= 2


def test_sliced_get_msg_still_times_out():
    ch = _Channel(time.monotonic() + 3600)
    get = nbgrader_config.sliced_get_msg(type(ch).get_msg, slice_s=0.05)
    t0 = time.monotonic()
    try:
        asyncio.run(get(ch, timeout=0.2))
    except Empty:
        pass
    else:
        raise AssertionError("expected queue.Empty at the deadline")
    assert 0.15 < time.monotonic() - t0 < 5


def test_guard_is_installed_once():
    from jupyter_client.channels import AsyncZMQSocketChannel

    assert getattr(AsyncZMQSocketChannel.get_msg, "_infopt_guard", False)
    before = AsyncZMQSocketChannel.get_msg
    nbgrader_config._guard_nbclient_312()
    assert AsyncZMQSocketChannel.get_msg is before
