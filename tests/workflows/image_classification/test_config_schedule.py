"""The schedule with its per-epoch rates kept (``tf-vrre train --schedule keep-rates``) for a run
too long for it is refused naming ``training.epochs`` / ``--epochs`` and the epochs it allows, not
a key the schedule derives from them."""

import os

import pytest
from _image_runs import cli_flags

from tf_vrre import cli
from tf_vrre.workflows.image_classification import config, config_schedule


def kept(method, epochs):
    return config.resolve(
        config_schedule.keep_rates(config.apply_overrides(config.load(method), {"training.epochs": epochs}))
    )


@pytest.mark.parametrize("method", ["vr-resghmc", "sghmc"])
def test_too_many_epochs_name_the_epochs_and_their_range(method):
    with pytest.raises(config.ConfigError) as err:
        kept(method, 10**8)
    text = str(err.value)
    most = int(text.split("must be in [1, ")[1].split("]")[0])
    assert text.startswith(
        f"config key training.epochs must be in [1, {most}] with the schedule's per-epoch rates kept"
    )
    assert "got 100000000 (override); at 100000000 epochs: config key sampler." in text  # the rule that failed
    assert kept(method, most).training.epochs == most  # the range is exact: its end runs, one more does not
    with pytest.raises(config.ConfigError, match=rf"training.epochs must be in \[1, {most}\]"):
        kept(method, most + 1)


def test_a_schedule_that_fails_at_any_length_names_its_own_key():
    raw = config.apply_overrides(config.load("sghmc"), {"training.epochs": 10, "sampler.temperature_annealing": 1e9})
    with pytest.raises(config.ConfigError, match=r"^config key sampler.temperature_annealing must be in"):
        config_schedule.keep_rates(raw)


def test_the_command_line_names_epochs(image_data_dir, tmp_path, capsys):
    out = tmp_path / "run"
    flags = cli_flags("vr-resghmc", out, image_data_dir)
    flags[flags.index("--epochs") + 1] = "100000000"
    with pytest.raises(SystemExit) as exc:
        cli.main(flags + ["--schedule", "keep-rates"])
    assert exc.value.code == 2
    err = [row for row in capsys.readouterr().err.splitlines() if row.strip()]
    assert len(err) == 1 and err[0].startswith(
        "tf-vrre: error: train: --epochs: config key training.epochs must be in [1, "
    ), err
    assert not os.path.exists(out)
