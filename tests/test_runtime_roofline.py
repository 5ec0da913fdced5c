"""Roofline helper and interleaved timing: ceilings, measured figures are sane, the chart has every point."""
import numpy as np
import pytest

from infopt.runtime import interleaved, median_ratio, paired_ratio
from infopt.runtime.roofline import (Roofline, label_positions, measure_bandwidth_gbs, measure_peak_gflops,
                                     roofline_figure)

rng = np.random.default_rng()


def test_attainable_is_min_of_ceilings():
    peak, bw = float(rng.uniform(10, 200)), float(rng.uniform(1, 50))
    r = Roofline(peak, bw)
    ai = rng.uniform(0.01, 1000, 50)
    np.testing.assert_allclose(r.attainable(ai), np.minimum(peak, ai * bw))
    assert np.isclose(r.attainable(r.ridge), peak)


def test_measured_peak_and_bandwidth_are_plausible():
    peak = measure_peak_gflops(iters=20_000, repeats=3)
    bw = measure_bandwidth_gbs(megabytes=8, repeats=3)
    assert 0.5 < peak < 5000, peak
    assert 0.05 < bw < 5000, bw


def test_figure_has_roof_and_points():
    fig = roofline_figure(Roofline(100.0, 10.0), [{"name": "a", "intensity": 0.5, "gflops": 3.0},
                                                  {"name": "b", "intensity": 40.0, "gflops": 80.0}])
    assert [t.name for t in fig.data] == ["roofline", "a", "b"]
    assert fig.layout.xaxis.type == "log"


def test_interleaved_samples_round_robin_and_ratios():
    calls = []
    s = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=4, warmup=1)
    assert calls == ["a", "b"] + ["a", "b"] * 4
    assert len(s["a"]) == len(s["b"]) == 4
    fake = {"x": [2.0, 4.0, 2.0], "y": [1.0, 1.0, 1.0]}
    assert median_ratio(fake, "x", "y") == 2.0 and paired_ratio(fake, "x", "y") == 2.0
    with pytest.raises(ValueError, match="repeats"):
        interleaved({"a": lambda: None}, repeats=0)


def test_points_close_together_put_their_labels_on_different_sides():
    """Two kernels at about the same intensity and speed (a tenth of a decade apart) get labels on different sides;
    points far apart keep the default, above the marker."""
    pts = [{"name": "interchanged", "intensity": 2.0, "gflops": 30.0}, {"name": "tiled", "intensity": 2.2,
                                                                          "gflops": 33.0},
           {"name": "naive", "intensity": 0.05, "gflops": 1.0}]
    fig = roofline_figure(Roofline(100.0, 10.0), pts)
    spots = {t.name: t.textposition for t in fig.data[1:]}
    assert spots["interchanged"] != spots["tiled"] and spots["naive"] == "top center"
    assert label_positions([(0.0, 0.0)] * 7)[:6] == list(dict.fromkeys(label_positions([(0.0, 0.0)] * 7)[:6]))
