"""Keras callbacks around :class:`tf_vrre.ReplicaExchangeSampler`, one per module.

- :class:`HyperparameterScheduler` - per-epoch learning rates, temperatures and ``F``;
- :class:`SwapLogger` - every swap attempt and sigma^2 / snapshot refresh to CSV;
- :class:`SampleCollector` - thinned cold-chain samples to disk with a manifest;
- :class:`Checkpoint` - atomic, resumable checkpoints of the sampler and the callbacks;
- :class:`CSVLogger` / :class:`EpochCSVLogger` - per-epoch logs to CSV;
- :class:`EpochProgress` - one progress line per epoch;
- :class:`LadderTuner` - the temperature ladder tuned from the swaps, the barrier and the chains it needs.
"""

import keras  # noqa: F401  (first: the Keras classes register before a module here runs; see tf_vrre/__init__.py)

from tf_vrre.callbacks.checkpoint import Checkpoint
from tf_vrre.callbacks.csv_logger import CSVLogger
from tf_vrre.callbacks.ladder_tuner import LadderTuner
from tf_vrre.callbacks.progress import EpochCSVLogger, EpochProgress
from tf_vrre.callbacks.sample_collector import SampleCollector
from tf_vrre.callbacks.scheduler import HyperparameterScheduler
from tf_vrre.callbacks.swap_logger import SwapLogger

__all__ = [
    "HyperparameterScheduler",
    "SwapLogger",
    "SampleCollector",
    "Checkpoint",
    "CSVLogger",
    "EpochCSVLogger",
    "EpochProgress",
    "LadderTuner",
]
