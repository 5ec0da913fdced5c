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


def _guard_nbclient_312(slice_s: float = 0.5) -> None:
    """Work around jupyter/nbclient#312: poll the kernel's sockets in short slices instead of one long wait.

    Under load (widget comm messages) the asyncio zmq poll can miss its wake-up, so nbclient's single
    `shell_channel.get_msg(timeout=cell_timeout)` returns only when the whole timeout has passed and the next
    cell starts silently late. Re-polling every `slice_s` seconds re-checks the socket, so a missed wake-up
    costs at most one slice. Same total timeout, same Empty on expiry.
    """
    import time
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    if getattr(AsyncZMQSocketChannel.get_msg, "_infopt_guard", False):
        return
    original = AsyncZMQSocketChannel.get_msg

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
    AsyncZMQSocketChannel.get_msg = get_msg


_guard_nbclient_312()
