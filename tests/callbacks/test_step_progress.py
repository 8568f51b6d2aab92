"""Progress on a terminal is Keras' bar; in a file (a log, CI) plain lines without escape codes
or carriage returns, at most one per ``interval`` seconds plus the last."""

import io

import pytest

from tf_vrre.callbacks import progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_in_a_file():
    out = io.StringIO()
    p = progress.StepProgress(1000, stream=out, interval=3600.0, unit="sample")
    assert not p.bar
    for done in range(1, 1001):
        p.update(done)
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == ["  1/1000 samples (0%)", "  1000/1000 samples (100%)"]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue() and "\b" not in out.getvalue()


def test_interval_zero_writes_every_update_with_the_time_left():
    out = io.StringIO()
    p = progress.StepProgress(4, stream=out, interval=0.0)
    for done in range(1, 5):
        p.update(done)
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and "left" in lines[1] and "left" not in lines[-1]


def test_a_bar_on_a_terminal():
    out = _Terminal()
    p = progress.StepProgress(3, stream=out)
    assert p.bar
    for done in range(1, 4):
        p.update(done)
    assert "3/3" in out.getvalue()


def test_epoch_progress_in_a_file_is_plain(capsys):
    cb = progress.EpochProgress(epochs=1, steps_per_epoch=50, interval=3600.0)
    cb.on_epoch_begin(0)
    for b in range(50):
        cb.on_train_batch_end(b)
    cb.on_epoch_end(0, {"loss": 1.0})
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err and "50/50 steps (100%)" in err
    assert progress.EpochProgress.from_config(cb.get_config()).get_config() == cb.get_config()


@pytest.mark.parametrize("kwargs", [{"total": 0}, {"total": 2.0}, {"total": 3, "interval": -1}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        progress.StepProgress(**kwargs)
