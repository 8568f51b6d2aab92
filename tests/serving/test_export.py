"""export_ensemble: the SavedModel served without tf_vrre equals the in-Python BMA
(``load_samples(...).predict``) within 1e-5; TF Serving request formats; member choice,
temperature, versions; bad input gives one clear error and leaves nothing behind."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from _paths import HELPERS
from _small_sampler import _subclassed_net, make_sampler, small_net
from _tiny_run import cifar_slice, make_tiny_run, normalize, tiny_cnn

import tf_vrre
from tf_vrre.callbacks.sample_collector import SampleSet
from tf_vrre.serving.export import export_ensemble, member_indices

TOL = 1e-5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny CIFAR run (6 samples), its first export (version 1) and 64 held-out images."""
    root = tmp_path_factory.mktemp("export")
    run_dir = str(root / "run")
    os.makedirs(run_dir)
    run = make_tiny_run(run_dir)
    out = str(root / "serving")
    info = export_ensemble(run_dir, out)
    x, _ = cifar_slice(5000, 5064)
    return {"run_dir": run_dir, "run": run, "out": out, "info": info, "x": x, "xn": normalize(x, run["preprocessing"])}


def _entropy(p):
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def _reference(samples_dir, xn, net, files=None, temperature=1.0):
    """In-Python BMA per member (float64) with ``SampleSet.predict``; logits / T via the net."""
    samples = tf_vrre.load_samples(samples_dir)
    entries = [e for e in samples.entries if files is None or e["file"] in files]
    if temperature == 1.0:
        members = np.stack([SampleSet(samples_dir, [e]).predict(net, xn) for e in entries], axis=1)
    else:
        members = []
        for e in entries:
            net.set_weights(SampleSet(samples_dir, [e]).weights(0))
            z = net.predict(xn, verbose=0).astype(np.float64) / temperature
            z = np.exp(z - z.max(-1, keepdims=True))
            members.append(z / z.sum(-1, keepdims=True))
        members = np.stack(members, axis=1)
    p = members.mean(1)
    expected = _entropy(members).mean(1)
    return {
        "probabilities": p,
        "predictive_entropy": _entropy(p),
        "member_probabilities": members,
        "expected_entropy": expected,
        "mutual_information": np.maximum(_entropy(p) - expected, 0.0),
    }


def _check(outputs, ref, prefix=""):
    """Every float output within 1e-5 of the reference; the class is an argmax of it."""
    for key, want in ref.items():
        if prefix + key in outputs:
            np.testing.assert_allclose(outputs[prefix + key], want, atol=TOL, rtol=0, err_msg=key)
    cls = outputs[prefix + "predicted_class"]
    p = ref["probabilities"]
    assert cls.dtype == np.int64
    assert np.all(p[np.arange(len(p)), cls] >= p.max(-1) - TOL)  # ties within round-off may differ


