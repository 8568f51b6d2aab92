"""The tensorflow-datasets source for real, offline: a tiny CIFAR-10 prepared by tfds' own CIFAR-10
builder in a temporary data directory (its download replaced by local files in the original binary
format) trains with `tf-vrre train --source tfds --no-download` and evaluates from another
directory; without prepared data and without a connection the command fails in seconds, naming
the offline options; the packages tfds imports when it prepares data are declared."""

import ast
import json
import os
import re
import sys
import time
from unittest import mock

import numpy as np
import pytest
import tomllib
from _paths import ROOT

from tf_vrre.workflows.image_classification.data import sources, tfds_source


def _cifar_binary(folder, x, y):
    """CIFAR-10's binary format: per image one label byte and 3072 bytes of R, G, B planes."""
    records = np.concatenate([y.astype(np.uint8)[:, None], x.transpose(0, 3, 1, 2).reshape(len(x), -1)], axis=1)
    records.tofile(folder)


def prepare_tiny_cifar10(data_dir, raw_dir, train=200, test=60):
    """Prepares CIFAR-10 with tfds' builder into ``data_dir`` from local files; returns the images."""
    import _synthetic_images
    import tensorflow_datasets as tfds

    bins = os.path.join(raw_dir, "cifar-10-batches-bin")
    os.makedirs(bins)
    parts = [_synthetic_images.images(train // 5, 10, seed=10 + k) for k in range(5)]
    for k, (x, y) in enumerate(parts):
        _cifar_binary(os.path.join(bins, f"data_batch_{k + 1}.bin"), x, y)
    x_test, y_test = _synthetic_images.images(test, 10, seed=20)
    _cifar_binary(os.path.join(bins, "test_batch.bin"), x_test, y_test)
    with open(os.path.join(bins, "batches.meta.txt"), "w") as f:
        f.write("\n".join(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]))
    builder = tfds.builder("cifar10", data_dir=data_dir)
    with mock.patch.object(tfds.download.DownloadManager, "download_and_extract", return_value=raw_dir):
        builder.download_and_prepare()
    assert builder.is_prepared()
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


@pytest.fixture(scope="module")
def tfds_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tfds")
    x, y = prepare_tiny_cifar10(str(root / "tensorflow_datasets"), str(root / "raw"))
    return root, x, y


def test_prepared_tfds_data_load_offline(tfds_dir):
    root, x, y = tfds_dir
    data_dir = str(root / "tensorflow_datasets")
    assert tfds_source.prepared("cifar10", data_dir) and not tfds_source.prepared("cifar100", data_dir)
    assert sources.check_available("cifar10", "train", "tfds", data_dir, download=False) == "tfds"
    xs, ys, used = sources.load_split("cifar10", "train", "tfds", data_dir, download=False)
    assert used == "tfds" and xs.shape == (200, 32, 32, 3) and xs.dtype == np.uint8 and ys.dtype == np.int64

    # tfds shuffles examples by key hash when it writes: the same set of (image, label) pairs
    def order(a, b):
        return sorted(zip(map(bytes, a), b.tolist()))

    assert order(xs, ys) == order(x, y)


def test_train_and_evaluate_with_tfds_from_another_directory(tfds_dir, tmp_path, monkeypatch, capsys):
    """`tf-vrre train --source tfds --no-download` with a relative --data-dir, then `tf-vrre evaluate`
    from another working directory: run.json holds the absolute data directory."""
    from tf_vrre import cli

    root, _, _ = tfds_dir
    monkeypatch.chdir(root)
    flags = [
        "train",
        "--config",
        "sghmc",
        "--model",
        "cnn",
        "--set",
        "model.kwargs.width=4",
        "--subset",
        "64",
        "--batch-size",
        "32",
        "--holdout",
        "32",
        "--epochs",
        "2",
        "--thinning",
        "2",
        "--set",
        "samples.burn_in_epochs=0",
        "--set",
        "samples.validation=16",
        "--source",
        "tfds",
        "--no-download",
        "--data-dir",
        "tensorflow_datasets",
        "--out",
        str(tmp_path / "run"),
        "--quiet",
    ]
    assert cli.main(flags) == 0
    run = json.load(open(tmp_path / "run" / "run.json"))
    assert run["data"]["source"] == "tfds" and run["status"] == "complete"
    assert run["data"]["data_dir"] == str(root / "tensorflow_datasets")
    assert len(run["data"]["pixels_digest"]) == 16
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert cli.main(["evaluate", "--run", str(tmp_path / "run"), "--ood", "none", "--fit-size", "16", "--quiet"]) == 0
    report = json.load(open(tmp_path / "run" / "report.json"))
    assert report["test"]["size"] == 60 and report["temperature"]["fit_size"] == 16
    assert 0 <= report["test"]["T=1"]["accuracy"] <= 1
    # --data-dir still overrides the run's directory (here: one without the data)
    with pytest.raises(SystemExit) as exc:
        cli.main(["evaluate", "--run", str(tmp_path / "run"), "--ood", "none", "--data-dir", str(elsewhere)])
    assert exc.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "tensorflow-datasets cifar10 is not prepared in" in line and "--source npz" in line


OFFLINE_URL = "https://tf-vrre-offline.invalid/cifar-10-binary.tar.gz"  # .invalid never resolves (RFC 2606)


def _one_line(result):
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf-vrre: error: "), result.stderr
    return lines[0]


def test_offline_download_fails_in_seconds_naming_the_offline_options(tmp_path, monkeypatch, capsys):
    """No prepared data and no connection: one line naming --no-download and --source npz, no
    retries (tfds alone retries for minutes with pages of urllib3 warnings)."""
    from tf_vrre import cli

    monkeypatch.setitem(tfds_source.DOWNLOAD_URLS, "cifar10", OFFLINE_URL)
    empty = tmp_path / "tfds"
    empty.mkdir()
    start = time.monotonic()
    with pytest.raises(SystemExit) as exc:
        cli.main(
            ["train", "--config", "sghmc", "--source", "tfds", "--data-dir", str(empty), "--out", str(tmp_path / "run")]
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Retrying" not in err
    line = err.strip().splitlines()[-1]
    assert "cannot be downloaded (no connection: tf-vrre-offline.invalid:443" in line
    assert "--no-download" in line and "--source npz" in line
    # the library path probes too, before tfds' own download starts
    with pytest.raises(tfds_source.OfflineError, match="no connection: tf-vrre-offline.invalid"):
        sources.load_split("cifar10", "train", "tfds", str(empty), download=True)
    assert time.monotonic() - start < 60  # generous: the probe itself gives up after PROBE_SECONDS
    assert not (tmp_path / "run").exists() and os.listdir(empty) in ([], ["cifar10"], ["downloads"])


def test_offline_for_real_through_the_console_script(tmp_path):
    """The real download host, in a subprocess: on a machine without internet the command answers
    in one line within seconds (skipped where the host is reachable: it would download)."""
    import subprocess

    if tfds_source.probe(tfds_source.DOWNLOAD_URLS["cifar10"], seconds=3) is None:
        pytest.skip("online: the download host answers")
    env = dict(os.environ, PYTHONPATH=ROOT, TFDS_DATA_DIR=str(tmp_path / "tfds"))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    base = [
        sys.executable,
        "-m",
        "tf_vrre.cli",
        "train",
        "--config",
        "vr-resghmc",
        "--model",
        "cnn",
        "--source",
        "tfds",
        "--out",
        str(tmp_path / "run"),
    ]
    result = subprocess.run(base, capture_output=True, text=True, env=env, timeout=120)
    line = _one_line(result)  # one line: TensorFlow never started
    assert "cannot be downloaded (no connection: www.cs.toronto.edu:443" in line
    assert "--no-download" in line and "--source npz" in line
    result = subprocess.run(base + ["--no-download"], capture_output=True, text=True, env=env, timeout=120)
    line = _one_line(result)
    assert "is not prepared in" in line and "downloads are off (--no-download" in line and "--source npz" in line
    assert not (tmp_path / "run").exists()


def test_download_hosts_are_the_builders():
    from urllib.parse import urlsplit

    import tensorflow_datasets as tfds
    from tensorflow_datasets.datasets.svhn_cropped import svhn_cropped_dataset_builder

    for name in ("cifar10", "cifar100"):
        builder = tfds.builder(name, data_dir=os.devnull)
        assert builder._cifar_info.url == tfds_source.DOWNLOAD_URLS[name]
    assert (
        urlsplit(svhn_cropped_dataset_builder.URL).netloc == urlsplit(tfds_source.DOWNLOAD_URLS["svhn_cropped"]).netloc
    )


def test_probe_uses_the_proxy_of_the_environment(monkeypatch):
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert tfds_source._endpoint("https://www.cs.toronto.edu/x") == ("proxy.example", 3128)
    monkeypatch.delenv("https_proxy")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    assert tfds_source._endpoint("https://www.cs.toronto.edu/x") == ("www.cs.toronto.edu", 443)


def _imported_modules(path):
    tree = ast.parse(open(path).read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_packages_tfds_imports_to_prepare_data_are_declared():
    """tensorflow-datasets imports ``importlib_resources`` in ``DatasetBuilder`` (download and
    prepare) but declares it only for Python < 3.9: a fresh install must get it from us."""
    from importlib import metadata

    import tensorflow_datasets
    from packaging.requirements import Requirement

    core = os.path.join(os.path.dirname(tensorflow_datasets.__file__), "core")
    modules = set()
    for name in (
        "dataset_builder.py",
        "load.py",
        "download/download_manager.py",
        "download/downloader.py",
        "download/extractor.py",
        "writer.py",
        "file_adapters.py",
    ):
        modules |= _imported_modules(os.path.join(core, name))
    optional = {"apache_beam", "riegeli", "tensorflow_datasets", "__future__", "mlcroissant"}  # lazy, not for CIFAR
    third_party = {m for m in modules - optional if m not in sys.stdlib_module_names}
    distributions = metadata.packages_distributions()

    def declared(reqs):
        out = set()
        for text in reqs:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                out.add(re.sub(r"[-_.]+", "-", req.name).lower())
        return out

    tfds_reqs = declared(metadata.requires("tensorflow-datasets") or [])
    ours = declared(tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["project"]["dependencies"])
    for module in sorted(third_party):
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in distributions.get(module, [module])}
        assert dists & (tfds_reqs | ours | {"tensorflow", "tf-nightly", "numpy", "absl-py", "protobuf"}), (
            f"tensorflow-datasets imports {module} (distribution {sorted(dists)}): declare it in pyproject.toml"
        )
    assert "importlib-resources" in ours


def test_a_proxy_that_accepts_tcp_but_never_answers_is_no_connection(monkeypatch):
    """A proxy listening on a local port that never answers (where tensorflow-datasets retries for
    minutes): the probe says so within its bound, in total; a proxy refusing with 502 is no
    connection either."""
    import http.server
    import socket
    import threading

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{silent.getsockname()[1]}")
    start = time.monotonic()
    reason = tfds_source.probe(tfds_source.DOWNLOAD_URLS["cifar10"], seconds=1.0)
    assert time.monotonic() - start < 10
    assert reason is not None and reason.startswith(f"127.0.0.1:{silent.getsockname()[1]}: ")
    silent.close()

    class BadGateway(http.server.BaseHTTPRequestHandler):
        def do_CONNECT(self):
            self.send_error(502)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), BadGateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{server.server_port}")
        reason = tfds_source.probe(tfds_source.DOWNLOAD_URLS["cifar10"], seconds=3.0)
    finally:
        server.shutdown()
    assert reason is not None and "127.0.0.1" in reason
