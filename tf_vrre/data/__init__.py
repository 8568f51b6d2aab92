"""Image data for the deep-learning workflow: sources, augmentation, pipelines.

- :mod:`tf_vrre.data.sources` - ``load_split(name, split, source, data_dir)`` from
  tensorflow-datasets or local ``.npz`` files (``cifar10``, ``cifar100``, ``svhn_cropped``).
- :mod:`tf_vrre.data.augment` - the paper's crop / flip / random erasing as stateless ops
  keyed by ``(seed, data epoch, example index)``.
- :mod:`tf_vrre.data.pipeline` - :class:`Preprocessing` (normalisation with training-set
  statistics), :func:`split_indices`, :class:`TrainingData` (the sampler's batches, exact on
  resume) and :func:`eval_dataset`.
"""

from tf_vrre.data.augment import Augmentation, augment, example_key, random_erasing
from tf_vrre.data.pipeline import (ENERGY_INPUTS_KEY, INDEX_KEY, Preprocessing, TrainingData, eval_dataset,
                                   indices_digest, load_training_data, split_indices)
from tf_vrre.data.sources import (ALIASES, DATASETS, SOURCES, check_dataset, image_shape, load_split,
                                  npz_files, num_classes, resolve_source)

__all__ = ["Augmentation", "augment", "example_key", "random_erasing", "Preprocessing", "TrainingData",
           "eval_dataset", "indices_digest", "load_training_data", "split_indices", "ENERGY_INPUTS_KEY",
           "INDEX_KEY", "ALIASES", "DATASETS", "SOURCES", "check_dataset", "image_shape", "load_split",
           "npz_files", "num_classes", "resolve_source"]