def test_fresh_process_without_tf_vrre_matches_bma(tiny, tmp_path):
    """Acceptance: the SavedModel loaded by a TensorFlow-only process matches the BMA."""
    info = tiny["info"]
    assert info["version"] == 1 and info["members"] == info["samples_available"] == 6
    assert sorted(os.listdir(tiny["out"])) == ["1"]
    np.savez(tmp_path / "in.npz", images=tiny["x"])
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(HELPERS, "_serve_check.py"),
            info["path"],
            str(tmp_path / "in.npz"),
            str(tmp_path / "out.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(tmp_path / "out.npz") as z:
        outputs = {k: z[k] for k in z.files}
    assert "tf_vrre" not in set(outputs["modules"]) and "tensorflow" in set(outputs["modules"])
    ref = _reference(os.path.join(tiny["run_dir"], "samples"), tiny["xn"], tiny_cnn())
    first = {k: v[:1] for k, v in ref.items()}
    for sig in ("serving_default", "members", "serving_float32", "members_float32"):
        _check(outputs, ref, sig + "/")
        _check({k[:-3]: v for k, v in outputs.items() if k.endswith("/b1")}, first, sig + "/")
    assert outputs["members/member_probabilities"].shape == (64, 6, 10)
    assert set(k.split("/")[1] for k in outputs if k.startswith("serving_default/")) == {
        "probabilities",
        "predictive_entropy",
        "predicted_class",
        "input_in_unit_range",
    }
    assert outputs["members/mutual_information"].max() > 1e-4  # the members do differ


def test_saved_model_cli_lists_both_signatures(tiny):
    cli = shutil.which("saved_model_cli", path=os.path.dirname(sys.executable)) or shutil.which("saved_model_cli")
    assert cli, "saved_model_cli (installed with tensorflow) not found"
    proc = subprocess.run(
        [cli, "show", "--all", "--dir", tiny["info"]["path"]], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    for sig in ("serving_default", "members", "serving_float32", "members_float32"):
        assert f"signature_def['{sig}']" in text
    for out in (
        "probabilities",
        "predictive_entropy",
        "predicted_class",
        "member_probabilities",
        "expected_entropy",
        "mutual_information",
    ):
        assert f"outputs['{out}']" in text
    assert "inputs['images']" in text and "DT_UINT8" in text and "shape: (-1, 32, 32, 3)" in text


# ---- TF Serving request formats, decoded the way the model server does -----------------------
def _serve_grpc(loaded, wire):
    """Server side of Predict: parse the request, ``tf.make_ndarray`` each input tensor (its dtype
    must be the signature's), run the signature, encode the outputs as TensorProtos."""
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest.FromString(wire)
    fn = loaded.signatures[request.model_spec.signature_name or "serving_default"]
    specs = fn.structured_input_signature[1]
    feed = {}
    for key, proto in request.inputs.items():
        assert proto.dtype == specs[key].dtype.as_datatype_enum, "the server rejects a dtype mismatch"
        feed[key] = tf.constant(tf.make_ndarray(proto))
    response = predict_pb2.PredictResponse()
    response.model_spec.CopyFrom(request.model_spec)
    for key, value in fn(**feed).items():
        response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
    return response.SerializeToString()


def _serve_rest(loaded, body):
    """Server side of REST ``:predict``: row (``instances``) or columnar (``inputs``) JSON, values
    converted to the signature's dtype; answers ``predictions`` / ``outputs`` likewise."""
    req = json.loads(body)
    fn = loaded.signatures[req.get("signature_name", "serving_default")]
    specs = fn.structured_input_signature[1]
    ((name, spec),) = specs.items()  # these signatures have one input
    if "instances" in req:
        rows = req["instances"]
        values = [r[name] for r in rows] if isinstance(rows[0], dict) else rows
    else:
        values = req["inputs"][name] if isinstance(req["inputs"], dict) else req["inputs"]
    array = np.asarray(values)
    if spec.dtype == tf.uint8:
        assert np.all((array >= 0) & (array <= 255) & (array == np.round(array)))
    out = {k: v.numpy().tolist() for k, v in fn(**{name: tf.constant(array, spec.dtype)}).items()}
    if "instances" in req:
        return json.dumps({"predictions": [{k: v[i] for k, v in out.items()} for i in range(len(values))]})
    return json.dumps({"outputs": out})


def test_tf_serving_request_formats(tiny):
    from tensorflow_serving.apis import predict_pb2

    loaded = tf.saved_model.load(tiny["info"]["path"])
    x = tiny["x"][:8]
    ref = _reference(os.path.join(tiny["run_dir"], "samples"), tiny["xn"][:8], tiny_cnn())

    # gRPC: a PredictRequest as a client builds it, through the wire format.
    for sig in ("members", "serving_default"):
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "cifar10"
        request.model_spec.signature_name = sig
        request.inputs["images"].CopyFrom(tf.make_tensor_proto(x))
        response = predict_pb2.PredictResponse.FromString(_serve_grpc(loaded, request.SerializeToString()))
        _check({k: tf.make_ndarray(v) for k, v in response.outputs.items()}, ref)
    request.inputs["images"].CopyFrom(tf.make_tensor_proto(x.astype(np.float32)))
    with pytest.raises(AssertionError, match="dtype mismatch"):  # float32 needs serving_float32
        _serve_grpc(loaded, request.SerializeToString())
    request.model_spec.signature_name = "serving_float32"
    response = predict_pb2.PredictResponse.FromString(_serve_grpc(loaded, request.SerializeToString()))
    _check({k: tf.make_ndarray(v) for k, v in response.outputs.items()}, ref)

    # REST: row format (bare and named instances) and columnar format.
    bodies = [
        {"instances": x.tolist()},
        {"signature_name": "members", "instances": [{"images": img.tolist()} for img in x]},
        {"signature_name": "serving_float32", "inputs": {"images": x.astype(float).tolist()}},
        {"signature_name": "members", "inputs": x.tolist()},
    ]
    for body in bodies:
        answer = json.loads(_serve_rest(loaded, json.dumps(body)))
        if "predictions" in answer:
            rows = answer["predictions"]
            decoded = {k: np.asarray([r[k] for r in rows]) for k in rows[0]}
        else:
            decoded = {k: np.asarray(v) for k, v in answer["outputs"].items()}
        _check(decoded, ref)


# ---- member choice, temperature, versions --------------------------------------------------
def test_member_indices_spread_evenly():
    assert member_indices(6) == list(range(6)) and member_indices(6, 10) == list(range(6))
    assert member_indices(6, 4) == [0, 2, 3, 5] and member_indices(10, 3) == [2, 5, 9]
    assert member_indices(7, 1) == [6]
    for n in range(1, 40):
        for k in range(1, n + 1):
            idx = member_indices(n, k)
            assert len(set(idx)) == k and idx[-1] == n - 1 and sorted(idx) == idx
            assert max(np.diff([-1] + idx)) - min(np.diff([-1] + idx)) <= 1  # strides differ by <= 1


def test_max_members_temperature_and_next_version(tiny):
    info = export_ensemble(tiny["run_dir"], tiny["out"], max_members=4, temperature=2.0)
    assert info["version"] == 2 and info["path"] == os.path.join(tiny["out"], "2")
    record = json.load(open(os.path.join(info["path"], "export.json")))
    samples = tf_vrre.load_samples(os.path.join(tiny["run_dir"], "samples"))
    chosen = [samples.entries[i] for i in (0, 2, 3, 5)]
    assert record["steps"] == [e["step"] for e in chosen] and record["members"] == 4
    assert record["member_files"] == [e["file"] for e in chosen]
    assert record["temperature"] == 2.0 and record["run"] == os.path.abspath(tiny["run_dir"])
    assert record["preprocessing"] == tiny["run"]["preprocessing"] and record["bytes"] > 0
    loaded = tf.saved_model.load(info["path"])
    got = {k: v.numpy() for k, v in loaded.signatures["members"](images=tf.constant(tiny["x"])).items()}
    ref = _reference(
        os.path.join(tiny["run_dir"], "samples"), tiny["xn"], tiny_cnn(), files=record["member_files"], temperature=2.0
    )
    _check(got, ref)
    assert sorted(os.listdir(tiny["out"])) == ["1", "2"]


def test_dense_model_samples_dir_and_explicit_model(tmp_path):
    """The README's kind of run: plain SampleCollector directory, the model's own signature;
    a subclassed model (no model.json) needs model=."""
    s, x, _ = make_sampler(vr=True)
    s.fit(
        s.make_dataset(16), epochs=2, verbose=0, callbacks=[tf_vrre.SampleCollector(str(tmp_path / "dense"), every=2)]
    )
    info = export_ensemble(str(tmp_path / "dense"), str(tmp_path / "out"))
    assert info["input"] == {"name": "inputs", "shape": [None, 4], "dtypes": ["float32"]}
    loaded = tf.saved_model.load(info["path"])
    assert set(loaded.signatures) == {"serving_default", "members"}
    got = {k: v.numpy() for k, v in loaded.signatures["members"](inputs=tf.constant(x)).items()}
    ref = _reference(str(tmp_path / "dense"), x, small_net())
    np.testing.assert_allclose(
        ref["probabilities"], tf_vrre.load_samples(str(tmp_path / "dense")).predict(small_net(), x), atol=1e-12
    )
    _check(got, ref)

    sub = tf_vrre.ReplicaExchangeSampler(
        _subclassed_net,
        data_size=64,
        num_chains=2,
        temperatures=[1.0, 4.0],
        learning_rates=2e-3,
        seed=0,
        swap=tf_vrre.CorrectedSwap(correction=2.0),
    )
    sub.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None))
    with pytest.warns(UserWarning, match="model.json not written"):
        sub.fit(
            x,
            (x[:, 0] > 0).astype("int32"),
            batch_size=16,
            epochs=1,
            verbose=0,
            shuffle=False,
            callbacks=[tf_vrre.SampleCollector(str(tmp_path / "sub"), every=2)],
        )
    with pytest.raises(ValueError, match=r"model\.json is missing .*model=<built keras.Model or model_fn>"):
        export_ensemble(str(tmp_path / "sub"), str(tmp_path / "out"))
    info = export_ensemble(str(tmp_path / "sub"), str(tmp_path / "out"), model=_subclassed_net)
    got = tf.saved_model.load(info["path"]).signatures["serving_default"](inputs=tf.constant(x))
    want = tf_vrre.load_samples(str(tmp_path / "sub")).predict(_subclassed_net(), x)
    np.testing.assert_allclose(got["probabilities"].numpy(), want, atol=TOL, rtol=0)
    assert sorted(os.listdir(tmp_path / "out")) == ["1", "2"]


