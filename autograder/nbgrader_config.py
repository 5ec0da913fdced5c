"""nbgrader configuration for every course root the autograder makes (copied there as nbgrader_config.py).

nbgrader executes this file with `c = get_config()` in scope; importing it as a module also works (for tests).
It also installs the workaround for nbclient bug jupyter/nbclient#312 (see `_guard_nbclient_312`).
"""
try:
    c = get_config()  # noqa: F821  (defined when nbgrader loads this file)
except NameError:  # imported as a plain module
    from traitlets.config import Config

    c = Config()

c.CourseDirectory.course_id = "infopt"
# Notebooks are named like their unit: course/<unit>/<unit>.ipynb.
c.CourseDirectory.notebook_id = "*"
# The stub a student sees in place of each solution.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.ClearSolutions.enforce_metadata = True
# Execution at autograde: a moderate per-cell timeout (the notebooks run < 60 s in total), interrupt on timeout,
# and a loud error when IOPub output never arrives (never a silent wait).
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True
c.Execute.raise_on_iopub_timeout = True
c.Execute.iopub_timeout = 10
c.Execute.execute_retries = 0


def sliced_get_msg(original, slice_s: float = 0.5):
    """Wrap an async `get_msg(self, timeout)` so that a long wait is made of short polls of `slice_s` seconds.

    The workaround for jupyter/nbclient#312: under load (widget comm messages) the asyncio zmq poll can miss
    its wake-up, so nbclient's single `shell_channel.get_msg(timeout=cell_timeout)` returns only when the whole
    timeout has passed and the next cell starts silently late. Re-polling re-checks the socket, so a missed
    wake-up costs at most one slice. Same total timeout, same `queue.Empty` on expiry.
    """
    import time
    from queue import Empty

    async def get_msg(self, timeout=None):
        if timeout is not None and timeout <= slice_s:
            return await original(self, timeout=timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = slice_s if deadline is None else min(slice_s, max(0.0, deadline - time.monotonic()))
            try:
                return await original(self, timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    get_msg._infopt_guard = True
    return get_msg


def _guard_nbclient_312() -> None:
    """Install `sliced_get_msg` on jupyter_client's async socket channel (once per process)."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    if not getattr(AsyncZMQSocketChannel.get_msg, "_infopt_guard", False):
        AsyncZMQSocketChannel.get_msg = sliced_get_msg(AsyncZMQSocketChannel.get_msg)


_guard_nbclient_312()
