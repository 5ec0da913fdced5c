"""Netron embedding: the server serves the model on 127.0.0.1, stops, and never outlives its process."""
from __future__ import annotations

import datetime
import re
import socket
import subprocess
import sys
import textwrap
import urllib.request

import onnx
import pytest
from onnx import TensorProto, helper

from infopt.widgets.netron_view import NetronServer, show_netron, stop_all


def tiny_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    return helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny", [x], [y]))


def port_open(address) -> bool:
    try:
        with socket.create_connection(address, timeout=1):
            return True
    except OSError:
        return False


def test_serves_model_on_loopback_then_stops(capfd):
    model = tiny_model()
    with NetronServer(model) as srv:
        assert srv.address[0] == "127.0.0.1" and srv.running
        page = urllib.request.urlopen(srv.url, timeout=5).read().decode()
        assert "netron" in page.lower() and f"/data/{srv.path.name}" in page
        # offline and quiet: consent answered by a cookie, not a "packaged" build (no telemetry), no update nag
        assert '<script src="/infopt-offline.js">' in page
        assert b'"consent="' in urllib.request.urlopen(f"{srv.url}/infopt-offline.js", timeout=5).read() and '<meta name="version" content="0.0.0">' in page
        assert re.search(r'<meta name="date" content="(\d{4}-\d\d-\d\d)', page).group(1) == datetime.date.today().isoformat()
        js = urllib.request.urlopen(f"{srv.url}/browser.js", timeout=5)
        assert js.headers["Content-Type"] == "text/javascript" and b"class" in js.read()
        served = urllib.request.urlopen(f"{srv.url}/data/{srv.path.name}", timeout=5).read()
        assert onnx.load_from_string(served).graph.name == "tiny"
        address, tmp = srv.address, srv.path
    assert not port_open(address) and not srv.running
    assert not tmp.exists(), "the temporary model file is removed on stop"
    assert capfd.readouterr().err == "", "starting/stopping netron must not write to stderr (test cells)"


def test_serves_a_file_and_iframe(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(tiny_model(), path)
    srv = NetronServer(path)
    frame = srv.iframe(height=300)
    try:
        assert srv.url in frame._repr_html_() and frame.height == 300
    finally:
        srv.stop()
    assert path.exists(), "a user's own file is never deleted"
    srv.stop()  # idempotent


def test_show_netron_and_stop_all():
    frame = show_netron(tiny_model(), height=200)
    address = show_netron.server.address
    assert port_open(address) and "iframe" in frame._repr_html_()
    assert stop_all() >= 1
    assert not port_open(address)


def test_stop_all_reaches_a_server_nobody_holds():
    """A started server whose last reference was dropped still serves; stop_all must still find and stop it."""
    import gc

    address = NetronServer(tiny_model()).start().address
    gc.collect()
    assert port_open(address)
    assert stop_all() == 1
    assert not port_open(address) and stop_all() == 0


def test_bad_inputs():
    with pytest.raises(FileNotFoundError, match="nope.onnx"):
        NetronServer("/nonexistent/nope.onnx")
    with pytest.raises(TypeError, match="ModelProto"):
        NetronServer(42)


def test_no_server_outlives_its_process():
    """A process that starts a server and exits without stopping it leaves no listening port behind."""
    code = textwrap.dedent("""
        import onnx
        from onnx import helper, TensorProto
        from infopt.widgets.netron_view import show_netron
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
        m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]))
        show_netron(m)
        print(show_netron.server.address[1], flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    port = int(proc.stdout.strip())
    assert not port_open(("127.0.0.1", port))
