"""The record a training run writes when it starts: ``run.json`` (status ``running``; layout in
:mod:`tf_vrre.runs.run_json`) and the cold chain's architecture, ``samples/model.json``, both
written atomically.  The run sets ``status`` to ``complete`` when ``fit`` ends, with the ladder it
ended with (:func:`rungs`: per rung its temperature, learning rate, and the chain and device that
held it).

Example:
  >>> sorted(versions())
  ['keras', 'tensorflow', 'tf_vrre']
"""

from __future__ import annotations

import os
from typing import Any

import keras
import numpy as np
import tensorflow as tf

import tf_vrre.workflows.image_classification.config as config
from tf_vrre._version import __version__
from tf_vrre.runs import atomic, run_json

__all__ = ["versions", "write_run", "devices", "rungs"]


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


def devices(strategy: Any) -> list[str]:
    """The device of every replica of ``strategy``, in replica order (under
    ``MultiWorkerMirroredStrategy`` worker by worker: each worker's devices named as this one's,
    on its task; the default strategy: the first GPU, else the CPU)."""
    try:
        local = list(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy: the device TensorFlow places ops on
        gpus = tf.config.list_logical_devices("GPU")
        return [(gpus or tf.config.list_logical_devices("CPU"))[0].name]
    tasks = 1
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        tasks = strategy.num_replicas_in_sync // len(local)
    if tasks == 1:
        return [tf.DeviceSpec.from_string(d).to_string() for d in local]
    return [tf.DeviceSpec.from_string(d).replace(task=t).to_string() for t in range(tasks) for d in local]


def rungs(sampler: Any, strategy: Any) -> list[dict]:
    """Per rung ``k`` (cold first) at the end of ``fit``: ``{"rung", "temperature", "learning_rate",
    "chain", "device"}``.  With ``placement="chain_per_replica"`` chain ``r`` is replica ``r`` (its
    weights never leave its device, the rungs move between chains); otherwise every replica holds
    every chain, slot ``k`` holds rung ``k`` (``chain = k``) and ``device`` is the one device, or
    ``None`` when the chains are replicated on several.
    """
    f32 = lambda v: float(str(np.float32(v)))  # noqa: E731  (the shortest decimals of the float32 value)
    temperatures = [f32(t) for t in sampler.state.ladder.temperature.numpy()]
    rates = [f32(v) for v in sampler.state.ladder.learning_rate.numpy()]
    where = devices(strategy)
    if sampler.placement == "chain_per_replica":
        holder = [int(c) for c in np.argsort(sampler.state.replica.rung.numpy())]  # rung -> chain
        device = [where[c] for c in holder]
    else:
        holder = list(range(len(temperatures)))
        device = [where[0] if len(where) == 1 else None] * len(temperatures)
    return [
        {"rung": k, "temperature": t, "learning_rate": v, "chain": c, "device": d}
        for k, (t, v, c, d) in enumerate(zip(temperatures, rates, holder, device))
    ]
