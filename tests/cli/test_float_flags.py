"""Every float flag of every ``tf-vrre`` subcommand is bounded by what float32 represents: a
positive flag is in [float32 tiny, 3e38] (``1e-46`` is positive in float64 and 0 in float32,
``1e39`` is inf there), and no float flag takes NaN or inf; the one-line error says the range.
Checked while parsing, before TensorFlow starts."""

import argparse

import numpy as np
import pytest

from tf_vrre import cli
from tf_vrre.cli import _args

OWN_CHECKS = {"train --holdout"}  # a count or a fraction: checked by its own tests


def _float_flags():
    """``(command, flag, type)`` of every flag whose type parses ``"0.5"`` to a float."""
    found = []
    for command, sub in cli.parser()._subparsers._group_actions[0].choices.items():
        for action in sub._actions:
            if not action.option_strings or not callable(action.type):
                continue
            try:
                value = action.type("0.5")
            except (argparse.ArgumentTypeError, ValueError, TypeError):
                continue
            if f"{command} {action.option_strings[-1]}" in OWN_CHECKS:
                continue
            if isinstance(value, float) or (isinstance(value, tuple) and value and isinstance(value[0], float)):
                found.append((command, action.option_strings[-1], action.type))
    return found


FLOAT_FLAGS = _float_flags()


def _accepts(kind, text):
    try:
        kind(text)
    except (argparse.ArgumentTypeError, ValueError):
        return False
    return True


def test_the_float_flags_are_found():
    names = {f"{c} {f}" for c, f, _ in FLOAT_FLAGS}
    for name in (
        "export --temperature",
        "train --lr",
        "train --erasing",
        "mixture --lr",
        "mixture --tau1",
        "mixture --tau2",
        "mixture --correction",
        "mixture --correction-re",
        "mixture --smoothing",
        "mixture --sens-lrs",
        "mixture --sens-ratios",
        "mixture --initial",
        "diagnose --burn-in",
    ):
        assert name in names, sorted(names)


@pytest.mark.parametrize("command,flag,kind", FLOAT_FLAGS, ids=[f"{c}{f}" for c, f, _ in FLOAT_FLAGS])
def test_every_float_flag_is_float32_safe(command, flag, kind):
    for text in ("nan", "inf", "-inf", "1e39", "-1e39"):
        assert not _accepts(kind, text), (command, flag, text)
    if not _accepts(kind, "0"):  # a positive flag: positive in float32 too
        tiny = float(np.finfo(np.float32).tiny)
        assert np.float32(tiny) > 0 and np.float32(1e-46) == 0
        for text in ("1e-46", "1e-40", "-1e-46"):
            assert not _accepts(kind, text), (command, flag, text)
        assert _accepts(kind, repr(tiny)) and _accepts(kind, "1e-30")


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["export", "--run", "r", "--out", "o", "--temperature", "1e-46"],
            "--temperature: must be >= 1.18e-38 (it is 0 or imprecise in float32), got 1e-46; "
            "allowed: [1.18e-38, 3.40282e+38] (positive and finite in float32)",
        ),
        (["mixture", "--lr", "1e39"], "--lr: must be <= 3.40282e+38, got 1e39; allowed: [1.18e-38, 3.40282e+38]"),
        (
            ["mixture", "--smoothing", "1e-40"],
            "--smoothing: must be >= 1.18e-38 (it is 0 or imprecise in float32), got 1e-40; allowed: [1.18e-38, 1]",
        ),
        (["mixture", "--sens-lrs", "1e-3,1e-45"], "--sens-lrs: must be >= 1.18e-38"),
        (["train", "--config", "sghmc", "--out", "o", "--lr", "1e-39"], "--lr: must be >= 1.18e-38"),
        (["train", "--config", "sghmc", "--out", "o", "--erasing", "1.5"], "--erasing: must be in [0, 1], got 1.5"),
    ],
)
def test_float_flag_errors_name_the_range(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tf-vrre: error: ") and message in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_positive_float_type():
    parse = _args.positive_float(2.0)
    assert parse("2") == 2.0 and parse("1.2e-38") == 1.2e-38
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be <= 2, got 2.5; allowed: \[1.18e-38, 2\]"):
        parse("2.5")
    with pytest.raises(argparse.ArgumentTypeError, match="expected a float, got 'x'"):
        parse("x")
    assert _args.positive(float, 2.0)("1") == 1.0  # positive(float, ...) is positive_float


@pytest.mark.parametrize(
    "setting,message",
    [
        (
            "training.seed=4294967296",
            "config key training.seed must be an integer in [0, 2147483647], got 4294967296 (override)",
        ),
        (
            "sampler.lr=1e39",
            "config key sampler.lr must be a number in [1.18e-38, 3.4e+38] (float32), got 1e+39 (override)",
        ),
        ("sampler.lr=1e-46", "config key sampler.lr must be a number in [1.18e-38, 3.4e+38] (float32), got 1e-46"),
        (
            "sampler.temperature=1e39",
            "config key sampler.temperature must be a number in [1.18e-38, 3.4e+38] (float32)",
        ),
        (
            "sampler.weight_decay=1e-40",
            "config key sampler.weight_decay must be 0 or a number in [1.18e-38, 3.4e+38] (float32), got 1e-40",
        ),
        ("data.batch_size=4294967296", "config key data.batch_size must be an integer in [1, 2147483647]"),
    ],
)
def test_config_values_beyond_int32_or_float32_exit_2(setting, message, capsys, tmp_path):
    """``--set`` reaches the config past the flag types: seeds >= 2**31 (NumPy fails at 2**32 with a
    traceback) and floats that are inf or 0 in float32 are refused before TensorFlow starts."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["train", "--config", "sghmc", "--out", str(tmp_path / "o"), "--set", setting])
    assert exc.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tf-vrre: error: ") and message in lines[0], lines
    assert not (tmp_path / "o").exists()
