"""What a training run checks before TensorFlow starts (no TensorFlow here).

A training run has one preflight, :func:`preflight`, shared by ``tf-vrre train`` (before TensorFlow is
imported) and :func:`tf_vrre.workflows.image_classification.train.train`: the execution options,
the strategy name, the run directory (read only: a refused run is left as it was), the data
location, and, when the training-set size is known without reading images (``data.subset``, or
the labels of ``.npz`` files), the run's numbers (batch, control-variate refreshes, samples, and
the sampler's step sizes, temperatures and ``F`` in float32:
:mod:`tf_vrre.workflows.image_classification.sampler_numbers`).  The config itself was checked
once, by :func:`tf_vrre.workflows.image_classification.config.resolve`.  Taking the run
directory after the preflight (under the run lock): :mod:`tf_vrre.workflows.image_classification.run_directory`.
(What ``tf-vrre evaluate`` checks: :mod:`tf_vrre.workflows.image_classification.evaluation_checks`.)
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from typing import Any

import tf_vrre.workflows.image_classification.config as config
import tf_vrre.workflows.image_classification.config_ladder as config_ladder
import tf_vrre.workflows.image_classification.config_schedule as config_schedule
import tf_vrre.workflows.image_classification.sampler_numbers as sampler_numbers
import tf_vrre.workflows.image_classification.strategies as strategies
from tf_vrre.runs import locks, run_json
from tf_vrre.workflows.image_classification.data import sources

__all__ = [
    "Preflight",
    "ScheduleWarning",
    "preflight",
    "writes_run",
    "check_numbers",
    "check_execution",
    "expected_samples",
    "first_sample_step",
    "train_size_hint",
    "check_run_dir",
    "check_same_data",
]


class ScheduleWarning(UserWarning):
    """The config's schedule, stretched to the run's epochs, changes the learning rate, the
    temperature or ``F`` by more than x10 per epoch
    (:func:`tf_vrre.workflows.image_classification.sampler_numbers.fast_schedule`).

    Attributes:
      epochs, schedule_epochs: ``training.epochs`` and ``training.schedule_epochs``.
      changes: what changes how fast (``"F x11.9 per epoch (1.5e+05 -> 2.1e+07 over 2 epochs)"``).
      fewest_epochs: the fewest ``training.epochs`` whose stretched schedule stays within x10 per epoch.
    """

    def __init__(self, epochs: int, schedule_epochs: int, changes: str, fewest_epochs: int) -> None:
        self.epochs, self.schedule_epochs, self.changes, self.fewest_epochs = (
            epochs,
            schedule_epochs,
            changes,
            fewest_epochs,
        )
        super().__init__(
            f"training.epochs = {epochs} squeezes the {schedule_epochs}-epoch schedule "
            f"(training.schedule_epochs) into {epochs} epochs: {changes}, more than x10 per epoch, "
            "faster than the chains can follow; for a short run keep the schedule's per-epoch rates "
            "(config_schedule.keep_rates; tf-vrre train --schedule keep-rates) or train for at least "
            f"{fewest_epochs} epochs"
        )


@dataclasses.dataclass(frozen=True)
class Preflight:
    """A training run that passed :func:`preflight`: its arguments and what was found.

    Attributes:
      config: the checked config.
      out: the run directory.
      data_dir, source, download: where the data are (as :func:`train`'s arguments).
      overwrite: replace a different run in ``out``.
      jit_compile, steps_per_execution: the execution options (checked).
      existing: ``run.json`` of the run already in ``out`` with the same config (``None``: none,
        or ``overwrite``).
      train_size: the training-set size ``N`` when known without reading images, else ``None``.
      values: :func:`tf_vrre.workflows.image_classification.config_schedule.schedule_values` for ``N`` (or ``None``).
      samples: the number of samples the run collects for ``N`` (or ``None``).
      created: ``(device, inode)`` of ``out`` if
        :func:`tf_vrre.workflows.image_classification.run_directory.take_run` created it.
      placement: where the chains live under the strategy (``"replicated"`` or
        ``"chain_per_replica"``, :mod:`tf_vrre.sampler.placements`; checked against the strategy
        when it is made).
    """

    config: config.Config
    out: str
    data_dir: str | None = None
    source: str = "auto"
    download: bool = True
    overwrite: bool = False
    jit_compile: bool | str | None = None
    steps_per_execution: int | None = None
    existing: dict | None = None
    train_size: int | None = None
    values: dict | None = None
    samples: int | None = None
    created: tuple[int, int] | None = None
    placement: str = "replicated"

    @property
    def complete(self) -> bool:
        """``out`` holds this run, complete."""
        return self.existing is not None and self.existing.get("status") == "complete"


class _Argument:
    """Marks the errors raised inside it with the input they concern (``err.argument``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, err: BaseException | None, tb: Any) -> bool:
        if isinstance(err, (ValueError, OSError)) and getattr(err, "argument", None) is None:
            err.argument = self.name
        return False


def preflight(
    cfg: config.Config,
    out: str | os.PathLike,
    data_dir: str | None = None,
    source: str = "auto",
    download: bool = True,
    overwrite: bool = False,
    jit_compile: bool | str | None = None,
    steps_per_execution: int | None = None,
    strategy: Any = None,
    writer: bool | None = None,
) -> Preflight:
    """Checks a training run before TensorFlow starts, changing nothing (see the module docstring).

    Args:
      cfg: a checked config (:func:`tf_vrre.workflows.image_classification.config.resolve`).
      out, data_dir, source, download, overwrite, jit_compile, steps_per_execution: as
        :func:`tf_vrre.workflows.image_classification.train.train`.
      strategy: a strategy name to check (:func:`tf_vrre.workflows.image_classification.strategies.check`),
        or ``None`` / a strategy object (not checked here).
      writer: this process writes ``out`` (``None``: :func:`writes_run` of ``strategy``): another
        process holding its lock is refused here already (probed, not taken).

    Warns:
      ScheduleWarning: the schedule as run changes the learning rate, the temperature or ``F`` by
        more than x10 per epoch (a long schedule squeezed into a few epochs).

    Raises:
      ValueError / OSError, each with ``argument`` set to the input it concerns, in the order
        checked: ``"out"`` (:class:`tf_vrre.runs.run_json.RunDirError`: a different run or foreign
        files in ``out``), ``"data"`` (data set, source, directory or files), ``"config"`` (the
        run's numbers for ``N``), ``"strategy"``, ``"execution"`` (``jit_compile``,
        ``steps_per_execution``).

    Example:
      >>> os.makedirs("data/cifar10")
      >>> np.savez("data/cifar10/cifar10_train.npz", x=np.zeros((160, 32, 32, 3), np.uint8), y=np.arange(160) % 10)
      >>> cfg = config.resolve(config.apply_overrides(config.load("msgd"), {
      ...     "data.batch_size": 32, "training.epochs": 4, "samples.thinning": 4, "samples.burn_in_epochs": 0}))
      >>> pre = preflight(cfg, "runs/a", data_dir="data", source="npz")
      >>> pre.train_size, pre.samples, os.path.exists("runs/a")     # 160 less 5% held out; nothing written
      (152, 4, False)
    """
    if not isinstance(cfg, config.Config):
        raise TypeError(f"cfg must be a checked config (config.resolve(...)), got {type(cfg).__name__}")
    out = os.fspath(out)
    if writer is None:
        with _Argument("strategy"):
            writer = writes_run(strategy)
    with _Argument("out"):
        if writer:
            locks.check_run_free(out)
        existing = check_run_dir(out, cfg, overwrite)
    with _Argument("data"):
        sources.check_available(cfg.data.dataset, "train", source, data_dir, download=download)
        size = train_size_hint(cfg, source, data_dir)
    values = count = None
    if size is not None:
        with _Argument("config"):
            values, count = check_numbers(cfg, size)
    if isinstance(strategy, str):
        with _Argument("strategy"):
            strategies.check(strategy)
    with _Argument("execution"):
        check_execution(cfg, jit_compile, steps_per_execution)
    fast = sampler_numbers.fast_schedule(cfg)
    if fast is not None:  # after every check: a refused run gets its error alone
        warnings.warn(ScheduleWarning(cfg.training.epochs, cfg.training.schedule_epochs, *fast), stacklevel=3)
    return Preflight(
        cfg, out, data_dir, source, download, overwrite, jit_compile, steps_per_execution, existing, size, values, count
    )


def writes_run(strategy: Any) -> bool:
    """Whether this process writes the run directory: ``False`` only for a non-chief worker of a
    multi-worker run (``$TF_CONFIG`` for the name ``"multiworker"``; no TensorFlow for a name).

    Raises:
      ValueError: a malformed ``$TF_CONFIG`` with ``"multiworker"``.
    """
    if not isinstance(strategy, str):
        return strategy is None or strategies.is_chief(strategy)
    if strategy != "multiworker":
        return True
    cluster = strategies.tf_config()
    if cluster is None:
        return True
    task = cluster["task"]
    return task["type"] == "chief" or (
        "chief" not in cluster["cluster"] and task["type"] == "worker" and int(task["index"]) == 0
    )


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """``sum(floor((a * i + b) / m) for i in range(n))`` in O(log) steps (``a, b >= 0``, ``m > 0``)."""
    total = 0
    while True:
        if a >= m:
            total += (n - 1) * n * (a // m) // 2
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        top = a * n + b
        if top < m:
            return total
        n, b = divmod(top, m)
        m, a = a, m


def _sampling_multiples(last: int, length: int, start: int, every: int) -> int:
    """How many steps ``s`` in ``[1, last]`` are multiples of ``every`` in a sampling phase:
    ``(s - 1) mod length >= start`` (steps ``c length + start + 1 .. (c + 1) length`` of cycle ``c``)."""
    if last <= 0:
        return 0
    cycles = last // length
    count = _floor_sum(cycles, every, length, length) - _floor_sum(cycles, every, length, start)
    low = cycles * length + start  # the partial cycle: steps low + 1 .. last
    return count + max(0, last // every - low // every) if last > low else count


def expected_samples(cfg: config.Config, values: dict) -> int:
    """Number of cold-chain samples the run will collect (thinning, burn-in, cycles), in closed form.

    A sample is taken at every step ``s`` that is a multiple of ``samples.thinning`` after the
    burn-in; under a cyclical schedule only in the sampling phase of its cycle (position
    ``((s - 1) mod L) / L > samples.cycle_threshold``, :meth:`tf_vrre.sgmcmc.schedules.CyclicalCosine.in_sampling_phase`
    of ``s - 1``); at most ``samples.max_samples``.

    Example:
      >>> cfg = config.resolve(config.load("msgd"))
      >>> expected_samples(cfg, config_schedule.schedule_values(cfg, 50000, 195))   # 200 epochs x 195 steps / 256
      152
    """
    every, total = cfg.samples.thinning, values["total_steps"]
    first = every * (values["sample_burn_in_steps"] // every + 1)
    if first > total:
        count = 0
    elif cfg.cyclical:
        length = math.ceil(total / cfg.sampler.cycles)
        threshold = cfg.samples.cycle_threshold
        start = min(length, int(math.floor(threshold * length)) + 1)  # first position r with r / length > threshold
        while start > 0 and (start - 1) / length > threshold:
            start -= 1
        while start < length and not start / length > threshold:
            start += 1
        count = _sampling_multiples(total, length, start, every) - _sampling_multiples(first - 1, length, start, every)
    else:
        count = (total - first) // every + 1
    cap = cfg.samples.max_samples
    return min(count, cap) if cap else count


def check_numbers(cfg: config.Config, train_size: int) -> tuple[dict, int]:
    """``(values, samples)`` of a run on ``train_size`` images, or a ``ValueError`` (no TensorFlow).

    Checks: the batch fits the data, the sampler's numbers for this ``N``
    (:func:`tf_vrre.workflows.image_classification.sampler_numbers.check_data_size`), the control
    variates are refreshed at least once, the schedule collects at least one sample (naming
    ``samples.thinning`` and the burn-in), a tuned ladder's phase ends before the first sample.
    """
    d = cfg.data
    if d.batch_size > train_size:
        raise ValueError(f"data.batch_size ({d.batch_size}) must be <= the {train_size} training examples")
    sampler_numbers.check_data_size(cfg, train_size)
    values = config_schedule.schedule_values(cfg, train_size, train_size // d.batch_size)
    vr = cfg.variance_reduction
    if vr is not None and vr.period > values["total_steps"]:
        raise ValueError(
            f"variance_reduction.period ({vr.period}) must be <= the run's "
            f"{values['total_steps']} steps, or the control variates are never refreshed"
        )
    count = expected_samples(cfg, values)
    if count and config_ladder.tuned(cfg):
        _check_tuning_steps(cfg, values)
    if count == 0:
        raise ValueError(
            f"samples.thinning ({cfg.samples.thinning}) collects no sample: the run has "
            f"{values['total_steps']} steps, {values['sample_burn_in_steps']} of them burn-in; "
            "lower --thinning or raise --epochs"
        )
    return values, count


def first_sample_step(cfg: config.Config, values: dict) -> int | None:
    """The step of the first sample the run collects (as :func:`expected_samples` counts them), or
    ``None`` if it collects none.

    Example:
      >>> cfg = config.resolve(config.load("msgd"))
      >>> first_sample_step(cfg, config_schedule.schedule_values(cfg, 50000, 195))   # after 300 epochs x 195 steps
      58624
    """
    every, total = cfg.samples.thinning, values["total_steps"]
    step = every * (values["sample_burn_in_steps"] // every + 1)
    if cfg.cyclical:  # the first multiple of the thinning in a sampling phase
        length = math.ceil(total / cfg.sampler.cycles)
        while step <= total and not ((step - 1) % length) / length > cfg.samples.cycle_threshold:
            step += every
    return step if step <= total else None


def _check_tuning_steps(cfg: config.Config, values: dict) -> None:
    """A tuned ladder: its first round within the tuning phase, and the phase over before the
    first sample (samples drawn while the ladder moves are not from the final ladder's law)."""
    steps, first = values["tune_steps"], config_ladder.first_round(cfg, values["tune_steps"])
    if first > steps:
        raise ValueError(
            f"ladder.tune_first_round ({first}) must be <= the tuning phase's {steps} steps "
            f"(ladder.tune_epochs: {values['tune_epochs']} epoch(s) of {values['steps_per_epoch']} steps)"
        )
    sample = first_sample_step(cfg, values)
    if sample is not None and sample <= steps:
        raise ValueError(
            f"ladder.tune_epochs ({cfg.ladder.tune_epochs}: {steps} steps of this run) must end before the first "
            f"sample, at step {sample} (samples.thinning {cfg.samples.thinning}"
            + (f", cycle position > samples.cycle_threshold {cfg.samples.cycle_threshold}" if cfg.cyclical else "")
            + "): samples are kept only once the ladder is fixed"
        )


def check_execution(
    cfg: config.Config, jit_compile: bool | str | None = None, steps_per_execution: int | None = None
) -> None:
    """Checks ``train``'s execution options without TensorFlow (``ValueError`` naming the argument).

    ``jit_compile``: ``None`` (the sampler's default: ``$TF_VRRE_JIT_COMPILE``, else ``"auto"``),
    ``True``, ``False`` or ``"auto"``.  ``steps_per_execution``: ``None`` (1) or an integer in
    ``[1, 1024]`` (the swap record's ring buffer,
    :data:`tf_vrre.workflows.image_classification.strategies.MAX_STEPS_PER_EXECUTION`) that divides
    ``samples.thinning`` (callbacks see the weights once per execution).
    """
    if not (jit_compile is None or isinstance(jit_compile, bool) or jit_compile == "auto"):
        raise ValueError(f"jit_compile must be None, True, False or 'auto'; got {jit_compile!r}")
    if steps_per_execution is None:
        return
    top = strategies.MAX_STEPS_PER_EXECUTION
    if (
        isinstance(steps_per_execution, bool)
        or not isinstance(steps_per_execution, int)
        or not 1 <= steps_per_execution <= top
    ):
        raise ValueError(f"steps_per_execution must be an integer in [1, {top}]; got {steps_per_execution!r}")
    if cfg.samples.thinning % steps_per_execution:
        raise ValueError(
            f"steps_per_execution ({steps_per_execution}) must divide samples.thinning "
            f"({cfg.samples.thinning}): callbacks see the weights once per execution"
        )


def train_size_hint(cfg: config.Config, source: str, data_dir: str | None) -> int | None:
    """The number of training images, known without reading images: ``data.subset``, or for the
    npz source the split's label count less the held-out part; ``None`` for tfds (no TensorFlow)."""
    d = cfg.data
    if d.subset:
        return int(d.subset)
    name = sources.check_dataset(d.dataset)
    if sources.resolve_source(source, name, "train", data_dir) != "npz":
        return None
    total = sources.npz_split_size(data_dir, name, "train")
    held = sources.example_count(d.holdout, total, "holdout")
    if held >= total:
        raise ValueError(
            f"data.holdout ({held}) must leave training examples: the {name} train split in "
            f"{str(data_dir)!r} has {total}"
        )
    return total - held


def check_run_dir(out: str, cfg: config.Config, overwrite: bool = False) -> dict | None:
    """The existing run (same config) or ``None``; refuses a different run unless ``overwrite``
    (read only: nothing in ``out`` changes)."""
    if overwrite:
        return None
    existing = run_json.read_run(out, required=False)
    if existing is None:
        foreign = [p for p in run_json.TRAIN_OUTPUTS if os.path.lexists(os.path.join(out, p))]
        if foreign:
            raise run_json.RunDirError(
                f"{out!r} holds {', '.join(foreign)} but no run.json; use --overwrite to "
                "replace it or choose another --out"
            )
        return None
    diff = run_json.config_difference(existing["config"], cfg.to_dict())
    if diff is not None:
        key, old, new = diff
        raise run_json.RunDirError(
            f"{out!r} holds a different run ({existing['method']}): config key {key} is "
            f"{old!r} there, {new!r} now; use --overwrite to replace it or choose another "
            "--out"
        )
    return existing


def check_same_data(out: str, existing: dict, prepared: dict) -> None:
    """Refuses to resume run ``existing`` on other training data than it started with.

    Compared: the source, the training / held-out index digests (labels and split), the digest
    of the training split's pixels and the fitted normalisation (for runs recorded before the
    pixel digest).  Raises ``RunDirError`` naming the first difference; nothing is written.
    """
    old, new = existing["data"], prepared["data"]
    checks = [(f"data.{key}", old.get(key), new.get(key)) for key in ("source", "train_digest", "holdout_digest")]
    if "pixels_digest" in old:
        checks.append(("data.pixels_digest", old["pixels_digest"], new["pixels_digest"]))
    fitted = prepared["train"].preprocessing.to_dict()
    recorded = existing["preprocessing"]
    checks += [(f"preprocessing.{key}", recorded.get(key), fitted[key]) for key in ("mean", "std")]
    for key, there, now in checks:
        if there != now:
            where = f" in {new['data_dir']!r}" if new.get("data_dir") else ""
            raise run_json.RunDirError(
                f"{out!r}: the training data{where} differ from the run's ({key} {there!r} "
                f"there, {now!r} now); resume with the run's data ({old.get('source')} "
                f"{old.get('data_dir')!r}), or use --overwrite / another --out"
            )
