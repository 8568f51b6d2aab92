"""`tf-vrre train`: bad flags / configs / data exit 2 with one line and write nothing; --help."""

import os

import pytest
from _image_runs import cli_flags

from tf_vrre import cli

# refused before TensorFlow starts (see test_placement_and_ladder_refusals_come_before_tensorflow)
PLACEMENT_REFUSALS = [
    (
        {"--placement": "chain-per-replica"},  # --strategy auto
        "--placement: chain-per-replica runs one chain per device of the strategy: --strategy auto may pick one "
        "device; name a strategy with 2 replicas: mirrored (K GPUs, or --cpu-devices to try it on a CPU), tpu or "
        "multiworker",
    ),
    ({"--strategy": "default", "--placement": "chain-per-replica"}, "--strategy default is one device"),
    (
        {"--chains": "4", "--strategy": "mirrored", "--cpu-devices": "2", "--placement": "chain-per-replica"},
        "--placement: chain-per-replica runs one chain per device: --chains 4 needs 4 devices, --cpu-devices gives 2; "
        "use --cpu-devices 4",
    ),
    ({"--cpu-devices": "2"}, "--cpu-devices: splits the CPU for --strategy mirrored, got --strategy auto"),
    (
        {"--set": "model.kwargs.synchronized_bn=true", "--strategy": "mirrored", "--placement": "chain-per-replica"},
        "--placement: chain-per-replica: model.kwargs.synchronized_bn = true would average BatchNorm statistics",
    ),
]


# a bad [ladder] (K, tuning with K < 3, a ladder not increasing, a DEO window < 1): refused before
# TensorFlow starts too, naming the key
LADDER_REFUSALS = [
    ({"--chains": "1"}, "--chains: config key ladder.chains must be an integer in [2, 1024], got 1 (override)"),
    (
        {"--config": "vr-resghmc-ladder", "--chains": "2"},
        "--chains: config key ladder.chains must be >= 3 to tune the ladder (ladder.tune_epochs = 100",
    ),
    ({"--set": "ladder.tune_epochs=100"}, "--set: config key ladder.tune_epochs must be 0 with ladder.chains = 2"),
    (
        {"--set": "ladder.temperatures=[1, 3, 2]"},
        "--set: config key ladder.temperatures must be a list of at least 2 numbers > 0 (float32), the first 1, "
        "strictly increasing, got [1, 3, 2] (override)",
    ),
    ({"--set": "ladder.deo_window=0"}, "--set: config key ladder.deo_window must be an integer in [1, 2147483647]"),
]


