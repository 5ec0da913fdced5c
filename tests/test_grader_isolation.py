"""One bad upload or one dying worker costs only its own student: the intake reads each upload in a process of its
own under limits, the grader's sockets refuse a kernel's flood, and a worker that dies is replaced."""
import gzip
import json
import os
import tarfile
import time
from pathlib import Path
from queue import Empty

import pytest

from autograder.assemble import load_master, release_notebook
from autograder.executor import MESSAGE_CAP, IopubWatch, capped_context
from autograder.grade import run_jobs
from autograder.intake import MAX_NESTING, IntakeLimits, find_submissions, nesting, parse_notebook
from tests.grader_fixtures.adversarial import bad_crc_zip, deep_json_notebook, zip_bomb

pytestmark = pytest.mark.xdist_group("grader")
TOY = Path(__file__).parent / "grader_fixtures" / "toy_unit" / "toy_unit.py"


@pytest.fixture(scope="module")
def honest() -> bytes:
    return json.dumps(release_notebook(load_master(TOY), solved=True)).encode()


def test_nesting_is_counted_without_recursion():
    assert nesting(3, 10) == 0 and nesting([], 10) == 1 and nesting({"a": [1, {"b": []}]}, 10) == 4
    deep: list = []
    for _ in range(200_000):  # far past Python's recursion limit
        deep = [deep]
    assert nesting(deep, MAX_NESTING) == MAX_NESTING + 1  # stops counting past the limit


def test_parse_refuses_deep_json_at_each_depth(honest):
    assert parse_notebook(honest)[1] == ""
    assert nesting(json.loads(honest), MAX_NESTING) <= 8  # a real notebook is far below the limit
    for depth, words in ((MAX_NESTING + 5, f"more than {MAX_NESTING} levels"), (100_000, "nests deeper")):
        nb, error = parse_notebook(deep_json_notebook(honest, depth))
        assert nb is None and words in error, (depth, error)
    assert parse_notebook(deep_json_notebook(honest, MAX_NESTING - 4))[1] == ""  # within the limit: fine


def _tar_bomb(gigabytes: int) -> bytes:
    """A tar.gz of a few MB holding one member of `gigabytes` GB of zeros (to list it, tarfile inflates it all)."""
    info = tarfile.TarInfo("big.bin")
    info.size = gigabytes * 2**30
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    zeros = gzip.compress(bytes(64 * 2**20), compresslevel=9)
    return gzip.compress(header) + zeros * (gigabytes * 16) + gzip.compress(bytes(1024))


def test_each_upload_is_read_by_its_own_process_and_fails_alone(tmp_path, honest):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "amy.ipynb").write_bytes(honest)
    (uploads / "bob.zip").write_bytes(bad_crc_zip("toy_unit.ipynb", honest))
    (uploads / "cat.zip").write_bytes(zip_bomb("toy_unit.ipynb", 100 * 2**20))
    (uploads / "dan.ipynb").write_bytes(deep_json_notebook(honest, 100_000))
    os.mkfifo(uploads / "eve.ipynb")  # opening it waits for a writer that never comes
    (uploads / "fay.tar.gz").write_bytes(_tar_bomb(8))
    (uploads / "zed.ipynb").write_bytes(honest)
    started = time.monotonic()
    found = find_submissions(uploads, "toy_unit", limits=IntakeLimits(memory_mb=300, cpu_s=2, wall_s=10), workers=4)
    assert time.monotonic() - started < 40
    status = {s: (sub.status, sub.message) for s, sub in found.items()}
    assert status["amy"] == ("ok", "") and status["zed"] == ("ok", ""), status
    assert found["amy"].notebook["cells"] and found["amy"].digest
    assert "not a readable archive" in status["bob"][1] and "CRC" in status["bob"][1], status["bob"]
    assert "over 64 MB" in status["cat"][1], status["cat"]
    assert "nests deeper" in status["dan"][1], status["dan"]
    assert "took over 10 s" in status["eve"][1], status["eve"]
    assert "after 2 s of CPU" in status["fay"][1], status["fay"]
    assert all(st == "error" for s, (st, _) in status.items() if s not in ("amy", "zed")), status