# ---- bad input: one clear error, nothing left behind ---------------------------------------
def _copy_run(tiny, path):
    shutil.copytree(tiny["run_dir"], path)
    return str(path)


def test_bad_input_errors_leave_nothing_behind(tiny, tmp_path):
    out = str(tmp_path / "serving")
    export_ensemble(tiny["run_dir"], out, max_members=1)
    before = sorted(os.listdir(out))

    def fails(match, source=tiny["run_dir"], **kw):
        with pytest.raises(ValueError, match=match):
            export_ensemble(source, out, **kw)
        assert sorted(os.listdir(out)) == before  # no new version, no temporary directory

    fails("version 1 already exists", version=1)
    fails("max_members must be an integer >= 1", max_members=0)
    fails("version must be an integer >= 1", version=0)
    for t in (0.0, -1.0, float("nan"), float("inf")):
        fails("temperature must be a finite number > 0", temperature=t)
    fails("neither run.json", source=str(tmp_path))

    empty = _copy_run(tiny, tmp_path / "empty")
    manifest = json.load(open(os.path.join(empty, "samples", "manifest.json")))
    json.dump(dict(manifest, entries=[]), open(os.path.join(empty, "samples", "manifest.json"), "w"))
    fails("no samples in", source=empty)
    with pytest.raises(ValueError, match="no samples in"):
        export_ensemble(empty, str(tmp_path / "new_base"))
    assert not os.path.exists(tmp_path / "new_base")  # not even the base directory

    garbage = _copy_run(tiny, tmp_path / "garbage")  # right checksum, not an npz
    path = os.path.join(garbage, "samples", "manifest.json")
    manifest = json.load(open(path))
    entry = manifest["entries"][1]
    with open(os.path.join(garbage, "samples", entry["file"]), "wb") as f:
        f.write(b"not a zip file")
    entry["bytes"], entry["sha256"] = 14, hashlib.sha256(b"not a zip file").hexdigest()
    json.dump(manifest, open(path, "w"))
    fails(f"sample file .*{entry['file']} is not a readable .npz file", source=garbage)  # run_files' check

    broken = _copy_run(tiny, tmp_path / "broken")
    name = sorted(f for f in os.listdir(os.path.join(broken, "samples")) if f.startswith("sample-"))[2]
    with open(os.path.join(broken, "samples", name), "r+b") as f:
        f.truncate(100)
    fails(f"{name} is truncated or corrupt", source=broken)

    other = _copy_run(tiny, tmp_path / "other")  # samples of tiny_cnn, model with 5 classes
    with open(os.path.join(other, "samples", "model.json"), "w") as f:
        f.write(tiny_cnn(num_classes=5).to_json())
    fails(
        r"sample-000000006.npz does not match the model: array 10 has shape \(16, 10\), weight logits/kernel has shape \(16, 5\)",
        source=other,
    )

    bad_run = _copy_run(tiny, tmp_path / "bad_run")
    run = json.load(open(os.path.join(bad_run, "run.json")))
    run["preprocessing"]["std"] = [0.2, 0.2]
    json.dump(run, open(os.path.join(bad_run, "run.json"), "w"))
    fails("C means and C stds > 0", source=bad_run)
    run["preprocessing"]["std"], run["model"]["input_shape"] = [0.2] * 3, [28, 28, 3]
    json.dump(run, open(os.path.join(bad_run, "run.json"), "w"))
    fails(r"input_shape \[28, 28, 3\] does not match the sampled model's input shape \[32, 32, 3\]", source=bad_run)


