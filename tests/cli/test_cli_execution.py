"""``tf-vrre train`` refuses the execution options its strategy cannot run with the sampler's own
rule (:mod:`tf_vrre.sampler.execution`), in one line naming the flag and its allowed values."""

import os

import pytest
import tensorflow as tf
from _image_runs import cli_flags

from tf_vrre import cli
from tf_vrre.workflows.image_classification import train


class TwoReplicasOnCpu:
    """What the command line reads of a MirroredStrategy over two CPU devices."""

    num_replicas_in_sync = 2


@pytest.mark.parametrize(
    "flags,env,line",
    [
        (
            ["--steps-per-execution", "2"],
            None,
            "tf-vrre: error: train: --steps-per-execution: 2 cannot run under TwoReplicasOnCpu with 2 replicas: "
            "Keras 3's multi-step loop fails under multi-replica strategies other than TPUStrategy "
            "(keras-team/keras#19246) (--strategy mirrored); allowed here: 1",
        ),
        (
            ["--jit-compile", "on"],
            None,
            "tf-vrre: error: train: --jit-compile: on cannot run under TwoReplicasOnCpu with 2 replicas on CPU "
            "devices: XLA cannot compile the all-reduces between CPU devices (--strategy mirrored); allowed here: "
            "off or auto",
        ),
        (
            [],
            "1",
            "tf-vrre: error: train: --jit-compile: not given, and $TF_VRRE_JIT_COMPILE turns XLA on: it cannot "
            "run under TwoReplicasOnCpu with 2 replicas on CPU devices",
        ),
    ],
    ids=["steps_per_execution", "jit_compile", "environment"],
)
def test_an_option_the_strategy_cannot_run_names_its_flag(
    flags, env, line, image_data_dir, tmp_path, capsys, monkeypatch
):
    if tf.config.list_logical_devices("GPU"):
        pytest.skip("a GPU is present: XLA runs under several GPU replicas")
    if env is not None:
        monkeypatch.setenv("TF_VRRE_JIT_COMPILE", env)
    monkeypatch.setattr(train, "make_strategy", lambda name: TwoReplicasOnCpu())
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        cli.main(cli_flags("vr-resghmc", out, image_data_dir) + ["--strategy", "mirrored"] + flags)
    assert exc.value.code == 2
    err = [row for row in capsys.readouterr().err.splitlines() if row.startswith("tf-vrre: error")]
    assert len(err) == 1 and err[0].startswith(line), err
    assert not os.path.exists(out)
