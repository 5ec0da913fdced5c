"""Netron embedded in a notebook: serve one ONNX model on 127.0.0.1 and show it in an IFrame.

We serve netron's own static files (from the pinned ``netron`` package) with a small ``http.server`` in a daemon
thread of the kernel, so the server dies with the kernel; ``stop()``, the context manager and an atexit hook stop
it earlier. Netron's page is made to work offline and stay quiet: its consent dialog (which first asks
ipinfo.io) is answered by a cookie set before its scripts run, its usage telemetry is off (it only runs in a
"packaged" build), and its "please update" dialog, shown 180 days after the package's build date, is not shown:
this copy is pinned on purpose and updated with the course, not by students.
"""
from __future__ import annotations

import atexit
import datetime
import http.server
import mimetypes
import re
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from ..runtime.processes import free_port

HOST = "127.0.0.1"
_RUNNING: "set[NetronServer]" = set()  # every server started here and not yet stopped (strong refs: a running
# server whose last user reference was dropped must still be stoppable by stop_all)
_LOCK = threading.Lock()


def _netron_dir() -> Path:
    import netron

    return Path(netron.__file__).resolve().parent


# Served as /infopt-offline.js (netron's page allows only scripts of its own origin) and run before netron's
# module scripts: sets the consent cookie; where the page may not keep cookies (a cross-site frame), answers for them.
_CONSENT_SCRIPT = (
    '(function () { var c = "consent=" + Date.now(); document.cookie = c + "; path=/; max-age=2592000; SameSite=Lax";'
    ' if (document.cookie.indexOf("consent=") < 0) { try { Object.defineProperty(document, "cookie",'
    ' { configurable: true, get: function () { return c; }, set: function () {} }); } catch (e) {} } })();\n'
)


def _offline_index(model_name: str) -> bytes:
    """Netron's index.html for one model, made to work offline (see the module docstring)."""
    html = (_netron_dir() / "index.html").read_text(encoding="utf-8")
    today = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    meta = "\n".join([
        '<meta name="type" content="Python">',
        '<meta name="version" content="0.0.0">',  # not "packaged": no telemetry, no error reports
        f'<meta name="file" content="/data/{model_name}">',
        f'<meta name="name" content="{model_name}">',
        f'<meta name="identifier" content="{model_name}">',
        # consent answered before netron's scripts run, so it neither asks ipinfo.io nor shows a dialog
        '<script src="/infopt-offline.js"></script>',
    ])
    html = re.sub(r'<meta name="version" content="[^"]*">', lambda _: meta, html, count=1)
    html = re.sub(r'<meta name="date" content="[^"]*">', f'<meta name="date" content="{today}">', html, count=1)
    return html.encode("utf-8")


class _OfflineNetronHandler(http.server.BaseHTTPRequestHandler):
    """Serves netron's static files, its patched index page, and the one model under /data/."""

    model_path: Path

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?", 1)[0]
        body, ctype = None, "application/octet-stream"
        if path in ("/", "/index.html"):
            body, ctype = _offline_index(self.model_path.name), "text/html"
        elif path == "/infopt-offline.js":
            body, ctype = _CONSENT_SCRIPT.encode(), "text/javascript"
        elif path == f"/data/{self.model_path.name}":
            body = self.model_path.read_bytes()
        else:
            root = _netron_dir()
            target = (root / path.lstrip("/")).resolve()
            if target.is_file() and root in target.parents:
                body = target.read_bytes()
                ctype = mimetypes.guess_type(target.name)[0] or ctype
                if target.suffix == ".js":
                    ctype = "text/javascript"
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # keep requests off the notebook's stderr
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:  # a closed browser tab is not an error
        pass


class NetronServer:
    """A netron server for one model (ONNX ModelProto or file path) on 127.0.0.1, a free port, no browser.

    Use ``with NetronServer(model) as srv: srv.iframe()`` or call ``stop()``; leftovers stop at exit.
    """

    def __init__(self, model: Any, host: str = HOST, port: int | None = None) -> None:
        self.host = host
        self.port = port
        self.address: tuple[str, int] | None = None
        self._tmpdir: str | None = None
        self._httpd: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
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
        """Whether our server is serving."""
        return getattr(self, "_httpd", None) is not None

    def start(self) -> "NetronServer":
        """Start serving (idempotent); returns self."""
        if self.running:
            return self
        handler = type("_Handler", (_OfflineNetronHandler,), {"model_path": self.path})
        with _LOCK:
            self._httpd = _QuietServer((self.host, self.port or free_port(self.host)), handler)
            self.address = (self.host, int(self._httpd.server_address[1]))
            self._thread = threading.Thread(target=self._httpd.serve_forever, name=f"netron-{self.address[1]}",
                                            daemon=True)
            self._thread.start()
            _RUNNING.add(self)
        return self

    def stop(self) -> None:
        """Stop the server, close its port and remove the temporary model file, if any (idempotent)."""
        httpd, self._httpd = getattr(self, "_httpd", None), None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5.0)
        self.address = None if httpd is not None else self.address
        with _LOCK:
            _RUNNING.discard(self)
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
    show_netron.server = srv  # type: ignore[attr-defined]
    return srv.iframe(height)



def stop_all() -> int:
    """Stop every netron server this process started through this module; returns how many were running."""
    with _LOCK:
        servers = list(_RUNNING)
    for s in servers:
        s.stop()
    return len(servers)


atexit.register(stop_all)
