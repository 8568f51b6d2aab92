"""One chain per replica (``--placement chain-per-replica``, ``train(placement="chain_per_replica")``)
checked against the config and the strategy without TensorFlow, and in the words of the interface
that asks: the command line's flags or Python's arguments and config keys.

:func:`check_placement` runs before TensorFlow starts (the strategy's name, the config's K, the
logical CPU devices asked for); :func:`replica_mismatch` words the check that needs the strategy
made (its replicas are counted by TensorFlow: GPUs, TPU cores, workers).

Example:
  >>> from tf_vrre.workflows.image_classification import config
  >>> cfg = config.resolve(config.load("vr-resghmc-ladder"))
  >>> replica_mismatch(cfg, 8, "tpu", flags=True)
  'chain-per-replica runs one chain per replica: --chains 4 needs 4 replicas, --strategy tpu has 8; use --chains 8 or a strategy over 4 devices'
"""

from __future__ import annotations

from typing import Any

import tf_vrre.workflows.image_classification.config as config

__all__ = ["PLACEMENTS", "check_placement", "replica_mismatch"]

PLACEMENTS = ("replicated", "chain_per_replica")
"""Where the chains live under a strategy (:data:`tf_vrre.sampler.placements.PLACEMENTS`, named here
without TensorFlow)."""


def _words(flags: bool, strategy: Any = None) -> dict:
    """How a placement error names the inputs: command-line flags, or Python arguments and config keys."""
    if flags:
        return {
            "placement": "chain-per-replica",
            "chains": "--chains",
            "strategy": f"--strategy {strategy}",
            "cpu": "--cpu-devices",
        }
    return {
        "placement": "placement='chain_per_replica'",
        "chains": "ladder.chains",
        "strategy": f"strategy={strategy!r}",
        "cpu": "logical CPU devices",
    }


def check_placement(
    cfg: config.Config, placement: str, strategy: Any = None, cpu_devices: int | None = None, flags: bool = False
) -> None:
    """Checks a placement against the config and the strategy's name, without TensorFlow.

    One chain per replica needs a replica method (K >= 2 chains), BatchNorm that is not
    synchronized across replicas (it would average the chains' statistics), and a strategy with
    one replica per chain: ``"mirrored"`` (the GPUs, or ``cpu_devices`` logical CPUs, which must
    then be K), ``"tpu"`` or ``"multiworker"``; ``"default"`` has one device and ``"auto"`` may
    pick one.  The number of replicas of the strategy made is checked by :func:`replica_mismatch`.

    Args:
      cfg: a checked config.
      placement: ``"replicated"`` or ``"chain_per_replica"``.
      strategy: a strategy name (checked) or object (not checked here).
      cpu_devices: the logical CPU devices a ``"mirrored"`` strategy runs over (``None``: the GPUs).
      flags: name the command line's flags in the message (else Python arguments and config keys).

    Raises:
      ValueError: naming the input to change.

    Example:
      >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {"ladder.chains": 4}))
      >>> check_placement(cfg, "chain_per_replica", "mirrored", cpu_devices=2, flags=True)
      Traceback (most recent call last):
      ...
      ValueError: chain-per-replica runs one chain per device: --chains 4 needs 4 devices, --cpu-devices gives 2; use --cpu-devices 4
    """
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    if placement == "replicated":
        return
    w, K = _words(flags, strategy), cfg.num_chains
    if K < 2:
        raise ValueError(
            f"{w['placement']} runs one chain per device; method {cfg.method!r} has one chain (the replica "
            f"methods: {', '.join(config.REPLICA)})"
        )
    if cfg.model.kwargs.get("synchronized_bn"):
        raise ValueError(
            f"{w['placement']}: model.kwargs.synchronized_bn = true would average BatchNorm statistics across "
            "replicas, i.e. across chains here; drop it (every replica sees the whole batch, so its statistics "
            "are the one-device ones)"
        )
    if strategy in ("default", "auto"):
        raise ValueError(
            f"{w['placement']} runs one chain per device of the strategy: {w['strategy']} "
            + ("is one device" if strategy == "default" else "may pick one device")
            + f"; name a strategy with {K} replicas: mirrored (K GPUs, or {w['cpu']} to try it on a CPU), "
            "tpu or multiworker"
        )
    if cpu_devices is not None and strategy == "mirrored" and cpu_devices != K:
        raise ValueError(
            f"{w['placement']} runs one chain per device: {w['chains']} {K} needs {K} devices, {w['cpu']} "
            f"gives {cpu_devices}; use {w['cpu']} {K}"
        )


def replica_mismatch(
    cfg: config.Config, replicas: int, strategy: str, devices: str = "", flags: bool = False
) -> str | None:
    """Why one chain per replica cannot run with ``replicas`` replicas in sync (the config's K
    differs), or ``None``; ``strategy``: its name, ``devices``: what it runs on (for the message)."""
    K = cfg.num_chains
    if replicas == K:
        return None
    w = _words(flags, strategy)
    fix = [f"{w['chains']} {replicas}"] if replicas >= 2 and cfg.replica else []
    fix.append(
        f"a strategy over {K} devices" + (f" ({w['cpu']} {K} to try it on a CPU)" if strategy == "mirrored" else "")
    )
    return (
        f"{w['placement']} runs one chain per replica: {w['chains']} {K} needs {K} replicas, {w['strategy']} has "
        f"{replicas}{f' ({devices})' if devices else ''}; use {' or '.join(fix)}"
    )
