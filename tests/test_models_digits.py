"""Digits data (infopt.data) and the digits models: split, normalization, a short training run."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from infopt.data import load_digits_split, train_digits_model
from infopt.models import digits_cnn, digits_mlp, export_onnx


def test_split_shapes_dtypes_and_normalization():
    d = load_digits_split(seed=0)
    assert d.x_train.shape[1:] == (1, 8, 8) and d.x_train.dtype == np.float32
    assert len(d.x_train) + len(d.x_test) == 1797 and d.y_train.dtype == np.int64
    assert abs(d.x_train.mean()) < 1e-4 and abs(d.x_train.std() - 1) < 1e-3
    assert set(np.unique(d.y_test)) == set(range(10))  # stratified
    a, b = load_digits_split(seed=1), load_digits_split(seed=1)
    np.testing.assert_array_equal(a.x_test, b.x_test)
    assert not np.array_equal(a.y_test, d.y_test)


def test_split_unpacks():
    x_tr, y_tr, x_te, y_te = load_digits_split()
    assert len(x_tr) == len(y_tr) and len(x_te) == len(y_te)


@pytest.fixture
def one_thread():
    """Train on one thread (fast and steady on a shared 2-core machine); restores the setting after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("make,floor", [(digits_mlp, 0.9), (digits_cnn, 0.95)])
def test_models_train_quickly(make, floor, one_thread):
    acc = train_digits_model(make(), epochs=3)
    assert acc >= floor


def test_digits_models_export(tmp_path):
    m = export_onnx(digits_cnn(), torch.zeros(1, 1, 8, 8), path=tmp_path / "cnn.onnx")
    assert (tmp_path / "cnn.onnx").exists() and "Conv" in {n.op_type for n in m.graph.node}


def test_export_rejects_non_module():
    with pytest.raises(TypeError, match="nn.Module"):
        export_onnx(lambda x: x, torch.zeros(1))


def test_bad_arguments():
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits_split(test_fraction=1.5)
    with pytest.raises(ValueError, match="epochs"):
        train_digits_model(digits_mlp(), epochs=0)
