"""What every ``tf-vrre`` subcommand writes around its results: ``--version``, one error shape
(``tf-vrre: error: <subcommand>: <flag>: <message>``), ``mixture --quiet``, and progress sent to
a file as plain lines (no terminal escape codes)."""

import os
import re
import subprocess
import sys

import pytest
from _mixture_runs import TINY
from _paths import ROOT

import tf_vrre
from tf_vrre import cli

ENV = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"} | {"PYTHONPATH": ROOT}
SHAPE = re.compile(
    r"^tf-vrre: error: (mixture|train|evaluate|export|diagnose|repair): (--[a-z0-9-]+|RUN)"
    r"( / --[a-z0-9-]+)*: [^:]"
)
MIXTURE = ["mixture", *TINY, "--methods", "vr-resgld"]


def test_version_prints_the_versions_without_importing_tensorflow():
    probe = (
        "import sys\nfrom tf_vrre import cli\ntry:\n    cli.main(['--version'])\nexcept SystemExit as e:\n"
        "    print('exit', e.code, 'tensorflow' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=ENV, timeout=120)
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith(f"tf-vrre {tf_vrre.__version__} (TensorFlow ") and "Keras " in lines[0], proc
    assert lines[-1] == "exit 0 False", proc


@pytest.mark.parametrize(
    "argv",
    [
        ["mixture", "--seeds", "0"],
        ["mixture", "--tau1", "10", "--tau2", "10"],
        ["mixture", "--methods", "sgld,bogus"],
        ["train", "--epochs", "0"],
        ["train", "--out", "x"],
        ["train", "--config", "sghmc", "--out", __file__],
        ["train", "--config", "sghmc", "--out", "x", "--no-augment", "--erasing", "0.5"],
        ["export", "--out", "x"],
        ["evaluate", "--run", "/nonexistent/run"],
        ["export", "--run", "/nonexistent/run", "--out", "/nonexistent/serving"],
        ["diagnose", "--run", "/nonexistent/run"],
        ["diagnose", "--run", ROOT, "--blocks", "1"],
        ["repair", "/nonexistent/run"],
    ],
)
def test_every_subcommand_errors_in_one_shape(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    lines = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(lines) == 1 and SHAPE.match(lines[0]), lines


def _mixture(tmp_path, *extra):
    err = tmp_path / "stderr.txt"
    with open(err, "w") as e:
        proc = subprocess.run(
            [sys.executable, "-m", "tf_vrre.cli", *MIXTURE, "--out", str(tmp_path / "out"), *extra],
            stdout=subprocess.PIPE,
            stderr=e,
            text=True,
            env=ENV,
            timeout=300,
        )
    return proc.returncode, proc.stdout, err.read_text()


def test_mixture_progress_in_a_file_is_plain_lines(tmp_path):
    code, out, err = _mixture(tmp_path)
    assert code == 0, err[-3000:]
    assert "\x1b" not in err and "\r" not in err and "\b" not in err
    assert "  400/400 steps (100%)" in err, err[-3000:]
    assert "vr-resgld" in out.lower()


def test_mixture_quiet_writes_nothing_on_stderr(tmp_path, capsys):
    assert cli.main([*MIXTURE, "--out", str(tmp_path / "out"), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "vr-resgld" in captured.out.lower()