def test_an_upload_that_needs_too_much_memory_is_that_students_error(tmp_path, honest):
    wide = honest.replace(b'"cells"', b'"wide": [' + b"0," * 30_000_000 + b'0], "cells"', 1)  # 60 MB, 30M items
    (tmp_path / "gus.ipynb").write_bytes(wide)
    (tmp_path / "amy.ipynb").write_bytes(honest)
    found = find_submissions(tmp_path, "toy_unit", limits=IntakeLimits(memory_mb=150, cpu_s=60, wall_s=60))
    assert found["amy"].status == "ok"
    assert found["gus"].status == "error" and "more memory than the grader allows" in found["gus"].message, \
        found["gus"].message


def test_reading_in_this_process_still_fails_per_student(tmp_path, honest):
    (tmp_path / "amy.ipynb").write_bytes(honest)
    (tmp_path / "bob.zip").write_bytes(bad_crc_zip("toy_unit.ipynb", honest))
    (tmp_path / "dan.ipynb").write_bytes(deep_json_notebook(honest, 100_000))
    found = find_submissions(tmp_path, "toy_unit", isolate=False)
    assert found["amy"].status == "ok"
    assert found["bob"].status == "error" and "CRC" in found["bob"].message
    assert found["dan"].status == "error" and "nests" in found["dan"].message


def test_an_oversized_kernel_message_is_dropped_and_the_output_channel_comes_back(tmp_path):
    """A kernel's iopub (here a PUB socket we bind, speaking Jupyter's protocol) sends one message over the cap
    between small ones: the grader's client never receives it, and IopubWatch connects the channel again."""
    import zmq
    from jupyter_client.blocking import BlockingKernelClient
    from jupyter_client.session import Session

    context = capped_context()
    session = Session(key=b"k")
    kc = BlockingKernelClient(context=context, session=session, transport="ipc", ip=str(tmp_path / "kernel"),
                              iopub_port=7)
    kernel = zmq.Context()
    pub = kernel.socket(zmq.PUB)
    pub.bind(f"ipc://{tmp_path}/kernel-7")
    watch = IopubWatch(kc)

    def receive(text: str) -> list[str]:
        """Send `text` until it arrives; what the client received meanwhile."""
        got: list[str] = []
        deadline = time.monotonic() + 10
        while text not in got:
            assert time.monotonic() < deadline, f"{text!r} never arrived; got {len(got)} messages"
            session.send(pub, "stream", {"name": "stdout", "text": text})
            watch.check()
            try:
                got.append(kc.get_iopub_msg(timeout=0.1)["content"]["text"])
            except Empty:
                pass
        return got

    try:
        assert receive("before")
        session.send(pub, "stream", {"name": "stdout", "text": "x" * (MESSAGE_CAP + 1)})
        deadline = time.monotonic() + 10
        while not watch.check():
            assert time.monotonic() < deadline, "the oversized message did not drop the connection"
            time.sleep(0.05)
        after = receive("after")
        assert watch.dropped == 1 and all(len(text) <= MESSAGE_CAP for text in after)
        session.send(pub, "stream", {"name": "stdout", "text": "y" * (MESSAGE_CAP // 2)})  # under the cap: whole
        deadline = time.monotonic() + 10
        while True:
            text = kc.get_iopub_msg(timeout=10)["content"]["text"]
            if text.startswith("y"):
                break
        assert len(text) == MESSAGE_CAP // 2 and not watch.check()
    finally:
        watch.close()
        kc.stop_channels()
        pub.close(0)
        kernel.term()
        context.destroy(linger=0)


def _work(job: dict) -> dict:
    """A stand-in for grade_one: the job named 'dies' kills its worker process; the others return a record."""
    if job["student"] == "dies":
        os._exit(9)
    time.sleep(0.2)
    return {"student": job["student"], "status": "graded", "total": 1.0}


def test_a_worker_that_dies_costs_only_its_own_student():
    jobs = [{"student": s, "cells": [{"kind": "test", "grade_id": "ex_test", "points": 2.0}], "notes": []}
            for s in ("amy", "bob", "dies", "cat", "dan", "eve")]
    done: list[str] = []
    records = {r["student"]: r for r in run_jobs(jobs, workers=2, on_done=lambda r: done.append(r["student"]),
                                                  work=_work)}
    assert sorted(records) == sorted(j["student"] for j in jobs) and sorted(done) == sorted(records)
    for student in ("amy", "bob", "cat", "dan", "eve"):
        assert records[student]["status"] == "graded", records[student]
    lost = records["dies"]
    assert lost["status"] == "error" and "died twice" in lost["reason"], lost
    assert lost["max_total"] == 2.0 and lost["exercises"] == {"ex": {"score": 0.0, "max": 2.0}}
