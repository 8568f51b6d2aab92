"""`tf_vrre.workflows.image_classification.strategies` and the image workflow's execution options (`tf-vrre train --strategy / --jit-compile /
--steps-per-execution`): names, clear errors, XLA and steps per execution recorded in run.json, and a
2-worker `tf-vrre train --strategy multiworker` in which only the chief writes the run directory."""

import contextlib
import glob
import json
import os
import socket
import subprocess
import sys

import _fake_tpu
import numpy as np
import pytest
from _image_runs import cli_flags, tiny_config
from _paths import ROOT

from tf_vrre.callbacks.sample_collector import load_samples
from tf_vrre.workflows.image_classification import strategies, train, worker_status


# ---- TF_CONFIG and TPU detection (no TensorFlow) ----------------------------------------------
@pytest.mark.parametrize(
    "text,message",
    [
        ("{not json", "TF_CONFIG is not valid JSON"),
        ('["worker"]', "TF_CONFIG needs a 'cluster' object"),
        (
            '{"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}}',
            "must be a non-empty list of 'host:port'",
        ),
        (
            '{"cluster": {"worker": ["h0"]}, "task": {"type": "worker", "index": 0}}',
            "must be a non-empty list of 'host:port'",
        ),
        ('{"cluster": {"worker": ["h0:1", "h1:1"]}}', "TF_CONFIG needs a 'task' object with 'type' and 'index'"),
        (
            '{"cluster": {"worker": ["h0:1", "h1:1"]}, "task": {"type": "ps", "index": 0}}',
            "task type 'ps' must be one of",
        ),
        (
            '{"cluster": {"worker": ["h0:1", "h1:1"]}, "task": {"type": "worker", "index": 2}}',
            r"task index 2 must be an integer in [0, 2)",
        ),
        (
            '{"cluster": {"worker": ["h0:1"], "ps": ["h2:1"]}, "task": {"type": "worker", "index": 0}}',
            "cluster jobs ['ps'] are not used",
        ),
    ],
)
def test_malformed_tf_config_is_named(text, message, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", text)
    with pytest.raises(ValueError) as err:
        strategies.check("multiworker")
    assert message in str(err.value)
    with pytest.raises(ValueError) as err:  # make_strategy checks before creating anything
        strategies.make_strategy("multiworker")
    assert message in str(err.value)


def test_well_formed_tf_config_and_names(monkeypatch):
    cfg = {"cluster": {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}, "task": {"type": "worker", "index": 1}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(cfg))
    assert strategies.tf_config() == cfg
    monkeypatch.delenv("TF_CONFIG")
    assert strategies.tf_config() is None
    assert strategies.STRATEGIES == ("auto", "default", "mirrored", "multiworker", "tpu")
    with pytest.raises(
        ValueError, match="strategy must be one of auto, default, mirrored, multiworker, tpu; got 'gpu'"
    ):
        strategies.check("gpu")
    from tf_vrre.sgmcmc import swap_record  # the CLI bound, kept TF-free, is the swap record's capacity

    assert strategies.MAX_STEPS_PER_EXECUTION == swap_record.CAPACITY


def _closed_port():
    """A local TCP port nobody listens on (a stale TPU address)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_tpu_detection(monkeypatch):
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    present = strategies.tpu_present()  # no TPU on the test machines: /dev/accel* absent, no Google PCI device
    assert present == bool(__import__("glob").glob("/dev/accel*") or strategies._vfio_tpu())
    if not present:
        with pytest.raises(ValueError, match=r"strategy 'tpu': no TPU detected \(\$COLAB_TPU_ADDR unset"):
            strategies.check("tpu")
    strategies.check("tpu", tpu_address="10.0.0.2:8470")  # an address given: left to make_strategy to try
    stale = f"127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("COLAB_TPU_ADDR", stale)
    assert not strategies.tpu_present() or present  # a stale address is no TPU
    assert "no TCP connection within" in strategies.tpu_reachable(stale)
    assert strategies.tpu_reachable("no-port") == "not host:port ('no-port')"
    if not present:
        with pytest.raises(
            ValueError,
            match=rf"no TPU detected \(\$COLAB_TPU_ADDR = '{stale}' \(not reachable: "
            r"no TCP connection within 3 s: ConnectionRefusedError\)",
        ):
            strategies.check("tpu")
    with _fake_tpu.worker_service() as node:  # a TPU node's worker service counts
        monkeypatch.setenv("COLAB_TPU_ADDR", node)
        assert strategies.tpu_present() and strategies.tpu_reachable("grpc://" + node) is None
        strategies.check("tpu")


def test_an_address_that_accepts_tcp_is_no_tpu_unless_its_worker_service_lists_one(monkeypatch):
    """TCP alone is no TPU: TensorFlow's connection to such an address has no deadline (it waited
    for ever); the worker service must list a TPU device, asked in a child process with deadlines."""
    monkeypatch.setattr(worker_status, "TPU_STATUS_SECONDS", 0.5)
    with _fake_tpu.tcp_only() as address:
        assert strategies.tpu_reachable(address) == (
            "accepts TCP, but no TensorFlow server answered within 0.5 s (DEADLINE_EXCEEDED: Deadline Exceeded)"
        )
        monkeypatch.setenv("COLAB_TPU_ADDR", address)
        local = bool(glob.glob("/dev/accel*") or strategies._vfio_tpu())
        assert strategies.tpu_present() == local
        if not local:
            with pytest.raises(
                ValueError,
                match=r"no TPU detected \(\$COLAB_TPU_ADDR = '127.0.0.1:\d+' \(not "
                r"reachable: accepts TCP, but no TensorFlow server answered",
            ):
                strategies.check("tpu")
    with _fake_tpu.worker_service(("CPU",)) as address:  # a TensorFlow server, but no TPU
        assert strategies.tpu_reachable(address) == "a TensorFlow server without a TPU device (devices: CPU)"
    monkeypatch.setattr(worker_status, "STATUS_PROCESS_SECONDS", 0.01)  # the child is killed, whatever it does
    with _fake_tpu.worker_service() as address:
        assert strategies.tpu_reachable(address) == "accepts TCP, but asking its devices did not end within 0.01 s"


def test_vfio_alone_is_no_tpu(monkeypatch):
    """``/dev/vfio/<n>`` is any passed-through PCI device: a TPU only with a Google PCI device."""
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    real_glob = strategies.glob.glob
    vendors = {"/sys/bus/pci/devices/0000:00:04.0/vendor": "0x10de\n"}  # an NVIDIA GPU passed through

    def fake_glob(pattern):
        if pattern == "/dev/vfio/[0-9]*":
            return ["/dev/vfio/0"]
        if pattern == "/sys/bus/pci/devices/*/vendor":
            return list(vendors)
        return [] if pattern == "/dev/accel*" else real_glob(pattern)

    real_open = open

    def fake_open(path, *args, **kw):
        if path in vendors:
            import io

            return io.StringIO(vendors[path])
        return real_open(path, *args, **kw)

    monkeypatch.setattr(strategies.glob, "glob", fake_glob)
    monkeypatch.setattr("builtins.open", fake_open)
    assert not strategies.tpu_present()
    assert "/dev/vfio/<n> found, no Google PCI device" in strategies._tpu_probe()
    vendors["/sys/bus/pci/devices/0000:00:05.0/vendor"] = "0x1ae0\n"  # a TPU chip
    assert strategies.tpu_present()


@contextlib.contextmanager
def _address(kind):
    """``$COLAB_TPU_ADDR`` of a kind: a closed port, a port that only accepts TCP, or a worker
    service that looks like a TPU node but refuses the connection (fails fast)."""
    if kind == "closed":
        yield f"127.0.0.1:{_closed_port()}"
    else:
        with _fake_tpu.tcp_only() if kind == "tcp-only" else _fake_tpu.worker_service() as address:
            yield address


_REASONS = {
    "closed": "no TCP connection within 3 s: ConnectionRefusedError",
    "tcp-only": "accepts TCP, but no TensorFlow server answered within 5 s (DEADLINE_EXCEEDED",
}


@pytest.mark.parametrize(
    "strategy,kind",
    [
        ("default", "closed"),
        ("auto", "closed"),
        ("auto", "tcp-only"),
        ("auto", "tpu-node"),
        ("tpu", "closed"),
        ("tpu", "tcp-only"),
        ("tpu", "tpu-node"),
    ],
)
def test_stale_tpu_address_never_hangs_train(strategy, kind, image_data_dir, tmp_path):
    """``tf-vrre train`` with ``$COLAB_TPU_ADDR`` of a closed port, of a port that accepts TCP but
    never answers (TensorFlow's connection used to wait for it for ever), or of a TPU node whose
    connection fails: default and auto train on the CPU (auto with a warning naming why; after a
    failed connection too, which used to leave TensorFlow's context unusable), tpu fails with one
    line, within seconds (the run's time bounded by the subprocess timeout)."""
    if strategies.tpu_present():
        pytest.skip("a TPU is present")
    out = tmp_path / "run"
    flags = cli_flags("msgd", out, image_data_dir, epochs=1) + ["--strategy", strategy]
    with _address(kind) as address:
        env = dict(os.environ, COLAB_TPU_ADDR=address, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
        proc = subprocess.run(
            [sys.executable, "-m", "tf_vrre.cli", *flags],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
            cwd=ROOT,
        )
    tried = (
        f"strategy 'tpu' (--strategy tpu / strategy=\"tpu\"): no TPU reachable. Tried "
        f"TPUClusterResolver(tpu='grpc://{address}'), experimental_connect_to_cluster, initialize_tpu_system: "
        "UnimplementedError"
    )
    if strategy == "tpu":
        assert proc.returncode == 2, proc.stderr[-3000:]
        lines = [
            line for line in proc.stderr.splitlines() if line.startswith("tf-vrre: error")
        ]  # not TF's logs, not warnings
        assert "Traceback" not in proc.stderr and proc.stderr.rstrip().endswith(lines[-1])
        why = (
            tried
            if kind == "tpu-node"
            else (f"strategy 'tpu': no TPU detected ($COLAB_TPU_ADDR = '{address}' (not reachable: {_REASONS[kind]}")
        )
        assert len(lines) == 1 and lines[0].startswith("tf-vrre: error: train: --strategy") and why in lines[0], (
            proc.stderr
        )
        assert not out.exists() or kind == "tpu-node"  # found before TensorFlow starts, else after the lock
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.load(open(out / "run.json"))["execution"]["strategy"] == "default"
    assert len(load_samples(out / "samples")) >= 1
    warning = (
        f"strategy 'auto': {tried}"
        if kind == "tpu-node"
        else f"strategy 'auto': no TPU at '{address}' ($COLAB_TPU_ADDR): {_REASONS[kind]}"
    )
    assert (warning in proc.stderr) == (strategy == "auto"), proc.stderr[-3000:]
    assert "; using the GPUs / CPU" in proc.stderr or strategy == "default"


# ---- strategies made (TensorFlow) -----------------------------------------------------------------
def test_make_strategy_names(monkeypatch):
    import tensorflow as tf

    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    default = strategies.make_strategy("default")
    assert default is tf.distribute.get_strategy() and strategies.is_chief(default)
    assert strategies.make_strategy("auto") is default  # no TPU, no GPU here
    mirrored = strategies.make_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy) and not strategies.is_multi_worker(mirrored)
    assert strategies.is_chief(mirrored) and strategies.worker_name(mirrored) == "single"
    assert [strategies.name_of(s) for s in (default, mirrored)] == ["default", "mirrored"]
    assert train.make_strategy is strategies.make_strategy


def test_options_that_cannot_run_under_a_strategy_are_refused():
    """The workflow applies the sampler's own rule (tf_vrre.sampler.execution), no copy of it."""
    import tensorflow as tf

    from tf_vrre.sampler import execution

    class TwoReplicasOnCpu:  # stands for MirroredStrategy / MultiWorkerMirroredStrategy with 2 CPU replicas
        num_replicas_in_sync = 2

    if tf.config.list_logical_devices("GPU"):
        pytest.skip("a GPU is present")
    with pytest.raises(
        execution.ExecutionError,
        match=r"jit_compile=True cannot run under TwoReplicasOnCpu with 2 replicas on CPU devices: XLA cannot "
        "compile the all-reduces",
    ):
        strategies.check_options(TwoReplicasOnCpu(), jit_compile=True)
    with pytest.raises(
        execution.ExecutionError,
        match=r"steps_per_execution=4 cannot run under TwoReplicasOnCpu with 2 replicas: .*keras-team/keras#19246",
    ):
        strategies.check_options(TwoReplicasOnCpu(), steps_per_execution=4)
    for jit, spe in (("auto", 1), (False, None)):
        strategies.check_options(TwoReplicasOnCpu(), jit, spe)
    strategies.check_options(tf.distribute.get_strategy(), True, 8)  # one replica: both fine


def test_tpu_unavailable_is_a_clear_value_error(monkeypatch):
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    if strategies.tpu_present():
        pytest.skip("a TPU is present")
    with pytest.raises(ValueError) as err:
        strategies.make_strategy("tpu")
    text = str(err.value)
    assert text.startswith(
        "strategy 'tpu' (--strategy tpu / strategy=\"tpu\"): no TPU reachable. Tried "
        "TPUClusterResolver(tpu='local'), experimental_connect_to_cluster, initialize_tpu_system"
    )
    assert "Detected: $COLAB_TPU_ADDR unset, /dev/accel* absent, /dev/vfio/<n> " in text
    monkeypatch.setenv("COLAB_TPU_ADDR", f"127.0.0.1:{_closed_port()}")
    with pytest.raises(
        ValueError,
        match=r"no TPU reachable at 'grpc://127.0.0.1:\d+' \(\$COLAB_TPU_ADDR\): no TCP "
        r"connection within 3 s: ConnectionRefusedError\.",
    ):
        strategies.make_strategy("tpu")
    with pytest.warns(
        UserWarning,
        match=r"strategy 'auto': no TPU at '127.0.0.1:\d+' \(\$COLAB_TPU_ADDR\): no TCP "
        "connection within 3 s: ConnectionRefusedError; using the GPUs / CPU",
    ):
        assert strategies.name_of(strategies.make_strategy("auto")) == "default"
    assert err.value.__cause__ is None and err.value.__suppress_context__  # not a raw TensorFlow traceback
    # made inside the library (as train() makes it): the warning is at the user's line, not train's
    inside = compile("def train():\n    return strategies.make_strategy('auto')\n", train.__file__, "exec")
    scope = {"strategies": strategies}
    exec(inside, scope)
    with pytest.warns(UserWarning, match="strategy 'auto': no TPU at") as caught:
        scope["train"]()
    assert [w.filename for w in caught if "strategy 'auto'" in str(w.message)] == [__file__]


# ---- training.train: jit_compile and steps_per_execution -----------------------------------------
def test_execution_options_are_checked_before_anything_is_written(image_data_dir, tmp_path):
    cfg = tiny_config("vr-resghmc")  # thinning 1
    for kwargs, message in (
        ({"jit_compile": "yes"}, "jit_compile must be None, True, False or 'auto'; got 'yes'"),
        ({"jit_compile": 1}, "jit_compile must be None, True, False or 'auto'; got 1"),
        ({"steps_per_execution": 0}, r"steps_per_execution must be an integer in \[1, 1024\]"),
        ({"steps_per_execution": 2}, r"steps_per_execution \(2\) must divide samples.thinning \(1\)"),
        ({"strategy": "gpu"}, "strategy must be one of auto, default, mirrored, multiworker, tpu"),
    ):
        with pytest.raises(ValueError, match=message):
            train.train(cfg, tmp_path / "run", data_dir=image_data_dir, source="npz", verbose=0, **kwargs)
        assert not os.path.exists(tmp_path / "run")


def test_train_with_xla_and_steps_per_execution_records_both(image_data_dir, tmp_path, capsys):
    cfg = tiny_config("vr-resghmc", samples__thinning=2)
    out = tmp_path / "run"
    result = train.train(
        cfg, out, data_dir=image_data_dir, source="npz", verbose=1, jit_compile=True, steps_per_execution=2
    )
    assert "XLA on, 2 step(s) per execution" in capsys.readouterr().err
    run = json.load(open(out / "run.json"))
    assert run["status"] == "complete" and run["execution"] == {
        "strategy": "default",
        "workers": 1,
        "jit_compile": True,
        "xla": True,
        "xla_forced_by_tpu": False,
        "steps_per_execution": 2,
        "placement": "replicated",
        "replicas": 1,
        "devices": ["/device:CPU:0"],
    }
    assert [(r["rung"], r["chain"], r["device"]) for r in run["rungs"]] == [
        (0, 0, "/device:CPU:0"),
        (1, 1, "/device:CPU:0"),
    ]
    sampler = result["sampler"]
    assert sampler.jit_compile is True and sampler.steps_per_execution == 2
    assert int(sampler.state.step.numpy()) == 4  # 2 epochs x 2 steps, in executions of 2
    samples = load_samples(out / "samples")
    assert samples.steps == [2, 4] and all(np.isfinite(w).all() for w in samples.weights(1))
    assert np.isfinite(result["history"]["loss"]).all()


def test_host_step_counter_round_trip():
    import keras

    from tf_vrre.callbacks.progress import HostStepCounter

    cb = HostStepCounter()
    assert cb.get_config() == {} and cb.counter.dtype.name == "int64" and "CPU" in cb.counter.device
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(cb))
    assert isinstance(again, HostStepCounter) and again.get_config() == {}


# ---- two workers ------------------------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _workers(outs, data_dir, tmp):
    """Runs `tf-vrre train --strategy multiworker` as 2 workers on 127.0.0.1; returns their outputs."""
    cluster = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(2)]}
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        TMPDIR=str(tmp),
        PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
    )
    procs = []
    for i, out in enumerate(outs):
        flags = cli_flags("vr-resghmc", out, data_dir) + ["--strategy", "multiworker"]
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "tf_vrre.cli"] + flags,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})),
            )
        )
    results = [(p.pid, *p.communicate(timeout=600)) for p in procs]
    return [(pid, p.returncode, stdout, stderr) for p, (pid, stdout, stderr) in zip(procs, results)]


