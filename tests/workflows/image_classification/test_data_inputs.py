"""Image data inputs: npz part rule, empty / corrupt / unreadable files, flags and config values of
`tf-vrre train` / `evaluate` refused in one line before TensorFlow starts."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from _cli_probe import run_cli
from _paths import ROOT

from tf_vrre.runs import run_json
from tf_vrre.workflows.image_classification import config, config_values
from tf_vrre.workflows.image_classification.data import sources

ENV = dict(os.environ, PYTHONPATH=ROOT)
ENV.pop("TF_CPP_MIN_LOG_LEVEL", None)  # TensorFlow would print start-up lines: one line means it never started


def tf_vrre_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "tf_vrre.cli"] + [str(a) for a in args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        cwd=cwd,
    )


def one_line_error(result):
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf-vrre: error: "), result.stderr
    return lines[0]


def _images(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), np.arange(n) % 10


def _write(folder, name, n, seed=0):
    os.makedirs(folder, exist_ok=True)
    x, y = _images(n, seed)
    np.savez(os.path.join(folder, name), x=x, y=y)


TRAIN = [
    "train",
    "--config",
    "sghmc",
    "--model",
    "cnn",
    "--source",
    "npz",
    "--subset",
    "40",
    "--batch-size",
    "20",
    "--holdout",
    "10",
]


# ---- npz part files ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "names, message",
    [
        (["cifar10_train_part2of2.npz"], "missing cifar10_train_part1of2.npz"),
        (["cifar10_train_part1of2.npz", "cifar10_train_part2of3.npz"], "parts of different counts (of2, of3)"),
        (
            ["cifar10_train_part1of2.npz", "cifar10_train_part2of2.npz", "cifar10_train_part3of2.npz"],
            "part1of2 .. part2of2",
        ),
        (
            ["cifar10_train_part1of1.npz", "cifar10_train_partA.npz"],
            "part files must be named cifar10_train_part<k>of<n>",
        ),
    ],
)
def test_npz_parts_must_be_exactly_1_to_n_of_n(names, message, tmp_path):
    for i, name in enumerate(names):
        _write(tmp_path / "cifar10", name, 50, seed=i)
    with pytest.raises(ValueError) as err:
        sources.load_split("cifar10", "train", "npz", str(tmp_path))
    assert message in str(err.value) and names[-1] in str(err.value)
    with pytest.raises(ValueError, match="part"):
        sources.check_available("cifar10", "train", "auto", str(tmp_path))  # auto does not fall back to tfds
    line = one_line_error(tf_vrre_cli(*TRAIN, "--data-dir", tmp_path, "--out", tmp_path / "run"))
    assert message in line and names[-1] in line
    assert not (tmp_path / "run").exists()


def test_complete_parts_load_in_part_order(tmp_path):
    for k in (3, 1, 2):
        _write(tmp_path / "cifar10", f"cifar10_train_part{k}of3.npz", 10, seed=k)
    x, _, _ = sources.load_split("cifar10", "train", "npz", str(tmp_path))
    np.testing.assert_array_equal(x, np.concatenate([_images(10, k)[0] for k in (1, 2, 3)]))


# ---- empty, corrupt, unreadable ---------------------------------------------------------------
def _empty(path):
    np.savez(path, x=np.zeros((0, 32, 32, 3), np.uint8), y=np.zeros(0, np.int64))


def _not_zip(path):
    path.write_bytes(b"this is not an archive")


def _truncated(path):
    x, y = _images(50)
    np.savez(path, x=x, y=y)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _npy(path):
    with open(path, "wb") as f:
        np.save(f, np.zeros(3))


@pytest.mark.parametrize(
    "make, message",
    [
        (_empty, "the archive is empty"),
        (_not_zip, "not a readable .npz image archive"),
        (_truncated, "not a readable .npz image archive"),
        (_npy, "not an .npz archive"),
    ],
)
def test_bad_archives_are_named_in_one_line(make, message, tmp_path):
    (tmp_path / "cifar10").mkdir()
    path = tmp_path / "cifar10" / "cifar10_train.npz"
    make(path)
    with pytest.raises(ValueError) as err:
        sources.load_split("cifar10", "train", "npz", str(tmp_path))
    assert message in str(err.value) and str(path) in str(err.value)
    # without --subset the CLI counts the labels before TensorFlow starts: one line, naming the file
    flags = [f for f in TRAIN if f not in ("--subset", "40")]
    line = one_line_error(tf_vrre_cli(*flags, "--data-dir", tmp_path, "--out", tmp_path / "run"))
    assert message in line and str(path) in line and "-10 training examples" not in line


def test_unreadable_folder_is_called_unreadable_not_missing(tmp_path, monkeypatch):
    _write(tmp_path / "cifar10", "cifar10_train.npz", 20)
    real = os.scandir

    def denied(path):
        if str(path).endswith("cifar10"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(sources.os, "scandir", denied)
    with pytest.raises(PermissionError, match=r"data folder '.*cifar10' is not readable \(permission denied\)"):
        sources.check_available("cifar10", "train", "npz", str(tmp_path))


def test_unreadable_folder_through_the_cli(tmp_path):
    """The folder's listing denied as for a folder of mode 000 (file modes cannot deny root, and
    CI runs as root): refused in one line naming it, before TensorFlow starts, nothing created."""
    _write(tmp_path / "cifar10", "cifar10_train.npz", 20)
    flags = [*TRAIN, "--data-dir", tmp_path, "--out", tmp_path / "run"]
    marker = tmp_path / "tensorflow-imported"
    result, tensorflow_imported = run_cli(*flags, marker=marker, deny_listing=[tmp_path / "cifar10"], env=ENV)
    line = one_line_error(result)
    assert f"data folder '{tmp_path / 'cifar10'}' is not readable (permission denied)" in line, line
    assert "--data-dir" in line and "no cifar10 train data" not in line
    assert not tensorflow_imported and not os.path.exists(tmp_path / "run")


def test_config_and_run_json_with_bad_bytes_name_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'method = "sghmc"\ndescription = "\xff\xfe"\n')
    with pytest.raises(config.ConfigError, match=r"config .*bad.toml: not UTF-8 text"):
        config.load(str(bad))
    line = one_line_error(tf_vrre_cli("train", "--config", bad, "--out", tmp_path / "run"))
    assert str(bad) in line and "not UTF-8" in line
    run = tmp_path / "run_bytes"
    run.mkdir()
    (run / "run.json").write_bytes(b'{"format": "\xff"}')
    with pytest.raises(run_json.RunDirError, match=r"run.json: not a readable run manifest \(not UTF-8"):
        run_json.read_run(run)
    line = one_line_error(tf_vrre_cli("evaluate", "--run", run))
    assert str(run / "run.json") in line and "not UTF-8" in line


# ---- flags and config values checked before TensorFlow --------------------------------------
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    _write(root / "cifar10", "cifar10_train.npz", 100)
    _write(root / "cifar10", "cifar10_test.npz", 50, seed=1)
    return root


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--holdout", "nan"], "--holdout: must be a count in [0, 2147483647] or a fraction in [0, 1), got nan"),
        (["--holdout", "inf"], "--holdout: must be a count in [0, 2147483647] or a fraction in [0, 1), got inf"),
        (["--holdout", "-1"], "--holdout: must be a count"),
        (["--holdout", "99999999999"], "--holdout: must be a count in [0, 2147483647]"),
        (["--erasing", "nan"], "--erasing: must be a finite number, got nan"),
        (["--erasing", "1.5"], "--erasing: must be in [0, 1], got 1.5"),
        (["--no-augment", "--erasing", "0.5"], "--no-augment: contradicts --erasing 0.5"),
        (["--no-augment", "--set", "data.erasing=0.2"], "--no-augment: contradicts --set data.erasing=0.2"),
        (
            ["--set", "model.kwargs.depth=3"],
            "config key model.kwargs.depth is unknown for model cnn; allowed: width, "
            "batch_norm, synchronized_bn, name (override)",
        ),
        (
            ["--set", "model.kwargs.width=0"],
            "config key model.kwargs.width must be an integer in [1, 2147483647], got 0 (override)",
        ),
        (
            ["--set", "training.seed=4294967296"],
            "config key training.seed must be an integer in [0, 2147483647], got 4294967296 (override)",
        ),
        (["--set", "data.split_seed=4294967296"], "config key data.split_seed must be an integer in [0, 2147483647]"),
        (["--set", "swap.bogus=1"], "config key swap.bogus is unknown; allowed in [swap]: correction"),
        (["--set", "data.bogus=1"], "config key data.bogus is unknown; allowed in [data]"),
    ],
)
def test_train_flags_refused_in_one_line_before_tensorflow(flags, message, data, tmp_path):
    line = one_line_error(tf_vrre_cli(*TRAIN, "--data-dir", data, "--out", tmp_path / "run", *flags))
    assert message in line, line
    assert "(in " not in line  # an override is not in the config file
    assert not (tmp_path / "run").exists()


def test_unknown_override_says_override_and_file_keys_name_the_file(tmp_path):
    with pytest.raises(config.ConfigError, match=r"config key swap.bogus is unknown; .* \(override\)$"):
        config.resolve(config.apply_overrides(config.load("vr-resghmc"), {"swap.bogus": 1}))
    with pytest.raises(
        config.ConfigError, match=r"config key swap.period does not apply to method 'sghmc' .*\(override\)$"
    ):
        config.resolve(config.apply_overrides(config.load("sghmc"), {"swap.period": 1}))
    path = tmp_path / "c.toml"
    path.write_text('method = "sghmc"\n[data]\nbogus = 1\n[model]\nkwargs = {depth = 2}\nname = "cnn"\n')
    with pytest.raises(config.ConfigError, match=r"config key data.bogus is unknown; .*\(in .*c.toml\)$"):
        config.resolve(config.load(str(path)))
    path.write_text('method = "sghmc"\n[model]\nkwargs = {depth = 2}\nname = "cnn"\n')
    with pytest.raises(config.ConfigError, match=r"model.kwargs.depth is unknown for model cnn.*\(in .*c.toml\)$"):
        config.resolve(config.load(str(path)))


def test_model_kwargs_match_the_builders():
    import inspect

    from tf_vrre.workflows.image_classification import models

    for name in config_values.MODEL_NAMES:
        builder = models.MODELS[name]
        fn = models.resnet if name.startswith("resnet") else builder
        params = set(inspect.signature(fn).parameters) - {"depth", "num_classes", "input_shape"}
        assert set(config_values.MODEL_KWARGS[name]) == params, name
    cfg = config.resolve(
        config.apply_overrides(config.load("sghmc"), {"model.name": "resnet8", "model.kwargs.width": 4})
    )
    assert cfg.model.kwargs == {"width": 4}


def _fake_run(run, data_dir):
    """A run directory with one sample (all ``evaluate`` checks before TensorFlow look at)."""
    import hashlib

    (run / "samples").mkdir(parents=True)
    run_json.write_json(
        run / "run.json",
        {
            "format": run_json.FORMAT,
            "method": "sghmc",
            "config": {},
            "seed": 0,
            "model": {"name": "cnn", "kwargs": {}, "num_classes": 10, "input_shape": [32, 32, 3]},
            "data": {"dataset": "cifar10", "source": "npz", "data_dir": str(data_dir), "train_size": 90, "holdout": 0},
            "preprocessing": {"kind": "normalize", "scale": 1 / 255, "mean": [0.5] * 3, "std": [0.25] * 3},
        },
    )
    sample = run / "samples" / "sample-000000001.npz"
    np.savez(sample, w0=np.zeros(3, np.float32))
    (run / "samples" / "manifest.json").write_text(
        json.dumps(
            {
                "format": "tf_vrre.samples/1",
                "entries": [
                    {
                        "file": sample.name,
                        "step": 1,
                        "bytes": sample.stat().st_size,
                        "sha256": hashlib.sha256(sample.read_bytes()).hexdigest(),
                    }
                ],
            }
        )
    )
    return run


def test_evaluate_refuses_the_training_set_as_ood(data, tmp_path):
    from tf_vrre.workflows.image_classification import evaluation_checks

    run = _fake_run(tmp_path / "run", data)
    line = one_line_error(tf_vrre_cli("evaluate", "--run", run, "--ood", "cifar10", "--fit-size", "0"))
    assert "ood 'cifar10' is the run's training data set cifar10" in line and "cifar100, svhn, none" in line
    with pytest.raises(ValueError, match="not out of distribution"):
        evaluation_checks.data_sources(run_json.read_run(run), "cifar10")
    assert sorted(os.listdir(run)) == ["run.json", "samples"]


def test_evaluate_checks_that_it_can_write_the_run_before_starting(data, tmp_path, monkeypatch, capsys):
    """A run directory evaluate cannot write is refused by the flag checks, not after the whole
    evaluation (simulated: this suite may run as root, who can write anywhere)."""
    from tf_vrre import cli
    from tf_vrre.cli import _args, evaluate

    run = _fake_run(tmp_path / "run", data)

    def read_only(prefix, dir):
        raise PermissionError(13, "Permission denied", dir)

    started = []
    monkeypatch.setattr(_args.tempfile, "mkdtemp", read_only)
    monkeypatch.setattr(evaluate, "run", lambda args: started.append(args) or 0)
    with pytest.raises(SystemExit) as exc:
        cli.main(["evaluate", "--run", str(run), "--ood", "none", "--fit-size", "0"])
    assert exc.value.code == 2 and not started
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("tf-vrre: error: evaluate: --run") and "is not writable" in err[-1], err
