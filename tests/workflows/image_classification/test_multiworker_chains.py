"""One chain per replica on several machines: ``tf-vrre train --strategy multiworker --placement
chain-per-replica`` as 2 worker processes on 127.0.0.1 (one CPU device each, ``TF_CONFIG``), K = 2
chains, one per worker.

Worker 1 is killed (SIGKILL) once it has committed its checkpoint of epoch 1.  TensorFlow cannot
go on with a worker missing: the chief's next collective op fails once its health check misses
worker 1's heartbeats, and it stops with one line naming the restart rule (start every worker
again).  Started again, both workers resume from the chief's ``--out/backup`` and end with the
samples and swaps of the same run on one device (same seed and global batch), which only the
chief wrote.  (TensorFlow's coordination service declares a worker dead when its heartbeats stop;
on a machine so loaded that a live worker cannot answer in time, the run stops the same way.)
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
from _image_runs import cli_flags
from _paths import HELPERS, ROOT

from tf_vrre import cli
from tf_vrre.callbacks.sample_collector import load_samples

JOB = os.path.join(HELPERS, "_cli_job.py")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _workers(out, data_dir, tmp, kill=None):
    """The 2 workers of one ``tf-vrre train`` command (``kill``: the fault point at which worker 1
    kills itself); returns ``[(returncode, stdout, stderr)]``."""
    cluster = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(2)]}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TMPDIR=str(tmp), PYTHONPATH=os.pathsep.join([ROOT, HELPERS]))
    flags = cli_flags("vr-resghmc", out, data_dir) + ["--strategy", "multiworker", "--placement", "chain-per-replica"]
    procs = []
    for i in range(2):
        task = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}))
        if kill and i == 1:
            task["TF_VRRE_TEST_KILL"] = kill
        procs.append(
            subprocess.Popen(
                [sys.executable, JOB, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=task
            )
        )
    return procs


def _wait(procs):
    done = [p.communicate(timeout=600) for p in procs]
    return [(p.returncode, stdout, stderr) for p, (stdout, stderr) in zip(procs, done)]


def test_one_chain_per_worker_resumes_after_a_worker_is_killed(image_data_dir, tmp_path):
    out, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    workers = _workers(out, image_data_dir, tmp, kill="checkpoint.committed:1")
    single = tmp_path / "single"  # meanwhile, the same run on one device
    assert cli.main(cli_flags("vr-resghmc", single, image_data_dir)) == 0
    (rc0, _, err0), (rc1, _, err1) = _wait(workers)
    assert rc1 == -9, err1[-3000:]
    lines = [line for line in err0.splitlines() if line.startswith("tf-vrre: error:")]
    assert rc0 == 2 and len(lines) == 1, err0[-3000:]
    assert lines[0].startswith("tf-vrre: error: train: --strategy: multiworker: a worker stopped (")
    assert "start every worker again with the same command" in lines[0]
    assert json.load(open(out / "run.json"))["status"] == "running" and os.path.isdir(out / "backup")

    for rc, _, stderr in _wait(_workers(out, image_data_dir, tmp)):  # the restart rule: all workers again
        assert rc == 0, stderr[-3000:]
    run = json.load(open(out / "run.json"))
    assert run["status"] == "complete" and run["execution"]["placement"] == "chain_per_replica"
    assert run["execution"]["replicas"] == 2 and run["execution"]["workers"] == 2
    tasks = sorted(r["device"].split("/task:")[1][0] for r in run["rungs"])
    assert tasks == ["0", "1"]  # each rung held by a chain on its own worker
    assert sorted(os.listdir(out)) == [".lock", "log.csv", "run.json", "samples", "swaps", "tensorboard"]  # the chief's

    a, b = (np.genfromtxt(d / "swaps" / "swaps.csv", delimiter=",", names=True) for d in (out, single))
    assert a.size >= 2 and int(a["accepted"].sum()) >= 1
    for column in ("step", "pair", "accepted"):
        np.testing.assert_array_equal(a[column], b[column])
    np.testing.assert_allclose(a["log_ratio"], b["log_ratio"], rtol=1e-5, atol=1e-3)
    # each worker runs its chain's step with the one-device kernels on the whole batch: the samples
    # are the one-device run's bit for bit (only float64 energy sums may differ in their last bits),
    # which also shows that the resumed run continued exactly where the killed one stopped
    manifests = [json.load(open(d / "samples" / "manifest.json"))["entries"] for d in (out, single)]
    assert [(e["step"], e["sha256"]) for e in manifests[0]] == [(e["step"], e["sha256"]) for e in manifests[1]]
    assert len(load_samples(out / "samples")) >= 2