def test_two_workers_only_the_chief_writes_the_run(image_data_dir, tmp_path):
    out, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    (_, rc0, out0, err0), (_, rc1, out1, err1) = _workers([out, out], image_data_dir, tmp)
    assert rc0 == 0, err0[-3000:]
    assert rc1 == 0, err1[-3000:]
    run = json.load(open(out / "run.json"))
    assert run["status"] == "complete" and run["replicas"] == 2
    assert run["execution"]["strategy"] == "multiworker" and run["execution"]["workers"] == 2
    assert sorted(os.listdir(out)) == [
        ".lock",
        "log.csv",
        "run.json",
        "samples",
        "swaps",
        "tensorboard",
    ]  # backup removed
    for folder in ("", "samples", "swaps"):  # the chief's locks, released: no pid left behind
        assert open(out / folder / ".lock").read() == ""
    assert "-> " in out0 and "a non-chief worker: the chief wrote" in out1
    assert os.listdir(tmp) == [] or not [n for n in os.listdir(tmp) if n.startswith("tf_vrre-")]  # removed
    assert len(load_samples(out / "samples")) == run["expected_samples"] >= 1
    assert len(open(out / "log.csv").read().splitlines()) == 1 + 2  # header + 2 epochs, written once

    # the same run on one worker (same global batch): same swap decisions, samples within float tolerance
    from tf_vrre import cli

    single = tmp_path / "single"
    assert cli.main(cli_flags("vr-resghmc", single, image_data_dir)) == 0
    swaps = [np.genfromtxt(d / "swaps" / "swaps.csv", delimiter=",", names=True) for d in (out, single)]
    assert swaps[0].size >= 1
    np.testing.assert_array_equal(swaps[0]["step"], swaps[1]["step"])
    np.testing.assert_array_equal(swaps[0]["accepted"], swaps[1]["accepted"])
    multi_s, single_s = load_samples(out / "samples"), load_samples(single / "samples")
    assert multi_s.steps == single_s.steps
    for i in range(len(multi_s)):
        for a, b in zip(multi_s.weights(i), single_s.weights(i)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)

    # a worker that sees another state of --out (here: another directory) stops both, naming the states
    other = tmp_path / "other"
    results = _workers([out, other], image_data_dir, tmp)
    for _, rc, _, err in results:
        assert rc == 2 and "the workers see different states of" in err, err[-2000:]
        assert "worker 0: a complete run; worker 1: a new run" in err
    assert not os.path.exists(other)
