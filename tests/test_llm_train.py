"""Training (infopt.llm.train): the real script regenerates both npz files and its loss falls; the shipped weights load
with the config and metadata they claim; float16 storage round-trips."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from infopt.llm import train  # noqa: E402
from infopt.llm.model import (DATA_DIR, DRAFT_CONFIG, TARGET_CONFIG, TinyLlama, load_model, load_weights,  # noqa: E402
                              save_weights)


def test_the_script_regenerates_both_models_and_the_loss_falls(tmp_path, capsys):
    torch.set_num_threads(1)
    report = train.main(["--out", str(tmp_path), "--steps-scale", "0.03", "--threads", "1"])
    for name, config in (("target", TARGET_CONFIG), ("draft", DRAFT_CONFIG)):
        model, meta = load_weights(tmp_path / f"{name}.npz")
        assert model.config == config and meta["steps"] == report[name]["steps"] >= 8
        assert report[name]["loss_end"] < report[name]["loss_start"] - 0.3, report[name]
    assert "loss (nats/byte)" in capsys.readouterr().out


def test_a_few_steps_clearly_lower_the_loss():
    torch.set_num_threads(1)
    _, losses = train.train_model(DRAFT_CONFIG, steps=40, seed=0, batch=8, seq_len=64)
    assert len(losses) == 40 and losses[0] > 5.0           # ~ln(259) = 5.56 at a random start
    assert np.mean(losses[-5:]) < losses[0] - 1.5, losses


@pytest.mark.parametrize("name,config", [("target", TARGET_CONFIG), ("draft", DRAFT_CONFIG)])
def test_shipped_weights_load_with_the_config_and_metadata_they_claim(name, config):
    model = load_model(name)
    assert model.config == config and not model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    with np.load(DATA_DIR / f"{name}.npz") as data:
        meta = json.loads(str(data["__meta__"]))
        assert all(data[k].dtype == np.float16 for k in data.files if k != "__meta__")
    assert meta["corpus_modules"] == list(train.CORPUS_MODULES) and meta["steps"] == train.STEPS[name]
    assert meta["loss_last10"] < meta["loss_first10"] - 2.0 and meta["loss_last10"] < 2.5
    assert (DATA_DIR / f"{name}.npz").stat().st_size < 4e6
    if meta["python_version"].rsplit(".", 1)[0] == ".".join(map(str, __import__("sys").version_info[:2])):
        assert hashlib.sha256(train.corpus_text().encode()).hexdigest() == meta["corpus_sha256"]


def test_float16_storage_round_trips(tmp_path):
    model = TinyLlama(DRAFT_CONFIG, seed=7)
    back, meta = load_weights(save_weights(model, tmp_path / "m.npz", note="x"))
    assert meta["note"] == "x" and back.config == DRAFT_CONFIG
    for (k, a), (_, b) in zip(model.state_dict().items(), back.state_dict().items()):
        torch.testing.assert_close(b, a.to(torch.float16).to(torch.float32), rtol=0, atol=0, msg=k)
    with pytest.raises(FileNotFoundError, match="infopt.llm.train"):
        load_weights(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="target"):
        load_model("giant")