def test_failed_or_killed_write_leaves_no_version(tiny, tmp_path, monkeypatch):
    out = str(tmp_path / "serving")
    os.makedirs(out)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = os.path.join(out, f".tmp-export-1-{dead.pid}")  # what a killed export leaves
    os.makedirs(os.path.join(stale, "variables"))
    busy = f".tmp-export-7-{os.getppid()}"  # a concurrent export still running: left alone
    os.makedirs(os.path.join(out, busy))

    def boom(path):
        raise OSError("disk full")

    monkeypatch.setattr("tf_vrre.serving.export._dir_bytes", boom)
    with pytest.raises(OSError, match="disk full"):
        export_ensemble(tiny["run_dir"], out, max_members=1)
    assert os.listdir(out) == [busy]  # the stale directory was removed, the failed one too


# ---- bad requests: an InvalidArgument error, never a crash or a confident answer -----------
def _bad_requests(model_dir, tmp_path):
    """``{signature/case: result}`` of ``_serve_bad.py`` run in a fresh process (a request that
    aborts the process fails here instead of killing the test runner)."""
    out = tmp_path / "bad.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(HELPERS, "_serve_bad.py"), model_dir, str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"the serving process died (status {proc.returncode}): {proc.stderr[-2000:]}"
    return json.load(open(out))


