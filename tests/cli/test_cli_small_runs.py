"""A small ``tf-vrre train`` / ``evaluate`` run as a new user makes it, with stderr sent to a
file (not a terminal): a squeezed schedule gets one warning line naming the flags, TensorFlow's
start-up lines are silenced, progress is plain lines (no escape codes, no carriage returns), the
finished run leaves no pid in its lock, and ``evaluate`` of a run at chance level warns instead
of crashing or reporting a fitted temperature of hundreds."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from _paths import ROOT

ENV = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"} | {"PYTHONPATH": ROOT}
TF_STARTUP = ("absl::InitializeLog", "cudart_stub.cc", "port.cc", "cuInit", "cuda_platform.cc")
TRAIN = [
    "train",
    "--config",
    "vr-resghmc",
    "--model",
    "cnn",
    "--source",
    "npz",
    "--subset",
    "40",
    "--batch-size",
    "20",
    "--holdout",
    "10",
    "--thinning",
    "1",
    "--set",
    "variance_reduction.period=2",
]


def tf_vrre(tmp_path, *args, env=ENV):
    """``tf-vrre ARGS`` with stdout and stderr sent to files, as ``2> log`` does."""
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out, "w") as o, open(err, "w") as e:
        code = subprocess.run(
            [sys.executable, "-m", "tf_vrre.cli", *map(str, args)], stdout=o, stderr=e, env=env, timeout=300
        ).returncode
    return code, out.read_text(), err.read_text()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Random images with balanced labels: nothing to learn, so any run ends at chance level."""
    root = tmp_path_factory.mktemp("data")
    os.makedirs(root / "cifar10")
    rng = np.random.default_rng(0)
    for split, n in (("train", 60), ("test", 40)):
        np.savez(
            root / "cifar10" / f"cifar10_{split}.npz",
            x=rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8),
            y=np.arange(n) % 10,
        )
    return root


@pytest.fixture(scope="module")
def squeezed_run(data, tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    run = tmp_path_factory.mktemp("runs") / "r"
    return run, tf_vrre(logs, *TRAIN, "--data-dir", data, "--epochs", "2", "--out", run)


def test_a_squeezed_schedule_warns_once_naming_the_flags(squeezed_run):
    _, (code, _, err) = squeezed_run
    assert code == 0, err[-3000:]
    warnings = [line for line in err.splitlines() if line.startswith("tf-vrre: warning: ")]
    assert len(warnings) == 1, err
    line = warnings[0]
    assert line.startswith("tf-vrre: warning: train: --epochs 2: the 500-epoch schedule of --config vr-resghmc")
    assert "F x141 per epoch" in line and "the learning rate x0.0177 per epoch" in line  # (x0.984)^(500/2) etc.
    assert "--schedule keep-rates" in line and "--epochs 5 or more" in line


def test_stderr_in_a_file_is_plain_and_without_tensorflow_start_up_lines(squeezed_run):
    _, (_, _, err) = squeezed_run
    assert not any(marker in err for marker in TF_STARTUP), err[:2000]
    assert "\x1b" not in err and "\r" not in err and "\b" not in err
    assert "  2/2 steps (100%)" in err  # the plain progress lines


def test_a_finished_run_leaves_no_pid_in_its_lock(squeezed_run):
    run, (code, _, _) = squeezed_run
    assert code == 0 and (run / ".lock").read_text() == ""


def test_keep_rates_gives_no_warning_and_the_same_run_shape(data, tmp_path):
    code, _, err = tf_vrre(
        tmp_path, *TRAIN, "--data-dir", data, "--epochs", "2", "--schedule", "keep-rates", "--out", tmp_path / "r"
    )
    assert code == 0 and "warning" not in err, err[-3000:]
    config = json.load(open(tmp_path / "r" / "run.json"))["config"]
    assert config["training"]["schedule_epochs"] == 2 and config["sampler"]["lr_decay"] == 0.984


def test_evaluate_at_chance_level_warns_and_reports_the_temperature_bound(squeezed_run, tmp_path):
    run, (code, _, _) = squeezed_run
    assert code == 0
    code, out, err = tf_vrre(tmp_path, "evaluate", "--run", run, "--ood", "none", "--fit-size", "10")
    assert code == 0 and "Traceback" not in err, err[-3000:]
    warnings = [line for line in err.splitlines() if line.startswith("tf-vrre: warning: evaluate: --run: ")]
    assert any(re.search(r"test accuracy 0\.\d+ is (at|below) chance level \(1/10 = 0\.100", w) for w in warnings), err
    report = json.load(open(run / "report.json"))
    t = report["temperature"]
    if t["bound_hit"]:  # no optimum inside [0.01, 100]: the bound is named and used
        assert t["T"] in (0.01, 100.0) and "T=fitted" in report["test"]
        assert f"fitted T = {t['T']:.3f} (its {t['bound_hit']} bound: no optimum inside)" in out
        assert any(f"fitted temperature at the {t['bound_hit']} bound" in w for w in warnings)
    else:  # an optimum inside, but far outside the sane range
        assert not 0.2 <= t["T"] <= 5 and any("outside [0.2, 5]" in w for w in warnings)
    assert report["warnings"] and all(any(w in line for line in warnings) for w in report["warnings"])
    assert not any(marker in err for marker in TF_STARTUP) and "\x1b" not in err


STARTUP_PROBE = (
    "import os; from tf_vrre.cli import _startup; _startup.quiet_tensorflow(); import tensorflow; "
    "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"
)


def _markers(text):
    return sorted(m for m in TF_STARTUP if m in text)


def test_tensorflow_start_up_lines_silenced_unless_the_user_set_a_log_level():
    """Unset: the level is set to 3 and the start-up lines are dropped; the user's own
    ``TF_CPP_MIN_LOG_LEVEL=0`` wins: TensorFlow writes what a plain import writes."""
    quiet = subprocess.run([sys.executable, "-c", STARTUP_PROBE], capture_output=True, text=True, env=ENV, timeout=300)
    assert quiet.stdout.split() == ["3"] and _markers(quiet.stderr) == [], quiet.stderr
    loud_env = ENV | {"TF_CPP_MIN_LOG_LEVEL": "0"}
    loud = subprocess.run(
        [sys.executable, "-c", STARTUP_PROBE], capture_output=True, text=True, env=loud_env, timeout=300
    )
    plain = subprocess.run(
        [sys.executable, "-c", "import tensorflow"], capture_output=True, text=True, env=loud_env, timeout=300
    )
    assert loud.stdout.split() == ["0"]
    assert _markers(loud.stderr) == _markers(plain.stderr), (loud.stderr, plain.stderr)
