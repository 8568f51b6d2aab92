"""The command line fails loudly and loses nothing.

The real ``tf-vrre`` console script, in a subprocess: every bad flag value (inf, nan, huge
numbers, values that conflict) exits 2 with exactly one line on stderr (no usage block, no
TensorFlow start-up lines: flags are checked before TensorFlow is imported), nothing on stdout,
nothing created at ``--out`` (``train`` / ``evaluate``: nothing written into a run directory).
Ctrl-C is in ``test_cli_interrupt.py``.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from _paths import ROOT

from tf_vrre.cli import mixture

SCRIPT = os.path.join(os.path.dirname(sys.executable), "tf-vrre")
COMMAND = [SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "tf_vrre.cli"]
ENV = dict(os.environ, PYTHONPATH=ROOT)
ENV.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the script must stay quiet without it


def run_cli(*args, timeout=120):
    return subprocess.run(COMMAND + list(args), capture_output=True, text=True, env=ENV, timeout=timeout)


BAD = [
    (["mixture", "--lr", "-1"], "--lr: must be > 0, got -1"),
    (["mixture", "--lr", "inf"], "--lr: must be a finite number, got inf"),
    (["mixture", "--tau2", "nan"], "--tau2: must be a finite number, got nan"),
    (["mixture", "--correction", "1e39"], "--correction: must be <= 3.40282e+38, got 1e39"),
    (["mixture", "--iterations", "1e30"], "--iterations/--steps: expected an int, got '1e30'"),
    (["mixture", "--iterations", "99999999999"], "--iterations/--steps: must be <= 1000000000"),
    (["mixture", "--data-size", "100000000"], "--data-size: must be <= 10000000"),
    (["mixture", "--seed", "4294967296"], "--seed: must be <= 2147483647"),
    (["mixture", "--initial=-1e300"], "--initial: must be >= -1e+06, got -1e300"),
    (["mixture", "--burn-in", "1"], "--burn-in: must be in [0, 1), got 1"),
    (["mixture", "--sens-ratios", "0.5,2"], "--sens-ratios: must be <= 1, got 2"),
    (["mixture", "--tau1", "3000", "--tau2", "10"], "--tau1: must be < --tau2"),
    (["mixture", "--batch", "500", "--data-size", "100"], "--batch: must be <= --data-size (100), got 500"),
    (["mixture", "--methods", "sgld,bogus"], "--methods: must be distinct names from"),
    (["mixture", "--no-such-flag"], "--no-such-flag: unrecognized argument"),
    (["export", "--run", "{run}", "--out", "{out}", "--max-members", "0"], "--max-members: must be > 0"),
    (["export", "--run", "{run}", "--out", "{out}", "--temperature", "inf"], "must be a finite number"),
    (["export", "--run", "{run}", "--out", "{out}", "--version", "1e9"], "--version: expected an int"),
    (["export", "--run", "/nonexistent", "--out", "{out}"], "--run: '/nonexistent': no run.json there"),
    (["export", "--samples", "{corrupt}", "--out", "{out}"], "sample manifest"),
    (["diagnose", "--run", "{run}", "--burn-in", "nan"], "--burn-in: must be a finite number"),
    (["diagnose", "--run", "{run}", "--points", "1e3"], "--points: expected an int"),
    (["diagnose", "--run", "{run}", "--blocks", "1"], "--blocks: must be >= 2, got 1"),
    (["diagnose", "--run", "{corrupt_run}"], "is truncated or corrupt"),
    (["train", "--config", "sghmc", "--out", "{out}", "--epochs", "0"], "--epochs: must be > 0, got 0"),
    (["train", "--config", "sghmc", "--out", "{out}", "--holdout", "1.5"], "--holdout: must be a count"),
    (["train", "--config", "bogus", "--out", "{out}"], "config 'bogus': no such file; shipped configs are"),
    (
        ["train", "--config", "sghmc", "--out", "{out}", "--set", "sampler.momentum=1.0"],
        "config key sampler.momentum must be a number in [0, 1), got 1.0",
    ),
    (["train", "--config", "sghmc", "--out", "{out}", "--model", "resnet99"], "config key model.name must be one of"),
    (["train", "--config", "sghmc", "--out", "{out}", "--source", "npz"], "the npz source needs a directory"),
    (
        ["train", "--config", "sghmc", "--out", "{out}", "--source", "npz", "--data-dir", "{root}/nowhere"],
        "data_dir '{root}/nowhere' does not exist",
    ),
    (
        [
            "train",
            "--config",
            "sghmc",
            "--out",
            "{out}",
            "--source",
            "npz",
            "--data-dir",
            "{data}",
            "--dataset",
            "cifar100",
        ],
        "no cifar100 train data in '{data}'",
    ),
    (
        [
            "train",
            "--config",
            "sghmc",
            "--out",
            "{out}",
            "--source",
            "npz",
            "--data-dir",
            "{data}",
            "--batch-size",
            "500",
        ],
        "data.batch_size (500) must be <= the 190 training examples",
    ),  # 200 images, 5% held out
    (
        [
            "train",
            "--config",
            "sghmc",
            "--out",
            "{out}",
            "--source",
            "npz",
            "--data-dir",
            "{data}",
            "--subset",
            "100",
            "--batch-size",
            "50",
            "--epochs",
            "2",
            "--thinning",
            "100000",
        ],
        "samples.thinning (100000) collects no sample",
    ),
    (
        [
            "train",
            "--config",
            "vr-resghmc",
            "--out",
            "{out}",
            "--source",
            "npz",
            "--data-dir",
            "{data}",
            "--epochs",
            "3",
            "--batch-size",
            "50",
        ],
        "variance_reduction.period (392) must be <= the run's 9 steps",
    ),
    (
        ["train", "--config", "sghmc", "--out", "{corrupt_run}", "--source", "npz", "--data-dir", "{data}"],
        "holds samples but no run.json",
    ),
    (["evaluate", "--run", "/nonexistent"], "--run: run directory '/nonexistent' does not exist"),
    (["evaluate", "--run", "{run}"], "expected format 'tf_vrre.run/1'"),
    (["evaluate", "--run", "{image_run}", "--test-size", "0"], "--test-size: must be > 0"),
    (["evaluate", "--run", "{image_run}", "--ood", "mnist"], "--ood: invalid choice: 'mnist'"),
    (["evaluate", "--run", "{image_run}", "--data-dir", "{root}/nowhere"], "data_dir '{root}/nowhere' does not exist"),
    (["evaluate", "--run", "{image_run}", "--ood", "cifar100"], "no cifar100 test data in '{data}'"),
    # the sampler's numbers, computed before TensorFlow in float32 (lr / N, hot chain, F grown, the prior's step)
    (
        [
            "train",
            "--config",
            "vr-resghmc",
            "--out",
            "{out}",
            *["--source", "npz", "--subset", "64", "--batch-size", "32", "--data-dir"],
            "{data}",
            "--lr",
            "1.2e-38",
        ],
        "config key sampler.lr must be in [7.53e-37, 3.4e+38] for the 64 training examples",
    ),
    (
        ["train", "--config", "vr-resghmc", "--out", "{out}", "--lr", "3e38"],
        "config key sampler.lr must be in [1.18e-38, 5.06e+03) (the prior's own step",
    ),
    (
        ["train", "--config", "vr-resghmc", "--out", "{out}", "--set", "swap.correction=1.2e-38"],
        "config key swap.correction must be in [7.16e-33, 8.94e+35] (F grows x380 over the burn-in",
    ),
    (
        ["train", "--config", "vr-resghmc", "--out", "{out}", "--set", "swap.correction=3e38"],
        "config key swap.correction must be in [7.16e-33, 8.94e+35]",
    ),
    (
        ["train", "--config", "vr-resghmc", "--out", "{out}", "--set", "sampler.weight_decay=3e38"],
        "config key sampler.weight_decay must be in [0, 25.3) (the prior's own step",
    ),
    (
        ["train", "--config", "vr-resghmc", "--out", "{out}", "--set", "sampler.momentum=0.99999999"],
        "config key sampler.momentum must be a number in [0, 0.99999994] (below 1 in float32",
    ),
    (
        ["train", "--config", "vr-resghmc", "--out", "{out}", "--set", "sampler.temperature=3e38"],
        "config key sampler.temperature must be in [1.18e-38, 6.8e+37] (the hot chain's temperature",
    ),
    (["mixture", "--lr", "3e38"], "--lr: must be in [1.18e-38, 0.0499) (eta * (N / sigma^2 + 1 / prior_sd^2)"),
    # raw exceptions of the checks before TensorFlow: each one line naming the file and the key
    (["train", "--config", "{deep_toml}", "--out", "{out}"], "config {deep_toml}: nested too deeply to parse"),
    (
        ["train", "--config", "{internal_toml}", "--out", "{out}", "--set", "training.epochs=3"],
        "config: unknown key 'overridden'; allowed: method, description, data, model",
    ),
    (
        ["train", "--config", "sghmc", "--out", "{out}", "--source", "npz", "--data-dir", "{huge_labels}"],
        "{huge_labels}/cifar10/cifar10_train.npz: not a readable .npz image archive",
    ),
    (["evaluate", "--run", "{typed_run}"], "{typed_run}/run.json: key data must be an object, got a list"),
    (
        [
            "train",
            "--config",
            "sghmc",
            "--out",
            "{typed_run}",
            "--overwrite",
            "--subset",
            "64",
            "--epochs",
            "1",
            "--set",
            "samples.burn_in_epochs=0",
            "--batch-size",
            "32",
            "--source",
            "npz",
            "--data-dir",
            "{data}",
            "--strategy",
            "tpus",
        ],
        "--strategy: invalid choice",
    ),
    (
        ["train", "--config", "sghmc", "--out", "{typed_run}", "--source", "npz", "--data-dir", "{data}"],
        "--out: {typed_run}/run.json: key data must be an object, got a list",
    ),
    # accepted silently: a file's own top-level `source` key
    (["train", "--config", "{source_toml}", "--out", "{out}"], "config: unknown key 'source'; allowed: method"),
    # slow or late: closed-form sample count for 2**31 - 1 epochs of a cyclical schedule; a bounded crop padding
    (
        [
            "train",
            "--config",
            "cycsghmc",
            "--out",
            "{out}",
            *["--source", "npz", "--subset", "64", "--batch-size", "32", "--data-dir"],
            "{data}",
            "--epochs",
            "2147483647",
            "--thinning",
            "2",
            "--steps-per-execution",
            "4",
        ],
        "steps_per_execution (4) must divide samples.thinning (2)",
    ),
    (
        ["train", "--config", "sghmc", "--out", "{out}", "--set", "data.crop_padding=100000"],
        "config key data.crop_padding must be an integer in [0, 31]",
    ),
    (["bogus"], "invalid choice: 'bogus'"),
    ([], "the following arguments are required: command"),
]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """A fake run (run.json + a valid empty sample manifest) and a corrupt sample directory."""
    root = tmp_path_factory.mktemp("cli")
    run = root / "run"
    (run / "samples").mkdir(parents=True)
    (run / "run.json").write_text("{}")
    (run / "samples" / "manifest.json").write_text(json.dumps({"format": "tf_vrre.samples/1", "entries": []}))
    corrupt = root / "corrupt"
    corrupt.mkdir()
    (corrupt / "manifest.json").write_text('{"format": "tf_vrre.samples/1", "entries": [{"file": "../x"}]}')
    corrupt_run = root / "corrupt_run"
    (corrupt_run / "samples").mkdir(parents=True)
    (corrupt_run / "samples" / "sample-000000002.npz").write_bytes(b"not a zip")
    (corrupt_run / "samples" / "manifest.json").write_text(
        json.dumps(
            {
                "format": "tf_vrre.samples/1",
                "entries": [{"file": "sample-000000002.npz", "step": 2, "bytes": 3, "sha256": "0" * 64}],
            }
        )
    )
    data = (
        root / "data" / "cifar10"
    )  # the npz layout of tf_vrre.workflows.image_classification.data.sources, 200 synthetic images per split
    data.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        np.savez(
            data / f"cifar10_{split}.npz",
            x=rng.integers(0, 256, (200, 32, 32, 3), dtype=np.uint8),
            y=np.arange(200) % 10,
        )
    return {
        "run": str(run),
        "corrupt": str(corrupt),
        "corrupt_run": str(corrupt_run),
        "root": root,
        "data": str(root / "data"),
        "image_run": _image_run(root / "image_run", root / "data"),
        **_probe_inputs(root),
    }


def _probe_inputs(root):
    """Inputs that once raised inside the checks before TensorFlow (RecursionError, AttributeError,
    a memory error) or were accepted silently."""
    import io
    import zipfile

    files = {
        "deep_toml": 'method = "sghmc"\n[sampler]\nlr = ' + "[" * 50000 + "]" * 50000 + "\n",
        "internal_toml": 'method = "sghmc"\noverridden = 5\n',
        "source_toml": 'method = "sghmc"\nsource = "x"\n',
    }
    out = {}
    for name, text in files.items():
        (root / f"{name}.toml").write_text(text)
        out[name] = str(root / f"{name}.toml")
    labels = io.BytesIO()  # a y.npy whose header declares 10**12 labels
    np.save(labels, np.arange(10))
    raw = labels.getvalue()
    end = raw.index(b"\n") + 1
    header = raw[:end].replace(b"(10,)", b"(1000000000000,)")
    (root / "huge" / "cifar10").mkdir(parents=True)
    with zipfile.ZipFile(root / "huge" / "cifar10" / "cifar10_train.npz", "w") as z:
        z.writestr("y.npy", header[:-1].ljust(end - 1) + b"\n" + raw[end:])
        z.writestr("x.npy", b"")
    out["huge_labels"] = str(root / "huge")
    typed = root / "typed_run"  # the format tag right, a section of the wrong type
    typed.mkdir()
    (typed / "run.json").write_text(
        json.dumps(
            {
                "format": "tf_vrre.run/1",
                "method": "sghmc",
                "config": {},
                "model": {},
                "data": [],
                "preprocessing": {},
                "seed": 0,
            }
        )
    )
    out["typed_run"] = str(typed)
    return out


def _image_run(run, data_dir):
    """A run directory as ``tf-vrre train`` leaves it (run.json, one sample), for ``evaluate``'s checks."""
    import hashlib

    (run / "samples").mkdir(parents=True)
    (run / "run.json").write_text(
        json.dumps(
            {
                "format": "tf_vrre.run/1",
                "method": "sghmc",
                "config": {},
                "seed": 0,
                "model": {"name": "cnn", "kwargs": {}, "num_classes": 10, "input_shape": [32, 32, 3]},
                "data": {"dataset": "cifar10", "source": "npz", "data_dir": str(data_dir), "train_size": 190},
                "preprocessing": {"kind": "normalize", "scale": 1 / 255, "mean": [0.5] * 3, "std": [0.25] * 3},
            }
        )
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
    return str(run)


def _state(root):
    """Every entry below ``root`` with its bytes and mtime (a refused command changes none)."""
    out = {}
    for d, _, files in os.walk(root):
        out[d] = os.stat(d).st_mtime_ns
        out.update(
            {
                os.path.join(d, f): (os.stat(os.path.join(d, f)).st_mtime_ns, open(os.path.join(d, f), "rb").read())
                for f in files
            }
        )
    return out


@pytest.mark.parametrize("flags, message", BAD, ids=[" ".join(f)[:80] or "none" for f, _ in BAD])
def test_bad_flag_exits_2_with_exactly_one_line_and_writes_nothing(dirs, flags, message):
    out = dirs["root"] / f"out-{abs(hash(tuple(flags)))}"
    names = {
        k: dirs[k]
        for k in (
            "run",
            "corrupt",
            "corrupt_run",
            "root",
            "data",
            "image_run",
            "deep_toml",
            "internal_toml",
            "source_toml",
            "huge_labels",
            "typed_run",
        )
    }
    flags = [f.format(out=out, **names) for f in flags]
    message = message.format(**names)
    before = {p: _state(p) for p in (dirs["corrupt_run"], dirs["image_run"], dirs["typed_run"])}
    if flags and flags[0] == "mixture":
        flags += ["--out", str(out)]
    result = run_cli(*flags)
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf-vrre: error: ") and message in lines[0], result.stderr
    assert result.stdout == ""
    assert not out.exists()
    assert before == {p: _state(p) for p in before}  # train / evaluate changed nothing in a run


def test_out_that_cannot_be_written_and_earlier_results_are_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out, message in [
        (blocker / "sub", "is not a directory"),
        (blocker, "it is a file"),
        ("/proc/no/such/dir", "--out: '/proc/no/such/dir' is not writable"),
    ]:
        result = run_cli("mixture", "--out", str(out))
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and message in result.stderr, result
    study = tmp_path / "study"
    study.mkdir()
    (study / "summary.json").write_text('{"earlier": true}')
    result = run_cli("mixture", "--out", str(study))
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "already holds summary.json of an earlier run" in result.stderr and "--overwrite" in result.stderr
    assert json.loads((study / "summary.json").read_text()) == {"earlier": True}
    assert sorted(os.listdir(study)) == ["summary.json"]


def test_help_answers_without_tensorflow_lines():
    for sub in ("mixture", "train", "evaluate", "export", "diagnose"):
        result = run_cli(sub, "--help")
        flag = "--run" if sub == "evaluate" else "--out"
        assert result.returncode == 0 and result.stderr == "" and flag in result.stdout, result


def test_methods_list_matches_the_library():
    from tf_vrre.workflows.gaussian_mixture import target

    assert mixture.METHODS == target.ALL_METHODS
