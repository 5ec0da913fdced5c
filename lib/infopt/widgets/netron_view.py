"""Netron embedded in a notebook: serve one ONNX model on 127.0.0.1 and show it in an IFrame.

netron 9.3.3 serves from a daemon thread of the calling process (``netron.serve`` starts an
``http.server`` in a thread and returns its address), so the server dies with the kernel. We still
stop every server we start explicitly: ``stop()``, the context manager, and an atexit hook.
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import socket
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
_LIVE: "weakref.WeakSet[NetronServer]" = weakref.WeakSet()
_LOCK = threading.Lock()


def _free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class NetronServer:
    """A netron server for one model (ONNX ModelProto or file path) on 127.0.0.1, a free port, no browser.

    Use ``with NetronServer(model) as srv: srv.iframe()`` or call ``stop()``; leftovers stop at exit.
    """

    def __init__(self, model: Any, host: str = HOST, port: int | None = None) -> None:
        self.host = host
        self.port = port
        self.address: tuple[str, int] | None = None
        self._tmpdir: str | None = None
        self.path = self._model_path(model)

    def _model_path(self, model: Any) -> Path:
        if isinstance(model, (str, os.PathLike)):
            path = Path(model)
            if not path.is_file():
                raise FileNotFoundError(f"model file {path} does not exist; give an .onnx path or an onnx.ModelProto")
            return path
        try:
            import onnx
        except ImportError:  # pragma: no cover - onnx is a core dependency
            raise TypeError("NetronServer needs a file path (onnx is not installed)") from None
        if not isinstance(model, onnx.ModelProto):
            raise TypeError(
                f"NetronServer takes an onnx.ModelProto or a file path, got {type(model).__name__}; "
                "for an infopt Graph use infopt.ir.onnx_io.to_onnx(graph) first"
            )
        self._tmpdir = tempfile.mkdtemp(prefix="infopt-netron-")
        path = Path(self._tmpdir) / f"{model.graph.name or 'model'}.onnx"
        onnx.save(model, str(path))
        return path

    @property
    def url(self) -> str:
        """The URL the server answers on (after ``start``)."""
        if self.address is None:
            raise RuntimeError("the netron server is not running; call start() first")
        return f"http://{self.address[0]}:{self.address[1]}"

    @property
    def running(self) -> bool:
        """Whether netron reports a live server at our address."""
        import netron

        return self.address is not None and bool(netron.status(self.address))

    def start(self) -> "NetronServer":
        """Start serving (idempotent); returns self."""
        import netron

        if self.running:
            return self
        root = logging.getLogger()
        quiet = logging.NullHandler()
        with _LOCK:
            # netron.serve calls logging.basicConfig when the root logger has no handler, and logs
            # "Serving ..." at INFO; a temporary NullHandler keeps both off the notebook's stderr.
            root.addHandler(quiet)
            nlog = logging.getLogger("netron.server")
            level = nlog.level
            nlog.setLevel(logging.WARNING)
            try:
                address = (self.host, self.port or _free_port(self.host))
                self.address = tuple(netron.serve(str(self.path), None, address=address, browse=False))
            finally:
                nlog.setLevel(level)
                root.removeHandler(quiet)
        _LIVE.add(self)
        return self

    def stop(self) -> None:
        """Stop the server and remove the temporary model file, if any (idempotent)."""
        import netron

        if self.address is not None:
            nlog = logging.getLogger("netron.server")
            level = nlog.level
            nlog.setLevel(logging.WARNING)
            try:
                netron.stop(self.address)
            finally:
                nlog.setLevel(level)
            for t in threading.enumerate():  # wait for the serving thread so the port is closed on return
                if getattr(t, "address", None) == self.address and t is not threading.current_thread():
                    t.join(timeout=2.0)
        _LIVE.discard(self)
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def iframe(self, height: int = 600) -> Any:
        """An IPython IFrame showing the served model (starts the server if needed)."""
        from IPython.display import IFrame

        self.start()
        return IFrame(self.url, width="100%", height=height)

    def __enter__(self) -> "NetronServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.url if self.address else "not started"
        return f"NetronServer({self.path.name}, {state})"


def show_netron(model_or_path: Any, height: int = 600) -> Any:
    """Serve a model with netron on 127.0.0.1 and return an IFrame; the server is kept in ``show_netron.server``.

    Call ``stop_all()`` (or ``show_netron.server.stop()``) when done; any left running stop at exit.
    """
    srv = NetronServer(model_or_path).start()
    _KEEP.append(srv)
    show_netron.server = srv  # type: ignore[attr-defined]
    return srv.iframe(height)


_KEEP: list[NetronServer] = []  # servers made by show_netron (the WeakSet alone would let them be collected)


def stop_all() -> int:
    """Stop every netron server this process started through this module; returns how many were running."""
    servers = list(_LIVE) + [s for s in _KEEP if s not in _LIVE]
    count = sum(1 for s in servers if s.address is not None and s.running)
    for s in servers:
        s.stop()
    _KEEP.clear()
    return count


atexit.register(stop_all)
