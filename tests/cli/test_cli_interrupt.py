"""Ctrl-C during a long ``tf-vrre`` job exits 130 with ``interrupted`` and the parts finished so far
on disk (in process, and for the real console script in a subprocess sent SIGINT).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
from _paths import ROOT

from tf_vrre import cli
from tf_vrre.cli import mixture

SCRIPT = os.path.join(os.path.dirname(sys.executable), "tf-vrre")
COMMAND = [SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "tf_vrre.cli"]
ENV = dict(os.environ, PYTHONPATH=ROOT)
ENV.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the script must stay quiet without it


def test_ctrl_c_in_process_returns_130(monkeypatch, capsys, tmp_path):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(mixture, "run", interrupted)
    assert cli.main(["mixture", "--out", str(tmp_path / "o")]) == 130
    assert (
        capsys.readouterr().err.strip().splitlines()[-1]
        == "tf-vrre: interrupted (mixture); results finished so far are on disk"
    )


def test_ctrl_c_during_the_mixture_study_keeps_the_finished_seeds(tmp_path):
    out = tmp_path / "study"
    proc = subprocess.Popen(
        COMMAND
        + [
            "mixture",
            "--iterations",
            "2000",
            "--seeds",
            "3",
            "--methods",
            "sgld,vr-resgld",
            "--data-size",
            "300",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        # a runner started in the background (nohup, `cmd &`) ignores SIGINT, and so
        # would the child: Python then installs no KeyboardInterrupt handler
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 300
    while time.time() < deadline and not (out / "summary.json").exists() and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # the first seed is written; the study has five more runs to go
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == "tf-vrre: interrupted (mixture); results finished so far are on disk"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["finished"][0] == ["sgld", 0]
    assert len(summary["finished"]) < 6
    assert summary["methods"]["sgld"]["per_seed"][0]["seed"] == 0
    with np.load(out / "traces.npz") as traces:
        assert len(traces["sgld/seed0/beta"]) == 2000 // 10
        assert sorted(traces.files) == sorted(
            f"{m}/seed{s}/{k}" for m, s in summary["finished"] for k in ("beta", "sigma2")
        )
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]
    shutil.rmtree(out)
