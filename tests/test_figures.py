"""Plot helpers build ``matplotlib.figure.Figure`` objects: they return the figure, write a PNG
only when given a path, never call ``matplotlib.use`` (a notebook's inline backend stays) and
never register figures with pyplot."""

import os

import matplotlib
import numpy as np
import pytest
from _swap_logs import write_log
from matplotlib.figure import Figure

from tf_vrre import diagnostics

PNG = b"\x89PNG\r\n\x1a\n"


def _flow(tmp_path):
    rows = [f"{s},0,0,1.0,2.0,1.5,1.0,-0.25,0.7788,{a},3.0,2.0" for s, a in [(3, 1), (4, 0), (5, 1), (6, 0)]]
    write_log(tmp_path / "log", rows, refresh=["3,0,1,0,2.0,0,0,2.0"], epochs=["0,8,4,2,0.5,4,2"])
    return diagnostics.replica_flow(diagnostics.read_swap_log(tmp_path / "log"), blocks=2)


def _image_cases(rng):
    from tf_vrre.workflows.image_classification import plots

    swaps = [{"step": str(s), "accepted": str(s % 2)} for s in range(1, 9)]
    refresh = [{"step": str(s), "sigma2_updated": "1", "sigma2_0": str(1.0 / s)} for s in (2, 4, 6)]
    log = [{"epoch": str(e), "loss": str(1.0 / (e + 1)), "loss_1": str(2.0 / (e + 1))} for e in range(3)]
    return {
        "entropy_cdf": lambda p: plots.entropy_cdf(p, [("a", rng.uniform(0, 2.3, 50), None)], 1.5, np.log(10)),
        "reliability": lambda p: plots.reliability(
            p, [("T=1", [(0.0, 0.5, 10, 0.3, 0.2), (0.5, 1.0, 20, 0.8, 0.7)], 0.05)]
        ),
        "swaps": lambda p: plots.swaps(p, swaps, refresh, log, num_pairs=1, title="t"),
    }


def _mixture_cases(rng):
    from tf_vrre.workflows.gaussian_mixture import plots

    grid = np.linspace(-10, 30, 200)
    return {
        "traces": lambda p: plots.traces(p, {"sgld": rng.normal(size=20)}, 10, (-5.0, 25.0), 0.4),
        "density": lambda p: plots.density(
            p, {"sgld": rng.normal(size=100)}, grid, np.exp(-0.5 * grid**2), {"sgld": 0.1}
        ),
        "variance": lambda p: plots.variance(p, [("reSGLD", "resgld", rng.uniform(1, 2, 30))], 10),
        "sensitivity": lambda p: plots.sensitivity(p, [0.1, 0.2], [1e-4, 1e-3], [[1.0, 2.0], [3.0, 4.0]]),
    }


def _diagnostics_cases(tmp_path):
    from tf_vrre.diagnostics import plots

    flow = _flow(tmp_path)
    return {
        "replicas": lambda p: plots.replicas(p, [flow], ["run"]),
        "acceptance": lambda p: plots.acceptance(p, [flow], ["run"]),
    }


def _cases(tmp_path):
    """Every plot helper of the three ``plots`` modules (image workflow, mixture workflow, diagnostics)."""
    rng = np.random.default_rng(0)
    return _image_cases(rng) | _mixture_cases(rng) | _diagnostics_cases(tmp_path)


def test_helpers_return_figures_without_pyplot_or_a_backend_switch(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"library code called matplotlib.use{args}")

    monkeypatch.setattr(matplotlib, "use", refuse)
    import matplotlib.pyplot as plt

    open_figures = plt.get_fignums()
    out = tmp_path / "png"
    out.mkdir()
    for name, draw in _cases(tmp_path).items():
        fig = draw(None)
        assert isinstance(fig, Figure) and fig.axes, name
        assert draw(str(out / f"{name}.png")) is not fig
        with open(out / f"{name}.png", "rb") as f:
            assert f.read(8) == PNG, name
    assert sorted(os.listdir(out)) == sorted(f"{name}.png" for name in _cases(tmp_path))  # no .tmp left
    assert plt.get_fignums() == open_figures


def test_a_returned_figure_can_be_saved_again(tmp_path):
    from tf_vrre.workflows.gaussian_mixture import plots

    fig = plots.variance(None, [("VR", "vr-resgld", np.array([1.0, 0.5, 0.25]))], 1)
    assert not os.listdir(tmp_path)
    fig.savefig(tmp_path / "again.png")
    with open(tmp_path / "again.png", "rb") as f:
        assert f.read(8) == PNG
    with pytest.raises(TypeError):
        plots.variance(None)
