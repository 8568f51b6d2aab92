"""`tf-vrre export`: a run exports and prints its numbers; bad flags and bad input exit 2 with
one line on stderr and leave nothing behind."""

import json
import os
import shutil

import pytest
from _tiny_run import make_tiny_run

from tf_vrre import cli


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cli_export") / "run")
    os.makedirs(path)
    make_tiny_run(path, epochs=1)  # 8 steps: samples at steps 6 and 8
    return path


def _last_error_line(capsys):
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_export_run_prints_and_writes_versions(run_dir, tmp_path, capsys):
    out = str(tmp_path / "serving")
    assert cli.main(["export", "--run", run_dir, "--out", out]) == 0
    text = capsys.readouterr().out
    assert "exported 2 of 2 samples (steps 6..8)" in text and "SavedModel size" in text
    assert "export time" in text and "serving_default, members" in text
    assert (
        cli.main(
            [
                "export",
                "--samples",
                os.path.join(run_dir, "samples"),
                "--out",
                out,
                "--max-members",
                "1",
                "--temperature",
                "0.5",
                "--version",
                "5",
            ]
        )
        == 0
    )
    assert "exported 1 of 2 samples (steps 8)" in capsys.readouterr().out
    assert sorted(os.listdir(out)) == ["1", "5"]
    record = json.load(open(os.path.join(out, "5", "export.json")))
    assert record["temperature"] == 0.5 and record["steps"] == [8] and record["preprocessing"] is None
    assert record["input"]["dtypes"] == ["float32"]  # --samples: the model's own signature


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--max-members", "0"], "--max-members: must be > 0"),
        (["--temperature", "-1"], "--temperature: must be > 0"),
        (["--temperature", "nan"], "--temperature: must be a finite number"),
        (["--version", "0"], "--version: must be > 0"),
        (["--version", "x"], "--version: expected an int"),
    ],
)
def test_bad_flags_exit_2(run_dir, tmp_path, flags, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", "--run", run_dir, "--out", str(tmp_path / "o"), *flags])
    assert exc.value.code == 2
    line = _last_error_line(capsys)
    assert message in line and "error" in line
    assert not os.path.exists(tmp_path / "o")


def test_bad_sources_and_versions_exit_2(run_dir, tmp_path, capsys):
    out = str(tmp_path / "serving")
    cases = [
        (["--run", str(tmp_path)], "no run.json there"),
        (["--samples", str(tmp_path)], "no manifest.json there"),
        ([], "--run / --samples: one of them is required"),
        (["--run", run_dir, "--samples", run_dir], "not allowed with argument"),
    ]
    for flags, message in cases:
        with pytest.raises(SystemExit) as exc:
            cli.main(["export", *flags, "--out", out])
        assert exc.value.code == 2 and message in _last_error_line(capsys)

    assert cli.main(["export", "--run", run_dir, "--out", out, "--max-members", "1"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", "--run", run_dir, "--out", out, "--version", "1"])
    assert exc.value.code == 2 and "--version: 1: " in _last_error_line(capsys)

    no_model = str(tmp_path / "no_model")  # samples of a model that did not serialize
    shutil.copytree(run_dir, no_model)
    os.remove(os.path.join(no_model, "samples", "model.json"))
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", "--run", no_model, "--out", out])
    line = _last_error_line(capsys)
    assert exc.value.code == 2 and "model.json is missing" in line
    assert "tf_vrre.export_ensemble(source, out, model=" in line
    assert sorted(os.listdir(out)) == ["1"]


def test_help_lists_flags(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--run", "--samples", "--out", "--version", "--max-members", "--temperature"):
        assert flag in text


def test_run_json_and_version_checked_before_tensorflow(run_dir, tmp_path):
    """The console script answers a bad run.json with exactly one line: no TensorFlow start-up
    lines, because the checks run before TensorFlow is imported."""
    import subprocess
    import sys

    from _paths import ROOT

    script = os.path.join(os.path.dirname(sys.executable), "tf-vrre")
    command = [script] if os.path.exists(script) else [sys.executable, "-m", "tf_vrre.cli"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    bad = str(tmp_path / "bad_run")
    shutil.copytree(run_dir, bad)
    run = json.load(open(os.path.join(bad, "run.json")))
    run["preprocessing"]["std"] = [0.2, 0.2]
    json.dump(run, open(os.path.join(bad, "run.json"), "w"))
    out = str(tmp_path / "serving")
    os.makedirs(os.path.join(out, "\u00b2"))  # not an ASCII number: not a version (int() would fail)
    proc = subprocess.run(
        command + ["export", "--run", bad, "--out", out], capture_output=True, text=True, env=env, timeout=120
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert (
        lines[0].startswith("tf-vrre: error: export: --run: ")
        and "run.json: need model.input_shape [H, W, C]" in lines[0]
    )
    assert "C means and C stds > 0" in lines[0] and sorted(os.listdir(out)) == ["\u00b2"]
    from tf_vrre.serving import checks

    assert checks.choose_version(out, None) == 1