def _assert_rejects_bad_requests(results, signatures, name, shape):
    for sig in signatures:
        assert results[f"{sig}/ok"].startswith("ok [2, "), results[f"{sig}/ok"]
        assert results[f"{sig}/empty"].startswith("ok [0,"), results[f"{sig}/empty"]  # empty in, empty out
        for case in ("rank", "size", "channels"):
            got = results[f"{sig}/{case}"]
            assert got.startswith("InvalidArgumentError: "), (sig, case, got)
            assert f"Shape of tensor {name} [" in got and f"expected shape {shape}" in got, (sig, case, got)
        assert results[f"{sig}/dtype"].startswith("InvalidArgumentError: "), results[f"{sig}/dtype"]
        assert "was expected to be a" in results[f"{sig}/dtype"]
        if f"{sig}/nan" in results:
            for case in ("nan", "inf"):
                got = results[f"{sig}/{case}"]
                assert got.startswith("InvalidArgumentError: ") and f"{name}: NaN or Inf value" in got, got


def test_image_signatures_reject_bad_requests(tiny, tmp_path):
    """Every signature: no batch axis, 28 rows, 1 channel -> InvalidArgument naming the shapes
    (a missing batch axis used to abort the process); another dtype -> InvalidArgument; an empty
    batch -> empty outputs; NaN / Inf pixels (float32 signatures) -> InvalidArgument."""
    results = _bad_requests(tiny["info"]["path"], tmp_path)
    sigs = ("serving_default", "members", "serving_float32", "members_float32")
    assert {k.split("/")[0] for k in results} == set(sigs)
    assert {k for k in results if k.endswith("/nan")} == {"serving_float32/nan", "members_float32/nan"}
    _assert_rejects_bad_requests(results, sigs, "images", "[?,32,32,3]")


