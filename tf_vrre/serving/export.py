"""Serve the posterior: the Bayesian model average of collected samples as one SavedModel.

:func:`export_ensemble` turns a sample directory (or a run directory with ``run.json``) into
a TF Serving model version ``OUT/<version>/`` (``saved_model.pb``, ``variables/``,
``export.json``) that any TensorFlow program can load with ``tf.saved_model.load``, without
``tf_vrre``.  For members ``k = 1..K`` with logits ``z_k(x)`` and temperature ``T``:

    p_k = softmax(z_k(x) / T)          p = (1/K) sum_k p_k
    predictive_entropy  H[p] = -sum_c p_c log p_c
    expected_entropy    (1/K) sum_k H[p_k]           (aleatoric part)
    mutual_information  H[p] - (1/K) sum_k H[p_k]    (epistemic part, >= 0)

The members' weights are stacked into one variable per weight (``[K, ...]``, filled one
sample file at a time) and the graph runs the model once per member inside ``tf.map_fn``,
reading that member's slices through a ``keras.StatelessScope`` (inference mode, so every
member uses its own BatchNorm statistics).  The graph has the same size for any K; members run
one after the other, so serving memory does not grow with K either.  The archive is written by Keras'
``keras.export.ExportArchive``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

import tf_vrre.serving.checks as checks
from tf_vrre import _keras_compat
from tf_vrre._version import __version__
from tf_vrre.runs import atomic
from tf_vrre.runs.run_json import RUN_JSON
from tf_vrre.runs.samples import MANIFEST, MODEL_JSON, load_samples, read_manifest

EXPORT_JSON = "export.json"
EXPORT_FORMAT = "tf_vrre.export/1"
TMP_PREFIX = ".tmp-export-"
SUMMARY_OUTPUTS = ("probabilities", "predictive_entropy", "predicted_class")
MEMBER_OUTPUTS = SUMMARY_OUTPUTS + ("member_probabilities", "expected_entropy", "mutual_information")
IMAGE_OUTPUTS = ("input_in_unit_range",)
"""Outputs of the image signatures besides the above: ``input_in_unit_range`` ``[B]`` bool, true
where every pixel of an image is within [0, 1] -- an image scaled to 0..1 by mistake (the
signatures take raw pixels, 0..255); a true for a nearly black image is expected."""


def export_ensemble(
    source: str | os.PathLike,
    out: str | os.PathLike,
    model: keras.Model | Callable[[], keras.Model] | None = None,
    version: int | None = None,
    max_members: int | None = None,
    temperature: float = 1.0,
) -> dict[str, Any]:
    """Writes the samples' Bayesian model average as TF Serving version ``out/<version>``.

    ``source`` is a run directory (``RUN/run.json`` + ``RUN/samples``: the raw images' dtype
    and the training normalisation ``(x * scale - mean) / std`` go inside the graph) or a
    :class:`~tf_vrre.SampleCollector` directory (the model's own input signature).

    Signatures (TF Serving ``signature_name``): ``serving_default`` -> ``probabilities``
    ``[B, C]``, ``predictive_entropy`` ``[B]``, ``predicted_class`` ``[B]`` (int64);
    ``members`` -> the same plus ``member_probabilities`` ``[B, K, C]``, ``expected_entropy``
    and ``mutual_information`` ``[B]``.  Image runs take ``images`` as uint8 ``[None, H, W, C]``;
    ``serving_float32`` / ``members_float32`` take the same pixel values as float32.  Other
    models take ``inputs`` with the model's input shape and dtype.  Every signature checks its
    request in the graph (``tf.ensure_shape``, ``tf.debugging.check_numerics``): another rank, size
    or channel count, and NaN / Inf in a float input, are an ``InvalidArgument`` error (a TF
    Serving client gets status ``INVALID_ARGUMENT``; the server keeps running); another dtype is
    refused by the signature itself; an empty batch ``[0, ...]`` returns empty outputs.

    Members: all samples, or ``max_members = K`` spread evenly (sample ``floor((j + 1) n / K) - 1``
    of ``n``, the last one included).  The version is written to ``out/.tmp-export-*`` and renamed:
    a failure or a kill leaves no version behind; an existing version is never overwritten.

    Args:
      source: run directory (with ``run.json``) or sample directory (with ``manifest.json``).
      out: TF Serving model base path (created); versions are its integer subdirectories.
      model: the network the samples belong to, when ``model.json`` is missing or not
        loadable: a built ``keras.Model`` or a ``model_fn`` returning one (not modified).
      version: integer >= 1 that must not exist yet (default: highest existing + 1, or 1).
      max_members: integer K >= 1 (default: every sample).
      temperature: T > 0 dividing the members' logits (``1``: the posterior predictive).

    Returns:
      The ``export.json`` record (members, signatures, ``export_seconds``, ``bytes``) with ``"path"``.

    Raises:
      ValueError: bad arguments, no samples, missing/corrupt/mismatched sample files, an existing
        version or a model that cannot be rebuilt (before anything is written).

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0,
      ...                 callbacks=[tf_vrre.SampleCollector("runs/toy/samples", every=4)])
      >>> info = export_ensemble("runs/toy/samples", "serving/toy", max_members=2)
      >>> info["path"], info["members"]
      ('serving/toy/1', 2)
      >>> tf.saved_model.load(info["path"]).signatures["serving_default"](inputs=x[:3])["probabilities"].shape
      TensorShape([3, 2])
    """
    start = time.perf_counter()
    temperature = checks.check_temperature(temperature)
    if max_members is not None:
        max_members = checks.check_int(max_members, "max_members")
    run, samples_dir = _resolve_source(source)
    out = checks.check_out(out)
    version = checks.choose_version(out, version)
    samples = _load(samples_dir)
    output = _output_kind(samples_dir, temperature)
    template, spec, model_from = _template(samples_dir, model)
    image = _image_spec(run, spec) if run is not None else None
    picked = member_indices(len(samples), max_members)
    stacked = _stack_members(tf, template, samples, picked)
    archive = _archive(tf, (template, spec), stacked, image, temperature, output)

    record = _record(version, run, samples_dir, samples, picked) | _settings_record(
        max_members, temperature, output, model_from, spec, image
    )
    path = _write(archive, out, version, record, start)
    return dict(record, path=path)


def _settings_record(max_members, temperature, output, model_from, spec, image):
    """The ``export.json`` fields that describe the settings: members asked for, temperature, the
    model's output kind and where the model came from, the input, preprocessing and signatures."""
    return {
        "max_members": max_members,
        "temperature": temperature,
        "output": output,
        "model": model_from,
        "input": _input_record(spec, image),
        "preprocessing": image and image["preprocessing"],
        "signatures": _signature_record(image),
    }


