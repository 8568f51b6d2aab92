"""Image data for the deep-learning workflow: sources, augmentation, pipelines.

- :mod:`.sources` - ``load_split(name, split, source, data_dir)`` from
  tensorflow-datasets or local ``.npz`` files (``cifar10``, ``cifar100``, ``svhn_cropped``).
- :mod:`.tfds_source` - the tensorflow-datasets side: prepared-data check and a
  bounded probe of the download host (offline: one line at once instead of minutes of retries).
- :mod:`.augment` - the paper's crop / flip / random erasing as stateless ops
  keyed by ``(seed, data epoch, example index)``.
- :mod:`.pipeline` - :class:`Preprocessing` (normalisation with training-set
  statistics), :func:`split_indices`, :class:`TrainingData` (the sampler's batches, exact on
  resume) and :func:`eval_dataset`.
"""

import importlib

from tf_vrre.workflows.image_classification.data.sources import (
    ALIASES,
    DATASETS,
    SOURCES,
    check_available,
    check_dataset,
    image_shape,
    load_split,
    npz_files,
    num_classes,
    resolve_source,
)

# Names from the TensorFlow modules, imported on first use: this package and its ``sources`` (and so
# ``tf-vrre train`` / ``evaluate`` checking their flags) stay free of TensorFlow.
_LAZY = {
    "augment": ("Augmentation", "augment", "example_key", "random_erasing"),
    "pipeline": (
        "ENERGY_INPUTS_KEY",
        "INDEX_KEY",
        "Preprocessing",
        "TrainingData",
        "eval_dataset",
        "indices_digest",
        "load_training_data",
        "split_indices",
        "pixels_digest",
    ),
}


def __getattr__(name):
    if name in _LAZY["augment"] + _LAZY["pipeline"] or name == "pipeline":
        for module, names in _LAZY.items():
            mod = importlib.import_module(f"{__name__}.{module}")
            globals().update({n: getattr(mod, n) for n in names})  # ``augment`` is the function, as before
        globals()["pipeline"] = importlib.import_module(f"{__name__}.pipeline")
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Augmentation",
    "augment",
    "example_key",
    "random_erasing",
    "Preprocessing",
    "TrainingData",
    "eval_dataset",
    "indices_digest",
    "pixels_digest",
    "load_training_data",
    "split_indices",
    "ENERGY_INPUTS_KEY",
    "INDEX_KEY",
    "ALIASES",
    "DATASETS",
    "SOURCES",
    "check_dataset",
    "image_shape",
    "load_split",
    "npz_files",
    "num_classes",
    "resolve_source",
    "check_available",
]
