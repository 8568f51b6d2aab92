"""Broken logs and run files give one line naming the file (and line), never nonsense results.

``tf-vrre diagnose`` on a swap log whose rows are unreadable, random bytes or impossible values
exits 2 naming ``swaps.csv`` and the line, and leaves no ``--out`` behind; only a last row torn by
a kill is dropped.  Undecodable, deeply nested or non-object ``run.json`` files are refused in
one line by the readers of evaluate / export / diagnose.
"""

import json
import os
import re
import shutil

import pytest

from tf_vrre import cli
from tf_vrre.diagnostics import runs
from tf_vrre.runs import run_json, samples


def _diagnose(run, out, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["diagnose", "--run", str(run), "--out", str(out), "--no-figures"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and err[0].startswith("tf-vrre: error: diagnose: --run: "), err
    assert not os.path.exists(out)  # read first, create after
    return err[0]


def _swaps(run):
    return run / "swaps" / "swaps.csv"


def _damage(path, change):
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(change(lines)))


@pytest.mark.parametrize(
    "what, change, message",
    [
        ("every row unreadable", lambda ls: [ls[0]] + ["x" * 7 + "\n" for _ in ls[1:]], "line 2: 1 fields"),
        ("a row cut in the middle", lambda ls: ls[:3] + [ls[3][:15] + "\n"] + ls[4:], "line 4: "),
        (
            "an impossible probability",
            lambda ls: (
                ls[:2]
                + [",".join(v if i != 8 else "7.5" for i, v in enumerate(ls[2].rstrip("\n").split(","))) + "\n"]
                + ls[3:]
            ),
            "line 3: accept_prob = 7.5, must be in [0, 1]",
        ),
        (
            "a negative pair",
            lambda ls: (
                ls[:2]
                + [",".join(v if i != 2 else "-1" for i, v in enumerate(ls[2].rstrip("\n").split(","))) + "\n"]
                + ls[3:]
            ),
            "line 3: pair = -1.0, must be an integer >= 0",
        ),
        ("a text value", lambda ls: ls[:5] + [ls[5].replace(",", ",abc,", 1).replace(",", "", 1)] + ls[6:], "line 6: "),
    ],
)
def test_a_damaged_swap_log_is_an_error_naming_file_and_line(diag_runs, tmp_path, capsys, what, change, message):
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    _damage(_swaps(run), change)
    line = _diagnose(run, tmp_path / "out", capsys)
    assert f"{_swaps(run)}, {message}" in line, (what, line)


def test_random_bytes_name_the_file(diag_runs, tmp_path, capsys):
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    _swaps(run).write_bytes(os.urandom(64) + b"\xff\xfe" + os.urandom(64))
    line = _diagnose(run, tmp_path / "out", capsys)
    assert str(_swaps(run)) in line and "not UTF-8 text" in line


def test_only_a_torn_last_row_is_dropped(diag_runs, tmp_path, capsys):
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    text = _swaps(run).read_text()
    rows = len(text.splitlines()) - 1
    _swaps(run).write_text(text[:-20])  # a kill in the middle of the last row
    log = runs.read_swap_log(run / "swaps")
    assert log.swaps["step"].size == rows - 1
    assert cli.main(["diagnose", "--run", str(run), "--out", str(tmp_path / "out"), "--no-figures"]) == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfe garbage", "not a readable run.json"),
        (b"[" * 100000 + b"]" * 100000, "not a readable run.json"),
        (b"[1, 2]", "not a JSON object"),
    ],
)
def test_unreadable_run_json_is_one_line(tmp_path, content, message):
    (tmp_path / "run.json").write_bytes(content)
    with pytest.raises(run_json.RunDirError, match=f"{tmp_path / 'run.json'}.*"):
        run_json.read_run(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        runs.read_run_json(str(tmp_path))


@pytest.mark.parametrize("status", [[1], "done", None])
def test_a_run_json_with_a_wrongly_typed_status_is_refused(tmp_path, status):
    """A status other than running / complete (a resume took [1] for an unfinished run and trained
    over it) is named with the file."""
    run = {
        "format": run_json.FORMAT,
        "method": "sghmc",
        "config": {},
        "model": {},
        "data": {},
        "preprocessing": {},
        "seed": 0,
        "status": status,
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    with pytest.raises(run_json.RunDirError, match=r"run.json: key status must be one of 'running', 'complete', got "):
        run_json.read_run(str(tmp_path))


@pytest.mark.parametrize("content", [b"\xff\xfe garbage", b"[" * 100000 + b"]" * 100000, b'{"format": 1'])
def test_unreadable_manifest_is_one_error_naming_it(tmp_path, content):
    (tmp_path / "manifest.json").write_bytes(content)
    with pytest.raises(ValueError, match=f"sample manifest {tmp_path / 'manifest.json'}"):
        samples.read_manifest(str(tmp_path))


def test_a_sample_that_is_not_a_zip_is_named(tmp_path):
    (tmp_path / "sample-000000002.npz").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ValueError, match="sample-000000002.npz is not a readable .npz file"):
        samples.array_shapes(str(tmp_path / "sample-000000002.npz"))


def test_resume_readers_name_a_damaged_log(tmp_path):
    from tf_vrre.callbacks.progress import EpochCSVLogger
    from tf_vrre.callbacks.swap_logger import _truncate_csv

    log = tmp_path / "log.csv"
    log.write_bytes(b"epoch,loss\n0,1.0\n\xff\xfe\x00garbage\n")
    logger = EpochCSVLogger(str(log))
    with pytest.raises(samples.RunFileError, match=f"{log}, line 3: not UTF-8 text"):
        logger.on_epoch_begin(1)
    swaps = tmp_path / "swaps.csv"
    swaps.write_text("step,epoch\n1,0\n2\n3,0\n")
    with pytest.raises(samples.RunFileError, match=f"{swaps}, line 3: 1 fields, the header has 2"):
        _truncate_csv(str(swaps), ["step", "epoch"], lambda r: True)
    swaps.write_text("step,epoch\n1,0\n2,0\n3")  # torn last row: dropped, the rest kept
    _truncate_csv(str(swaps), ["step", "epoch"], lambda r: True)
    assert swaps.read_text().splitlines() == ["step,epoch", "1,0", "2,0"]


def test_train_reports_a_damaged_sample_on_resume_in_one_line(image_data_dir, tmp_path, capsys):
    """A real run stopped after its first checkpoint, its sample then deleted or truncated: the
    resume refuses in one line naming the file and ``tf-vrre repair``; with the file put back it
    resumes and finishes."""
    from _image_runs import cli_flags, stopped_run

    run = tmp_path / "run"
    stopped_run(run, image_data_dir)
    entries = samples.read_manifest(str(run / "samples"))["entries"]
    assert entries, "the stopped run kept no sample"
    victim = run / "samples" / entries[-1]["file"]
    good = victim.read_bytes()
    flags = cli_flags("msgd", run, image_data_dir, epochs=2)
    hint = f"'tf-vrre repair {run}' keeps the readable samples"
    for damage, message in [
        (victim.unlink, f"sample manifest {run / 'samples' / 'manifest.json'} points at a missing file: {victim}"),
        (lambda: victim.write_bytes(good[: len(good) // 2]), f"sample file {victim} is truncated or corrupt"),
    ]:
        damage()
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            cli.main(flags)
        err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("tf-vrre: warning")]
        assert exc.value.code == 2 and len(err) == 1, err
        assert err[0].startswith("tf-vrre: error: train: --out: ") and message in err[0] and hint in err[0], err[0]
        victim.write_bytes(good)
    assert cli.main(flags) == 0  # the sample back in place: the same command resumes and finishes
    assert run_json.read_run(str(run))["status"] == "complete"
    assert [e["file"] for e in samples.read_manifest(str(run / "samples"))["entries"]][0] == entries[0]["file"]


_HEADER = "step,epoch,pair,temperature_lo,temperature_hi,energy_lo,energy_hi,log_ratio,accept_prob,accepted,sigma2\n"


def _row(step, accepted=1, epoch=0):
    return f"{step},{epoch},0,1.0,2.0,3.0,3.5,0.5,0.6,{accepted},0.1\n"


def test_evaluate_swap_summary_refuses_an_impossible_swap(tmp_path):
    from tf_vrre.workflows.image_classification import evaluate

    (tmp_path / "swaps").mkdir()
    (tmp_path / "swaps" / "swaps.csv").write_text(_HEADER + _row(1) + _row(2, accepted=7))
    with pytest.raises(samples.RunFileError, match="swaps.csv, line 3: accepted = 7.0, must be 0 or 1"):
        evaluate.swap_summary(str(tmp_path))
    (tmp_path / "swaps" / "swaps.csv").write_text(_HEADER + _row(1) + _row(2, accepted=0) + "3,0")
    assert evaluate.swap_summary(str(tmp_path))["swaps"] == 1


@pytest.mark.parametrize("where", ["run.json", "epochs.csv", "order"])
def test_a_swap_row_beyond_the_run_is_refused_by_diagnose_and_evaluate(where, tmp_path):
    """A row at step 10**12 in a 4-step run used to count as a swap (evaluate) and stretch the run
    to 10**12 steps (diagnose: 2e-09 round trips per 1000 steps); now it is damage naming the line.
    The bound: run.json's step count, else the steps epochs.csv counts plus an epoch in progress;
    and the steps of a log never decrease."""
    from tf_vrre.workflows.image_classification import evaluate

    swaps = tmp_path / "swaps"
    swaps.mkdir()
    rows = [_row(0), _row(1), _row(2, epoch=1), _row(3, epoch=1)]
    if where == "run.json":
        run_json.write_json(tmp_path / "run.json", {"schedule": {"total_steps": 4}})
        rows.append(_row(10**12, epoch=1))
        message = (
            "swaps.csv, line 6: step 1000000000000 lies beyond the run, whose steps end before 4 (run.json "
            "schedule.total_steps; a damaged row)"
        )
    elif where == "epochs.csv":
        (swaps / "epochs.csv").write_text("epoch,steps\n0,2\n")
        rows.insert(2, _row(10**12, epoch=1))
        message = (
            "swaps.csv, line 4: step 1000000000000 lies beyond the run, whose steps end before 4 (the first "
            "step logged plus the 2 steps epochs.csv counts and at most one epoch of 2 in progress"
        )
    else:
        rows.insert(0, _row(10**12))
        message = "swaps.csv, line 3: step 0 after step 1000000000000 on line 2; the steps of a log never decrease"
    (swaps / "swaps.csv").write_text(_HEADER + "".join(rows))
    with pytest.raises(samples.RunFileError, match=re.escape(message)):
        runs.read_swap_log(swaps, runs.run_steps(runs.read_run_json(tmp_path)))
    with pytest.raises(samples.RunFileError, match=re.escape(message)):
        evaluate.swap_summary(str(tmp_path))
    rows = [r for r in rows if not r.startswith(str(10**12))]
    (swaps / "swaps.csv").write_text(_HEADER + "".join(rows))
    assert evaluate.swap_summary(str(tmp_path))["attempts"] == 4
    log = runs.read_swap_log(swaps, runs.run_steps(runs.read_run_json(tmp_path)))
    assert (log.start_step, log.end_step) == (0, 4)
