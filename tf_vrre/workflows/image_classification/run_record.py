"""The record a training run writes when it starts: ``run.json`` (status ``running``; layout in
:mod:`tf_vrre.runs.run_json`) and the cold chain's architecture, ``samples/model.json``, both
written atomically.  The run sets ``status`` to ``complete`` when ``fit`` ends.

Example:
  >>> sorted(versions())
  ['keras', 'tensorflow', 'tf_vrre']
"""

from __future__ import annotations

import os
from typing import Any

import keras
import tensorflow as tf

import tf_vrre.workflows.image_classification.config as config
from tf_vrre._version import __version__
from tf_vrre.runs import atomic, run_json

__all__ = ["versions", "write_run"]


def versions() -> dict:
    """The versions ``run.json`` records: tf_vrre, TensorFlow, Keras."""
    return {"tf_vrre": __version__, "tensorflow": tf.__version__, "keras": keras.__version__}


def write_run(out: str, cfg: config.Config, p: dict, sampler: Any, strategy: Any, execution: dict) -> dict:
    """Writes ``run.json`` (status running) and ``samples/model.json`` atomically; returns the run."""
    run = {
        "format": run_json.FORMAT,
        "method": cfg.method,
        "config": cfg.to_dict(),
        "model": p["model"],
        "data": p["data"],
        "preprocessing": p["train"].preprocessing.to_dict(),
        "seed": cfg.training.seed,
        "schedule": p["values"],
        "expected_samples": p["samples"],
        "replicas": int(strategy.num_replicas_in_sync),
        "execution": execution,
        "versions": versions(),
        "status": "running",
    }
    run_json.write_json(os.path.join(out, run_json.RUN_JSON), run)
    os.makedirs(os.path.join(out, run_json.SAMPLES), exist_ok=True)
    model_json = os.path.join(out, run_json.SAMPLES, run_json.MODEL_JSON)
    atomic.write_text(model_json, sampler.cold_model.to_json())
    return run
