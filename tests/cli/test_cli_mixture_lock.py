"""``tf-vrre mixture`` locks its ``--out`` before any work: a second study into the same directory
is refused in one line (exit 2) before TensorFlow starts, with or without a ladder tuner."""

import os
import subprocess
import sys

import pytest
from _mixture_runs import TINY
from _paths import ROOT

from tf_vrre import cli
from tf_vrre.runs import locks
from tf_vrre.workflows.gaussian_mixture import study

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
SECOND = """
import sys
from tf_vrre import cli
try:
    cli.main(["mixture", *sys.argv[2:], "--out", sys.argv[1], "--quiet"])
finally:
    print("tensorflow imported:", "tensorflow" in sys.modules, flush=True)
"""


class Stop(Exception):
    """Ends the first study once the second has been tried."""


def test_a_second_study_into_the_same_directory_is_refused_before_tensorflow(tmp_path, monkeypatch):
    out = tmp_path / "study"
    tried = {}

    def main_runs(self, runs, save):  # the first study, at work: a second one starts meanwhile
        tried["second"] = subprocess.run(
            [sys.executable, "-c", SECOND, str(out), *TINY],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=300,
        )
        raise Stop

    monkeypatch.setattr(study.Study, "main_runs", main_runs)
    with pytest.raises(Stop):
        cli.main(["mixture", *TINY, "--out", str(out), "--quiet"])
    second = tried["second"]
    assert second.returncode == 2, second.stderr[-2000:]
    lines = [row for row in second.stderr.splitlines() if row.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"tf-vrre: error: mixture: --out: {str(out)!r} is being written by another process (pid")
    assert second.stdout.strip().splitlines()[-1] == "tensorflow imported: False"
    assert sorted(os.listdir(out)) == [locks.LOCK]  # the refused study wrote nothing
    locks.check_free(out / locks.LOCK)  # the first study released its lock when it ended
    assert open(out / locks.LOCK).read() == ""


def test_a_directory_another_process_holds_is_refused_with_a_tuner(tmp_path, capsys):
    out = tmp_path / "study"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom tf_vrre.runs import locks\nlocks.lock_run(sys.argv[1])\n"
         "print('held', flush=True)\ntime.sleep(120)", str(out)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        flags = ["mixture", *TINY, "--methods", "vr-resgld-ladder", "--tune-ladder", "20", "--out", str(out)]
        with pytest.raises(SystemExit) as exc:
            cli.main(flags)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"tf-vrre: error: mixture: --out: {str(out)!r} is being written by another process (pid {holder.pid}); "
            "wait for it to end or stop it, then run again"
        ]
    finally:
        holder.kill()
        holder.wait()
