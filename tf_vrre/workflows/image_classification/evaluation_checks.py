"""What ``tf-vrre evaluate`` checks before TensorFlow starts (no TensorFlow here): the run and its
samples (:func:`check_run`) and the data splits the evaluation reads (:func:`check_data`)."""

from __future__ import annotations

import os
from typing import Any

from tf_vrre.runs import run_json
from tf_vrre.runs.samples import MANIFEST, load_samples, repair_hint
from tf_vrre.workflows.image_classification.data import sources

OOD_CHOICES = ("auto", "cifar10", "cifar100", "svhn", "none")
DEFAULT_OOD = {"cifar10": "cifar100", "cifar100": "cifar10", "svhn_cropped": "cifar10"}

__all__ = ["OOD_CHOICES", "DEFAULT_OOD", "check_run", "data_sources", "check_data"]


def check_run(run_dir: str | os.PathLike) -> tuple[dict, Any]:
    """``(run, samples)`` of a run directory with at least one sample, every sample's weights
    finite (:meth:`tf_vrre.runs.samples.SampleSet.check_finite`), or a ``RunDirError`` naming the
    missing / broken file or key (no TensorFlow: ``tf-vrre evaluate`` checks before it starts)."""
    run = run_json.read_run(run_dir)
    path = os.path.join(os.fspath(run_dir), run_json.RUN_JSON)
    for key, kind in (
        ("data.dataset", str),
        ("data.train_size", int),
        ("model.name", str),
        ("model.kwargs", dict),
        ("model.num_classes", int),
        ("model.input_shape", list),
    ):
        run_json.field(run, key, kind, path)
    if run["data"]["dataset"] not in sources.DATASETS:
        raise run_json.RunDirError(
            f"{path}: key data.dataset must be one of {', '.join(sources.DATASETS)}, got {run['data']['dataset']!r}"[
                :400
            ]
        )
    directory = os.path.join(os.fspath(run_dir), run_json.SAMPLES)
    manifest = os.path.join(directory, MANIFEST)
    if not os.path.isfile(manifest):
        raise run_json.RunDirError(
            f"{manifest} does not exist: the run has collected no sample yet "
            f"(status {run.get('status')!r}; samples start after the burn-in)"
        )
    try:
        samples = load_samples(directory)
        samples.check_finite()  # a NaN weight would make every average NaN, found only after the predictions
    except ValueError as err:
        raise run_json.RunDirError(f"{err}; {repair_hint(run_dir)}") from None
    if not len(samples):
        raise run_json.RunDirError(
            f"{manifest} lists no sample: the run has collected none yet "
            f"(status {run.get('status')!r}; samples start after the burn-in)"
        )
    return run, samples


def data_sources(
    run: dict, ood: str = "auto", data_dir: str | None = None, source: str | None = None
) -> tuple[str | None, str, str | None]:
    """``(data_dir, source, ood_name)`` an evaluation of ``run`` reads: the arguments, else the run's.

    ``ood_name`` is ``None`` for ``ood="none"``; ``"auto"`` is :data:`DEFAULT_OOD` of the run's
    data set.  Raises ``ValueError`` for an unknown ``ood``.
    """
    if ood not in OOD_CHOICES:
        raise ValueError(f"ood must be one of {', '.join(OOD_CHOICES)}; got {ood!r}")
    data = run["data"]
    data_dir = data_dir if data_dir is not None else data.get("data_dir")
    source = source or data.get("source", "auto")
    ood_name = (
        DEFAULT_OOD[data["dataset"]] if ood == "auto" else (None if ood == "none" else sources.check_dataset(ood))
    )
    if ood_name is not None and ood_name == data["dataset"]:
        others = [o for o in OOD_CHOICES if o not in ("auto", "none") and sources.check_dataset(o) != ood_name]
        raise ValueError(
            f"ood {ood!r} is the run's training data set {data['dataset']}, not out of distribution; "
            f"choose one of {', '.join(others + ['none'])}"
        )
    return data_dir, source, ood_name


def check_data(
    run: dict, ood: str = "auto", data_dir: str | None = None, source: str | None = None, fit_size: int = 2000
) -> None:
    """Checks, without reading images or TensorFlow, that the splits an evaluation reads exist.

    Rule: the run's test split, the OOD test split and (``fit_size > 0``) the run's training
    split (its held-out part fits the temperature) pass
    :func:`tf_vrre.workflows.image_classification.data.sources.check_available`.

    Raises:
      ValueError / FileNotFoundError naming the data set, split and expected files.
    """
    data_dir, source, ood_name = data_sources(run, ood, data_dir, source)
    needed = [(run["data"]["dataset"], "test")] + ([(ood_name, "test")] if ood_name else [])
    needed += [(run["data"]["dataset"], "train")] if fit_size else []
    for name, split in needed:
        sources.check_available(name, split, source, data_dir, download=False)