@pytest.mark.parametrize(
    "change,message",
    [
        ({"--model": "vgg"}, "config key model.name must be one of cnn, resnet8, resnet20, resnet32, resnet56"),
        ({"--config": "sgd"}, "config 'sgd': no such file; shipped configs are"),
        ({"--epochs": "0"}, "--epochs: must be > 0"),
        ({"--data-dir": "/nonexistent/data"}, "data_dir '/nonexistent/data' does not exist"),
        ({"--dataset": "svhn"}, "no svhn_cropped train data in"),
        ({"--dataset": "mnist"}, "config key data.dataset must be one of cifar10, cifar100, svhn_cropped, svhn"),
        ({"--subset": "500"}, "subset (500) + holdout (32) must be <= the 400 training examples"),
        ({"--set": "swap.bogus=1"}, "config key swap.bogus is unknown; allowed in [swap]: correction"),
        ({"--strategy": "tpus"}, "--strategy: invalid choice"),
        ({"--strategy": "tpu"}, "--strategy: strategy 'tpu': no TPU detected ($COLAB_TPU_ADDR unset"),
        (
            {"--strategy": "mirrored", "--placement": "chain-per-replica"},  # one CPU: 1 replica, 2 chains
            "--placement: chain-per-replica runs one chain per replica: --chains 2 needs 2 replicas, --strategy "
            "mirrored has 1 (CPU:0); use a strategy over 2 devices (--cpu-devices 2 to try it on a CPU)",
        ),
        *[(change, message) for change, message in PLACEMENT_REFUSALS + LADDER_REFUSALS],
        ({"--placement": "per-device"}, "--placement: invalid choice"),
        ({"--jit-compile": "yes"}, "--jit-compile: invalid choice: 'yes' (choose from 'auto', 'on', 'off')"),
        ({"--steps-per-execution": "0"}, "--steps-per-execution: must be > 0"),
        ({"--steps-per-execution": "2048"}, "--steps-per-execution: must be <= 1024"),
        ({"--steps-per-execution": "4"}, "steps_per_execution (4) must divide samples.thinning (2)"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    change, message, image_data_dir, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    out = tmp_path / "run"
    flags = cli_flags("vr-resghmc", out, image_data_dir)
    for flag, value in change.items():
        if flag in flags and flag != "--set":
            flags[flags.index(flag) + 1] = value
        else:
            flags += [flag, value]
    with pytest.raises(SystemExit) as exc:
        cli.main(flags)
    assert exc.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err[-1].startswith("tf-vrre: error:") and message in err[-1], err[-1]
    assert not os.path.exists(out)


def test_help_answers(capsys):
    for command in ("train", "evaluate"):
        with pytest.raises(SystemExit) as exc:
            cli.main([command, "--help"])
        assert exc.value.code == 0
    text = capsys.readouterr().out
    for flag in (
        "--config",
        "--out",
        "--data-dir",
        "--source",
        "--strategy",
        "--set",
        "--overwrite",
        "--run",
        "--ood",
        "--jit-compile",
        "--steps-per-execution",
        "multiworker",
        "tpu",
        "--placement",
        "chain-per-replica",
    ):
        assert flag in text


def test_one_preflight_checks_the_config_and_the_numbers_once(image_data_dir, tmp_path, monkeypatch):
    """``tf-vrre train`` and ``train()`` share one preflight: the config is resolved once and the
    run's numbers are checked once (the command line used to check them, then ``train`` again).
    A finished run keeps its lock file without a pid."""
    from tf_vrre.workflows.image_classification import config, planning

    calls = {"resolve": 0, "check_numbers": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(config, "resolve", counted("resolve", config.resolve))
    monkeypatch.setattr(planning, "check_numbers", counted("check_numbers", planning.check_numbers))
    out = tmp_path / "run"
    assert cli.main(cli_flags("msgd", out, image_data_dir)) == 0
    assert calls == {"resolve": 1, "check_numbers": 1}
    assert (out / ".lock").read_text() == ""


def test_placement_and_ladder_refusals_come_before_tensorflow(tmp_path):
    """One chain per replica and a bad ladder refused from the flags alone: exit 2, one line naming
    the flag and the key, no TensorFlow imported."""
    import json
    import subprocess
    import sys

    from _paths import HELPERS, ROOT

    cases = PLACEMENT_REFUSALS + LADDER_REFUSALS
    runs = []
    for change, _ in cases:
        flags = cli_flags("vr-resghmc", tmp_path / "run", str(tmp_path / "no-data"))
        for flag, value in change.items():
            if flag in flags and flag != "--set":
                flags[flags.index(flag) + 1] = value
            else:
                flags += [flag, value]
        runs.append(flags)
    probe = (
        "import contextlib, io, json, sys\nfrom tf_vrre import cli\nresults = []\n"
        f"for argv in json.loads({json.dumps(json.dumps(runs))}):\n"
        "    err = io.StringIO()\n"
        "    try:\n        with contextlib.redirect_stderr(err):\n            cli.main(argv)\n"
        "    except SystemExit as e:\n        results.append([e.code, err.getvalue().strip().splitlines()])\n"
        "print(json.dumps([results, 'tensorflow' in sys.modules]))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HELPERS]))
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results, tensorflow = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tensorflow is False and len(results) == len(cases)
    for (code, lines), (_, message) in zip(results, cases):
        assert code == 2 and len(lines) == 1 and lines[0].startswith("tf-vrre: error:") and message in lines[0], lines
    assert not os.path.exists(tmp_path / "run")