def test_model_signatures_reject_bad_requests(tmp_path):
    """The model's own signature (``inputs`` [None, 4] float32): the same rules."""
    s, x, _ = make_sampler(vr=True)
    s.fit(
        s.make_dataset(16), epochs=1, verbose=0, callbacks=[tf_vrre.SampleCollector(str(tmp_path / "dense"), every=2)]
    )
    info = export_ensemble(str(tmp_path / "dense"), str(tmp_path / "out"), max_members=2)
    results = _bad_requests(info["path"], tmp_path)
    assert {k.split("/")[0] for k in results} == {"serving_default", "members"}
    _assert_rejects_bad_requests(results, ("serving_default", "members"), "inputs", "[?,4]")


def test_temperature_checked_in_float32_and_a_small_one_serves_no_nan(tiny, tmp_path):
    """``1e-46`` (0 in float32) and ``1e39`` (inf) are refused; ``T = 1e-30`` (logits / T overflow
    float32) serves the members' argmax one-hot averages, not NaN."""
    for t in (1e-46, 1e39):
        with pytest.raises(
            ValueError,
            match=r"temperature must be in \[1.18e-38, 3.4e\+38\] \(positive and finite "
            r"in float32",
        ):
            export_ensemble(tiny["run_dir"], str(tmp_path / "never"), temperature=t)
    assert not os.path.exists(tmp_path / "never")
    info = export_ensemble(tiny["run_dir"], str(tmp_path / "out"), max_members=2, temperature=1e-30)
    got = tf.saved_model.load(info["path"]).signatures["members"](images=tf.constant(tiny["x"][:16]))
    members = got["member_probabilities"].numpy()
    assert np.all(np.isfinite(members)) and np.all(np.isfinite(got["probabilities"].numpy()))
    assert np.allclose(members.max(-1), 1.0) and np.allclose(members.sum(-1), 1.0)  # one-hot per member


def test_image_signatures_refuse_values_outside_the_pixel_range_and_flag_unit_scaled_images(tiny):
    """Raw pixels are 0..255: negated images and values near float32's maximum are refused
    (InvalidArgument naming the range, were served as confident answers); images scaled to 0..1 are
    served with ``input_in_unit_range`` true (false for the raw images), recorded in export.json."""
    loaded = tf.saved_model.load(tiny["info"]["path"])
    x = tiny["x"][:8]
    for sig in ("serving_default", "members"):
        assert not loaded.signatures[sig](images=tf.constant(x))["input_in_unit_range"].numpy().any()
    for sig in ("serving_float32", "members_float32"):
        fn = loaded.signatures[sig]
        assert not fn(images=tf.constant(x.astype(np.float32)))["input_in_unit_range"].numpy().any()
        assert fn(images=tf.constant(x.astype(np.float32) / 255.0))["input_in_unit_range"].numpy().all()
        for bad in (-x.astype(np.float32), np.full(x.shape, 3e38, np.float32)):
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"pixel values must be in \[0, 255\]"):
                fn(images=tf.constant(bad))
    record = json.load(open(os.path.join(tiny["info"]["path"], "export.json")))
    assert all("input_in_unit_range" in outputs for outputs in record["signatures"].values())