def _output_kind(samples_dir, temperature):
    """What the sampled model outputs (the manifest's ``config.output``: ``"logits"`` unless it says
    ``"probabilities"``); a temperature other than 1 needs logits to divide."""
    output = read_manifest(samples_dir).get("config", {}).get("output", "logits")
    if output == "probabilities" and temperature != 1.0:
        raise ValueError(
            f"temperature must be 1 for samples of a model that outputs probabilities "
            f"(manifest config output='probabilities'), got {temperature}"
        )
    return output


def _record(version, run, samples_dir, samples, picked):
    """The ``export.json`` fields that describe the members (:func:`_settings_record` adds the settings)."""
    return {
        "format": EXPORT_FORMAT,
        "version": version,
        "run": run and run["dir"],
        "run_status": run and run["json"].get("status"),
        "samples": os.path.abspath(samples_dir),
        "samples_available": len(samples),
        "members": len(picked),
        "member_files": [samples.entries[i]["file"] for i in picked],
        "steps": [samples.entries[i]["step"] for i in picked],
        "sample_temperatures": [samples.entries[i].get("temperature") for i in picked],
        "versions": {"tf_vrre": _version(), "tensorflow": tf.__version__, "keras": keras.__version__},
    }


def member_indices(n, max_members=None):
    """Indices of the samples taken: all ``n``, or ``K = max_members`` spread evenly,
    ``floor((j + 1) n / K) - 1`` for ``j = 0..K-1`` (the last sample always included).

    Example:
      >>> member_indices(10, 3)
      [2, 5, 9]
    """
    if max_members is None or max_members >= n:
        return list(range(n))
    return [(j + 1) * n // max_members - 1 for j in range(max_members)]


# ---- argument checks (all before any work) -------------------------------------------------
def _resolve_source(source):
    """``(run or None, samples_dir)``; ``run = {"dir", "json"}`` with a checked ``run.json``."""
    if not isinstance(source, (str, os.PathLike)) or not os.path.isdir(source):
        raise ValueError(
            f"source must be a run directory (with {RUN_JSON}) or a sample directory (with {MANIFEST}), got {source!r}"
        )
    source = str(source)
    if os.path.exists(os.path.join(source, RUN_JSON)):
        return {"dir": os.path.abspath(source), "json": checks.read_run(source)}, os.path.join(source, "samples")
    if os.path.exists(os.path.join(source, MANIFEST)):
        return None, source
    raise ValueError(f"source {source!r} has neither {RUN_JSON} (a run directory) nor {MANIFEST} (a sample directory)")


def _remove_stale_tmp(out):
    """Removes temporary directories of exports whose process is gone (killed mid-write)."""
    for name in os.listdir(out):
        if not name.startswith(TMP_PREFIX):
            continue
        try:
            pid = int(name.rsplit("-", 1)[-1])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        except (ValueError, PermissionError):
            pass


def _load(samples_dir):
    try:
        samples = load_samples(samples_dir)
        samples.check_finite()
    except ValueError as err:
        raise ValueError(f"cannot export {samples_dir}: {err}") from None
    if not len(samples):
        raise ValueError(
            f"no samples in {samples_dir} (the manifest lists none: was burn-in longer than "
            "the run, or did collection never start?)"
        )
    return samples


# ---- the network the samples belong to ------------------------------------------------------
def _template(samples_dir, model):
    """``(model, spec, source)``: a built model with the samples' architecture (``model`` or
    ``samples_dir/model.json``) and its input spec ``keras.InputSpec`` (batch dimension free)."""
    if model is not None:
        if not isinstance(model, keras.Model) and callable(model):
            model = model()
        if not isinstance(model, keras.Model) or not model.built or not model.weights:
            raise ValueError(f"model must be a built keras.Model or a model_fn returning one, got {model!r}")
        model_from = "argument"
    else:
        path = os.path.join(samples_dir, MODEL_JSON)
        fix = "export from Python with tf_vrre.export_ensemble(source, out, model=<built keras.Model or model_fn>)"
        if not os.path.exists(path):
            raise ValueError(
                f"{path} is missing (the sampled model did not serialize to JSON when "
                f"the samples were collected): {fix}"
            )
        try:
            with open(path) as f:
                model = keras.models.model_from_json(f.read())
        except Exception as err:  # noqa: BLE001  (any failure: the architecture cannot be rebuilt)
            raise ValueError(f"cannot rebuild the model from {path} ({type(err).__name__}: {err}): {fix}") from None
        model_from = MODEL_JSON
    spec = _input_spec(model)
    out = model.compute_output_spec(keras.KerasTensor((2, *spec.shape[1:]), spec.dtype))
    if not isinstance(out, keras.KerasTensor) or len(out.shape) != 2:
        raise ValueError(
            f"export needs a model with one [batch, classes] output (logits or probabilities), got {out!r}"
        )
    return model, spec, model_from


def _input_spec(model):
    """The model's single input as ``keras.InputSpec`` (functional: ``model.inputs``; subclassed:
    the shapes Keras recorded on its first call, as ``model.export`` uses)."""
    try:
        specs = keras.tree.flatten(_keras_compat.input_signature(model))  # model.export's own logic
    except (TypeError, ValueError) as err:
        raise ValueError(f"cannot read the model's input signature: {err}") from None
    if len(specs) != 1:
        raise ValueError(f"export needs a model with one input tensor, got {len(specs)}: {specs}")
    return specs[0]


def _image_spec(run, spec):
    pre = run["json"]["preprocessing"]
    shape = [int(d) for d in run["json"]["model"]["input_shape"]]
    model_shape = list(spec.shape[1:])
    if model_shape != shape:
        raise ValueError(
            f"{os.path.join(run['dir'], RUN_JSON)}: model.input_shape {shape} does not match "
            f"the sampled model's input shape {model_shape}"
        )
    return {
        "shape": shape,
        "preprocessing": {
            "kind": "normalize",
            "scale": float(pre["scale"]),
            "mean": [float(v) for v in pre["mean"]],
            "std": [float(v) for v in pre["std"]],
        },
    }


def _stack_members(tf, template, samples, picked):
    """One ``[K, ...]`` variable per weight of ``template``, filled one sample file at a time."""
    weights = template.weights
    stacked = [
        tf.Variable(
            tf.zeros([len(picked), *w.shape], w.dtype), trainable=False, name="members/" + w.path.replace(":", "_")
        )
        for w in weights
    ]
    for k, i in enumerate(picked):
        path = os.path.join(samples.directory, samples.entries[i]["file"])
        try:
            arrays = samples.weights(i)  # checks size and SHA-256 again: ValueError naming the file
        except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as err:
            if isinstance(err, ValueError) and path in str(err):
                raise
            raise ValueError(f"sample file {path} is unreadable as .npz: {err}") from None
        if len(arrays) != len(weights):
            raise ValueError(
                f"sample file {path} does not match the model: {len(arrays)} arrays, the model "
                f"has {len(weights)} weights"
            )
        for j, (a, w) in enumerate(zip(arrays, weights)):
            if tuple(a.shape) != tuple(w.shape):
                raise ValueError(
                    f"sample file {path} does not match the model: array {j} has shape "
                    f"{tuple(a.shape)}, weight {w.path} has shape {tuple(w.shape)}"
                )
            stacked[j][k].assign(a.astype(w.dtype))
    return stacked


# ---- the serving graph ----------------------------------------------------------------------
def _member_fn(tf, template, stacked, temperature, output):
    """``x -> [B, K, C]`` member probabilities: member ``k``'s weights are read from the stacks
    under a ``keras.StatelessScope`` (the template's own variables are never read or changed).
    An empty batch (``B = 0``) gives ``[0, K, C]`` without running the model."""
    k_members = int(stacked[0].shape[0])
    spec = _input_spec(template)
    classes = int(template.compute_output_spec(keras.KerasTensor((1, *spec.shape[1:]), spec.dtype)).shape[-1])

    def one(k, x):
        mapping = [(w, tf.gather(s, k)) for w, s in zip(template.weights, stacked)]
        with keras.StatelessScope(state_mapping=mapping):
            z = template(x, training=False)
        z = tf.cast(z, tf.float32)
        if output != "logits":
            return z
        # (z - max z) / T: <= 0, so a small T gives -inf (probability 0), never inf - inf = NaN
        return tf.nn.softmax((z - tf.reduce_max(z, axis=-1, keepdims=True)) / temperature, axis=-1)

    def members(x):
        def run():
            p = tf.map_fn(
                lambda k: one(k, x), tf.range(k_members), fn_output_signature=tf.float32, parallel_iterations=1
            )
            return tf.transpose(p, [1, 0, 2])  # [B, K, C]: the batch first, as TF Serving needs

        return tf.cond(tf.shape(x)[0] > 0, run, lambda: tf.zeros([0, k_members, classes], tf.float32))

    return members


def _checked_input(tf, x, shape, name):
    """``x`` after the serving checks (``InvalidArgument`` errors, before the model runs): its
    shape must be ``shape`` (``None``: any size; the rank too), a float must be finite."""
    x = tf.ensure_shape(x, shape, name=f"check_{name}_shape")
    if x.dtype.is_floating:
        x = tf.debugging.check_numerics(x, f"{name}: NaN or Inf value in the request (finite values only)")
    return x


def _in_pixel_range(tf, pixels, top):
    """``pixels`` after an ``InvalidArgument`` check that every value is a raw pixel, in ``[0, top]``."""
    ok = tf.logical_and(tf.reduce_min(pixels) >= 0.0, tf.reduce_max(pixels) <= top)
    message = f"images: pixel values must be in [0, {top:g}] (the raw pixels of training, as uint8 holds them)"
    with tf.control_dependencies([tf.debugging.Assert(tf.logical_or(tf.size(pixels) == 0, ok), [message])]):
        return tf.identity(pixels)


def _summaries(tf, p_members, with_members):
    def entropy(p):
        return -tf.reduce_sum(tf.math.xlogy(p, p), axis=-1)

    p = tf.reduce_mean(p_members, axis=1)
    result = {
        "probabilities": p,
        "predictive_entropy": entropy(p),
        "predicted_class": tf.argmax(p, axis=-1, output_type=tf.int64),
    }
    if with_members:
        expected = tf.reduce_mean(entropy(p_members), axis=1)
        result.update(
            member_probabilities=p_members,
            expected_entropy=expected,
            mutual_information=tf.maximum(result["predictive_entropy"] - expected, 0.0),
        )
    return result


def _archive(tf, model, stacked, image, temperature, output):
    """``keras.export.ExportArchive`` with the summary and members endpoints (per input dtype)."""
    template, spec = model
    members = _member_fn(tf, template, stacked, temperature, output)
    archive = keras.export.ExportArchive()
    if image is None:

        def endpoint(with_members):
            def serve(inputs):
                x = _checked_input(tf, inputs, [None, *spec.shape[1:]], "inputs")
                return _summaries(tf, members(x), with_members)

            return serve

        sig = [tf.TensorSpec([None, *spec.shape[1:]], spec.dtype, name="inputs")]
        archive.add_endpoint("serving_default", endpoint(False), input_signature=sig)
        archive.add_endpoint("members", endpoint(True), input_signature=sig)
        return archive

    pre = image["preprocessing"]
    scale = tf.constant(pre["scale"], tf.float32)
    mean, std = (tf.constant(pre[k], tf.float32) for k in ("mean", "std"))

    top = 1.0 / pre["scale"]  # the largest raw pixel value (255 for 8-bit images)

    def endpoint(with_members):
        def serve(images):  # the training normalisation, in float32
            images = _checked_input(tf, images, [None, *image["shape"]], "images")
            pixels = tf.cast(images, tf.float32)
            if images.dtype.is_floating:  # negated, or values near float32's maximum: not pixels
                pixels = _in_pixel_range(tf, pixels, top)
            x = (pixels * scale - mean) / std
            out = _summaries(tf, members(tf.cast(x, spec.dtype)), with_members)
            out[IMAGE_OUTPUTS[0]] = tf.reduce_all(pixels <= 1.0, axis=list(range(1, 1 + len(image["shape"]))))
            return out

        return serve

    for dtype, suffix in ((tf.uint8, ""), (tf.float32, "_float32")):
        sig = [tf.TensorSpec([None, *image["shape"]], dtype, name="images")]
        archive.add_endpoint(
            "serving_default" if not suffix else "serving" + suffix, endpoint(False), input_signature=sig
        )
        archive.add_endpoint("members" + suffix, endpoint(True), input_signature=sig)
    return archive


# ---- writing --------------------------------------------------------------------------------
def _input_record(spec, image):
    if image is None:
        return {"name": "inputs", "shape": [None, *spec.shape[1:]], "dtypes": [str(spec.dtype)]}
    return {"name": "images", "shape": [None, *image["shape"]], "dtypes": ["uint8", "float32"]}


def _signature_record(image):
    names = {"serving_default": list(SUMMARY_OUTPUTS), "members": list(MEMBER_OUTPUTS)}
    if image is not None:
        names = {
            "serving_default": list(SUMMARY_OUTPUTS + IMAGE_OUTPUTS),
            "members": list(MEMBER_OUTPUTS + IMAGE_OUTPUTS),
        }
        names.update(serving_float32=names["serving_default"], members_float32=names["members"])
    return names


def _dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _write(archive, out, version, record, start):
    """Writes to ``out/.tmp-export-<version>-<random>-<pid>`` and renames it to ``out/<version>``."""
    os.makedirs(out, exist_ok=True)
    _remove_stale_tmp(out)
    final = os.path.join(out, str(version))
    # a fresh directory (mkdtemp: O_EXCL, no planted link can stand in for it); the pid ends the name
    tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{version}-", suffix=f"-{os.getpid()}", dir=out)
    try:
        archive.write_out(tmp, verbose=False)
        record["bytes"] = _dir_bytes(tmp)
        record["export_seconds"] = round(time.perf_counter() - start, 3)
        atomic.write_json(os.path.join(tmp, EXPORT_JSON), record, indent=1)
        if os.path.lexists(final):  # created meanwhile by someone else: never overwrite
            raise ValueError(f"version {version} appeared in {out} during the export; not overwritten")
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _version():
    return __version__
