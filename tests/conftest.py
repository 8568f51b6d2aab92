import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def diag_runs(tmp_path_factory):
    """Two small real runs (seeds 0 and 1) with swap logs and samples (tests/_diag_run.py)."""
    import _diag_run

    root = tmp_path_factory.mktemp("diag_runs")
    return [_diag_run.make_run(str(root / f"seed{seed}"), seed=seed) for seed in (0, 1)]
