"""EpochCSVLogger (growing columns, resume) and EpochProgress; config round trips."""

import csv
import re
import types

import keras
import pytest

from tf_vrre.callbacks.progress import EpochCSVLogger, EpochProgress, EpochTimer


def _rows(path):
    return list(csv.DictReader(open(path)))


def test_csv_logger_adds_late_columns_and_drops_replayed_epochs(tmp_path):
    path = tmp_path / "log.csv"
    log = EpochCSVLogger(path)
    for e in range(3):
        log.on_epoch_begin(e)
        logs = {"loss": 1.0 / (e + 1)}
        if e >= 1:
            logs["bma_accuracy"] = 0.5 + e / 10  # appears after burn-in
        log.on_epoch_end(e, logs)
    log.on_train_end()
    rows = _rows(path)
    assert [r["epoch"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["bma_accuracy"] == "" and float(rows[2]["bma_accuracy"]) == pytest.approx(0.7)
    # a resume restored at epoch 1: rows of epochs >= 1 are replayed, not duplicated
    again = EpochCSVLogger(path)
    again.on_epoch_begin(1)
    again.on_epoch_end(1, {"loss": 0.25, "bma_accuracy": 0.9})
    rows = _rows(path)
    assert [r["epoch"] for r in rows] == ["0", "1"] and float(rows[1]["loss"]) == 0.25


def test_progress_prints_a_bar_and_a_summary(capsys, monkeypatch):
    from tf_vrre.callbacks import progress

    monkeypatch.setattr(progress, "interactive", lambda stream: True)  # stderr as a terminal: the bar
    p = EpochProgress(epochs=2, steps_per_epoch=4)
    p.on_epoch_begin(0)
    for b in range(4):
        p.on_train_batch_end(b)
    p.on_epoch_end(0, {"loss": 1.5, "accuracy": 0.25, "swaps": 3.0, "swap_attempts": 9.0, "bma_accuracy": 0.5})
    err = capsys.readouterr().err
    plain = re.sub(r"\x1b\[[0-9;]*m", "", err)  # the Keras bar (as fit(verbose=1) draws it) without colours
    assert plain.startswith("epoch 1/2\n") and f"4/4 {'━' * keras.utils.Progbar(4).width} " in plain, repr(err)
    assert err.endswith("\n") and "epoch 1/2: loss 1.500, acc 0.250, swaps 3/9, BMA acc 0.500" in err
    with pytest.raises(ValueError, match="steps_per_epoch must be an integer >= 1"):
        EpochProgress(2, 0)


def test_timer_logs_each_epochs_seconds_from_its_begin_to_its_end(monkeypatch):
    """A fake clock: the exact time between each epoch's begin and end, not since training began."""
    from tf_vrre.callbacks import progress

    ticks = iter([100.0, 102.5, 110.0, 110.25, 200.0, 201.0])
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    timer, seconds = EpochTimer(), []
    for epoch in range(2):
        logs = {"loss": 1.5}
        timer.on_epoch_begin(epoch)
        timer.on_epoch_end(epoch, logs)
        assert logs["loss"] == 1.5
        seconds.append(logs["epoch_seconds"])
    assert seconds == [2.5, 0.25]
    timer.on_epoch_begin(2)
    timer.on_epoch_end(2, None)  # no logs to write into: no error


@pytest.mark.parametrize("obj", [EpochCSVLogger("run/log.csv"), EpochProgress(5, 7, stream="stdout"), EpochTimer()])
def test_config_round_trip(obj):
    config = keras.saving.serialize_keras_object(obj)
    clone = keras.saving.deserialize_keras_object(config)
    assert type(clone) is type(obj) and clone.get_config() == obj.get_config()


def test_cli_progress_is_a_keras_progbar_on_stderr(capsys, monkeypatch):
    from tf_vrre.callbacks import progress
    from tf_vrre.workflows.gaussian_mixture.study import Progress

    monkeypatch.setattr(progress, "interactive", lambda stream: True)  # stderr as a terminal: the bar
    p = Progress("vr-resgld seed 0", 3)
    for b in range(3):
        p.callback.on_train_batch_end(b)
    out, err = capsys.readouterr()
    plain = re.sub(r"\x1b\[[0-9;]*m", "", err)
    width = keras.utils.Progbar(3).width
    assert out == "" and plain.startswith("vr-resgld seed 0\n") and f"3/3 {'━' * width} " in plain, repr(err)
    monkeypatch.setattr(progress, "interactive", lambda stream: False)  # a file: plain lines
    p = Progress("vr-resgld seed 1", 3)
    for b in range(3):
        p.callback.on_train_batch_end(b)
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("vr-resgld seed 1\n  1/3 steps (33%)") and "\x1b" not in err, repr(err)
