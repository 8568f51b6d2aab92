"""`tf-vrre mixture`: a short run writes its summary; bad flags exit 2 with one line."""

import json
import os
import subprocess
import sys

import _mixture_exact
import pytest
from _mixture_runs import TINY
from _paths import ROOT

from tf_vrre import cli
from tf_vrre.workflows.gaussian_mixture import target


def test_short_run_writes_summary(tmp_path, capsys):
    assert (
        cli.main(
            [
                "mixture",
                *TINY,
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    summary = json.load(open(tmp_path / "summary.json"))
    assert set(summary["methods"]) == {"sgld", "resgld", "vr-resgld"}
    assert summary["config"]["steps"] == 400  # --steps is an alias of --iterations
    assert summary["methods"]["vr-resgld"]["per_seed"][0]["attempts"] > 0
    t, config = summary["target"], summary["config"]
    data = target.make_data(config["data_size"], seed=config["data_seed"], target=target.Mixture(**t))
    exact = _mixture_exact.mode_weights(data, config["tau1"], t["phi"], t["sigma"], t["prior_sd"])
    assert summary["exact"]["mode_weights"] == pytest.approx(exact, abs=1e-6)  # quadrature, not the study's grid
    assert "variance reduction factor" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--lr", "-1"], "--lr"),
        (["--tau1", "3000", "--tau2", "10"], "--tau1"),
        (["--smoothing", "2"], "--smoothing"),
        (["--out", "/proc/forbidden/x"], "--out"),
    ],
)
def test_bad_flags_exit_2(flags, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["mixture", *flags])
    assert exc.value.code == 2
    last = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()][-1]
    assert message in last and "error" in last


def test_console_entry_point_exit_code():
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run(
        [sys.executable, "-m", "tf_vrre.cli", "mixture", "--batch", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 2 and "--batch" in out.stderr
