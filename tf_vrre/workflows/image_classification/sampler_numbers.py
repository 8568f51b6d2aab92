"""The numbers the sampler of a config computes with (step sizes, temperatures, ``F`` and their
schedules stretched to the run's epochs), checked before TensorFlow starts.

:func:`tf_vrre.workflows.image_classification.train.build_sampler` turns a config into float32
step sizes, temperatures and ``F`` (and their schedules, stretched to the run's epochs).  Those
values obey the sampler's own rules (:func:`tf_vrre.numerics.check_hyperparameter`, the rules
the sampler's constructor applies: :data:`tf_vrre.numerics.RULES`), checked here on the values
the config gives, at the start of the run.  A config whose keys are each fine can still give a
number float32 cannot hold, or a step that diverges by itself; these checks compute those
numbers from the config and name the key to change with the interval it may take given the
others (:mod:`tf_vrre.workflows.step_bounds`):

- without the data size (:func:`check_config`, run by
  :func:`tf_vrre.workflows.image_classification.config.resolve`): the stretched per-epoch
  factors stay positive and finite; the annealed temperature stays positive; ``F`` grown over the
  burn-in stays finite; the swap penalty ``(1/tau_1 - 1/tau_2)^2 / F`` (per unit ``sigma^2``,
  recorded in float32) stays finite; the hot chain's ``tau`` stays finite; and the prior's own
  step ``lr * hot_lr_multiplier * weight_decay < 2 (1 + momentum)``;
- with the training-set size ``N`` (:func:`check_data_size`, run with the run's other numbers):
  ``eta = lr / N`` and the hot chain's ``eta`` are normal float32 numbers, the noise variance
  ``2 (1 - momentum) eta tau`` is finite, and the prior precision ``weight_decay * N`` is too.

:func:`schedule_rates` gives the per-epoch factors of the schedule as run; :func:`fast_schedule`
says which of them change more than x10 per epoch (a schedule squeezed into a few epochs: the
chains cannot follow a target that moves that fast), the preflight's warning.

Example:
  >>> from tf_vrre.workflows.image_classification import config
  >>> cfg = config.resolve(config.load("vr-resghmc"))
  >>> check_data_size(cfg, 64)
  >>> check_data_size(cfg, 10 ** 37)         # lr / N = 1e-38: zero in float32
  Traceback (most recent call last):
  ...
  tf_vrre.workflows.step_bounds.BoundError: config key sampler.lr must be in [0.118, 3.4e+38] for the 1e+37 training examples (the sampler's step size eta = lr / N, the hot chain's hot_lr_multiplier * eta and the noise variance 2 (1 - momentum) eta tau must be positive and finite in float32), got 0.1
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from tf_vrre import numerics
from tf_vrre.numerics import F32_MAX, F32_TINY
from tf_vrre.workflows import step_bounds
from tf_vrre.workflows.step_bounds import BoundError

__all__ = ["BoundError", "Stretch", "check_config", "check_data_size", "schedule_rates", "fast_schedule", "FAST_FACTOR"]

FAST_FACTOR = 10.0
"""A schedule factor beyond x10 (or below x1/10) per epoch of the run is too fast for the chains
to follow (:func:`fast_schedule`)."""

_LOG_MAX, _LOG_TINY = math.log(F32_MAX), math.log(F32_TINY)
_KEY = "config key "


class Stretch:
    """The schedule of ``training.schedule_epochs`` stretched to ``training.epochs``: epoch counts
    times ``scale``, per-epoch factors to the power ``1 / scale``."""

    def __init__(self, cfg: Any) -> None:
        self.scale = cfg.training.epochs / cfg.training.schedule_epochs

    def epochs(self, k: int) -> int:
        """An epoch count of the schedule in epochs of this run."""
        return int(round(k * self.scale))

    def factor(self, f: float) -> float:
        """A per-epoch factor of the schedule per epoch of this run (``inf`` / 0 beyond float64)."""
        return math.exp(self.log_factor(f)) if self.log_factor(f) < 709 else math.inf

    def log_factor(self, f: float) -> float:
        """``log`` of :meth:`factor`."""
        return math.log(f) / self.scale


def _pick(keys: Iterable[str], prefer: Iterable[str]) -> str:
    """The first of ``keys`` the user gave explicitly (``prefer``), else the first."""
    keys = list(keys)
    return next((k for k in keys if k in set(prefer)), keys[0])


def check_config(cfg: Any, prefer: Iterable[str] = ()) -> None:
    """The checks that need no data size (see the module docstring); ``prefer``: keys given
    explicitly (flags, ``--set``), named first when a rule ties several keys.

    Raises:
      BoundError: naming the key (``err.key``) and its interval.
    """
    s, stretch, prefer = cfg.sampler, Stretch(cfg), tuple(prefer)
    if s.lr_decay is not None and stretch.log_factor(s.lr_decay) < _LOG_TINY:
        lowest = math.exp(_LOG_TINY * stretch.scale)
        step_bounds.within(
            "sampler.lr_decay", s.lr_decay, lowest, 1.0, _stretched(cfg, "lr_decay", "stay positive"), prefix=_KEY
        )
    tau_end_log = _check_temperature(cfg, stretch)
    if cfg.swap is not None:
        _check_correction(cfg, stretch, tau_end_log)
    _check_rules(cfg)
    h = max(cfg.rungs[1])  # the largest step: the hot chain's for the paper's two chains
    multiple = "hot_lr_multiplier" if cfg.ladder is None else "max(ladder.learning_rates)"
    limit = step_bounds.prior_stability_limit(h * s.weight_decay, s.momentum)
    if s.lr >= limit:
        why = (
            f"the prior's own step lr * {multiple + ' * ' if h != 1 else ''}weight_decay must be < 2 (1 + "
            f"momentum) = {2 * (1 + s.momentum):.3g}, else the weights grow every step; with sampler.lr {s.lr:g}"
            f"{f', {multiple} {h:g}' if h != 1 else ''}, weight_decay {s.weight_decay:g}, momentum "
            f"{s.momentum:g}"
        )
        if _pick(("sampler.lr", "sampler.weight_decay"), prefer) == "sampler.weight_decay":
            step_bounds.within(
                "sampler.weight_decay",
                s.weight_decay,
                0.0,
                2 * (1 + s.momentum) / (h * s.lr),
                why,
                hi_open=True,
                prefix=_KEY,
            )
        step_bounds.within("sampler.lr", s.lr, F32_TINY, limit, why, hi_open=True, prefix=_KEY)


def _stretched(cfg: Any, key: str, what: str) -> str:
    return (
        f"its per-epoch factor over the run, {key} ** (training.schedule_epochs / training.epochs) = "
        f"{key} ** ({cfg.training.schedule_epochs} / {cfg.training.epochs}), must {what} in float32"
    )


def _check_temperature(cfg: Any, stretch: Stretch) -> float | None:
    """Checks tau, the hot chain's tau and the annealed tau; returns ``log`` of the last (``None``
    without a temperature)."""
    s = cfg.sampler
    if s.temperature is None:
        return None
    hot = s.hot_temperature_multiplier or 1.0
    step_bounds.within(
        "sampler.temperature",
        s.temperature,
        F32_TINY,
        F32_MAX / hot,
        f"the hot chain's temperature, sampler.temperature * hot_temperature_multiplier ({hot:g}), "
        "must be finite in float32"
        if hot != 1
        else "float32",
        prefix=_KEY,
    )
    log_tau = math.log(s.temperature)
    burn = stretch.epochs(s.burn_in_epochs)
    if not (s.temperature_annealing > 1 and burn > 0):
        return log_tau
    log_factor = stretch.log_factor(s.temperature_annealing)
    if -log_factor < _LOG_TINY or log_tau - burn * log_factor < _LOG_TINY:
        # tau / a_s ** burn >= tiny and 1 / a_s >= tiny, with a_s = a ** (1 / scale), burn = round(b * scale)
        top = min(-_LOG_TINY, (log_tau - _LOG_TINY) / burn) * stretch.scale
        step_bounds.within(
            "sampler.temperature_annealing",
            s.temperature_annealing,
            1.0,
            math.exp(top),
            f"the temperature annealed over the burn-in, sampler.temperature / temperature_annealing "
            f"** burn_in_epochs, must stay >= {F32_TINY:.3g} in float32 (stretched to "
            f"{cfg.training.epochs} epochs)",
            prefix=_KEY,
        )
    return log_tau - burn * log_factor


def _check_correction(cfg: Any, stretch: Stretch, tau_end_log: float) -> None:
    """``F``, ``F`` grown over the burn-in and the swap penalty per unit sigma^2 in float32."""
    s, sw = cfg.sampler, cfg.swap
    burn = stretch.epochs(s.burn_in_epochs)
    log_growth = 0.0
    if stretch.log_factor(sw.correction_growth) > 0 and burn > 0:
        log_growth = burn * stretch.log_factor(sw.correction_growth)
        if log_growth > _LOG_MAX - _LOG_TINY or stretch.log_factor(sw.correction_growth) > _LOG_MAX:
            top = math.exp(min(_LOG_MAX, (_LOG_MAX - _LOG_TINY) / burn) * stretch.scale)
            step_bounds.within(
                "swap.correction_growth",
                sw.correction_growth,
                1.0,
                top,
                f"F * correction_growth ** burn_in_epochs must stay finite in float32 (stretched to "
                f"{cfg.training.epochs} epochs)",
                prefix=_KEY,
            )
    ratio = 1.0 - 1.0 / s.hot_temperature_multiplier  # 1/tau_1 - 1/tau_2 = ratio / tau_1
    # log of the largest (1/tau_1 - 1/tau_2)^2 / F_0: at the start or at the end of the burn-in
    log_pen = max(2 * (math.log(ratio) - math.log(s.temperature)), 2 * (math.log(ratio) - tau_end_log) - log_growth)
    lo = max(F32_TINY, math.exp(min(log_pen - _LOG_MAX, 700)))
    hi = math.exp(_LOG_MAX - log_growth)
    why = (
        f"F grows x{math.exp(log_growth):.3g} over the burn-in and must stay finite in float32, and so must the "
        "swap penalty (1/tau_1 - 1/tau_2)^2 / F per unit sigma^2"
        if log_growth
        else "the swap penalty (1/tau_1 - 1/tau_2)^2 / F per unit sigma^2 must be finite in float32"
    )
    step_bounds.within("swap.correction", sw.correction, lo, hi, why, prefix=_KEY)


def _rule(kind: str, value: Any, key: str, name: str, swaps: bool) -> None:
    """:func:`tf_vrre.numerics.check_hyperparameter` on the value the sampler gets, as a
    :class:`BoundError` naming the config key."""
    try:
        numerics.check_hyperparameter(
            kind, value, num_chains=len(value) if isinstance(value, list) else None, swaps=swaps, name=name
        )
    except (TypeError, ValueError) as err:
        raise BoundError(key, f"{_KEY}{key}: {err}") from None


def _check_rules(cfg: Any) -> None:
    """The sampler's rules on the temperatures and ``F`` it gets at step 0 (the schedules start
    there): temperatures ``(tau, hot_temperature_multiplier * tau)`` positive, finite and strictly
    increasing in float32 (a multiplier of 1.0000001 gives two equal float32 temperatures), ``F``
    positive and finite."""
    s = cfg.sampler
    if s.temperature is not None:
        taus = [s.temperature * r for r in cfg.rungs[0]]
        if not cfg.replica:
            key, name = "sampler.temperature", "sampler.temperature"
        elif cfg.ladder is None:
            key = "sampler.hot_temperature_multiplier"
            name = "the chains' temperatures (sampler.temperature, times hot_temperature_multiplier for the hot chain)"
        else:
            key, name = (
                "ladder.temperatures",
                "the chains' temperatures (sampler.temperature times ladder.temperatures)",
            )
        _rule("temperatures", taus, key, name, cfg.replica)
    if cfg.swap is not None:
        _rule("correction", cfg.swap.correction, "swap.correction", "swap.correction (F)", True)


def check_data_size(cfg: Any, data_size: int) -> None:
    """The checks that need the training-set size ``N`` (see the module docstring).

    Raises:
      BoundError: naming the key (``err.key``) and its interval for this ``N``.
    """
    s, n = cfg.sampler, float(data_size)
    context = f" for the {data_size:.6g} training examples"
    multiples = cfg.rungs[1]
    h = max(multiples)
    hi = F32_MAX * n / h
    if s.temperature is not None:
        hot_tau = s.temperature * (s.hot_temperature_multiplier or 1.0)
        hi = min(hi, step_bounds.noise_variance_limit(hot_tau, 1.0 - s.momentum) * n / h)
    step_bounds.within(
        "sampler.lr",
        s.lr,
        F32_TINY * n,
        min(hi, F32_MAX),
        "the sampler's step size eta = lr / N, the hot chain's hot_lr_multiplier * eta and the noise "
        "variance 2 (1 - momentum) eta tau must be positive and finite in float32",
        prefix=_KEY,
        context=context,
    )
    step_bounds.within(
        "sampler.weight_decay",
        s.weight_decay,
        max(F32_TINY, F32_TINY / n),
        F32_MAX / n,
        "the prior precision weight_decay * N is float32",
        zero=True,
        prefix=_KEY,
        context=context,
    )
    eta = s.lr / n
    times = " (times hot_lr_multiplier for the hot chain)" if cfg.ladder is None else " (times ladder.learning_rates)"
    _rule(
        "learning_rates",
        [eta * r for r in multiples],
        "sampler.lr",
        f"the chains' step sizes eta = sampler.lr / N{times if cfg.replica else ''}{context}",
        cfg.replica,
    )


def schedule_rates(cfg: Any) -> dict:
    """The schedule as run, per epoch of the run: ``{name: (factor per epoch, epochs it applies,
    config key)}`` for the learning-rate decay (``"lr"``), the temperature annealing
    (``"temperature"``) and the growth of ``F`` (``"F"``), where the config has them and they
    act for at least one epoch.

    Example:
      >>> from tf_vrre.workflows.image_classification import config
      >>> rates = schedule_rates(config.resolve(config.apply_overrides(config.load("vr-resghmc"),
      ...                                                              {"training.epochs": 4})))
      >>> {k: (round(f, 3), e) for k, (f, e, _) in rates.items()}   # 500 epochs squeezed into 4
      {'lr': (0.133, 2), 'temperature': (0.084, 2), 'F': (11.886, 2)}
    """
    s, stretch, epochs = cfg.sampler, Stretch(cfg), cfg.training.epochs
    out = {}
    if s.lr_decay is not None and s.lr_decay != 1:
        out["lr"] = (
            stretch.factor(s.lr_decay),
            epochs - min(epochs, stretch.epochs(s.lr_constant_epochs)),
            "sampler.lr_decay",
        )
    burn = min(epochs, stretch.epochs(s.burn_in_epochs)) if s.burn_in_epochs is not None else 0
    if s.temperature is not None and s.temperature_annealing > 1:
        out["temperature"] = (1.0 / stretch.factor(s.temperature_annealing), burn, "sampler.temperature_annealing")
    if cfg.swap is not None and cfg.swap.correction_growth > 1:
        out["F"] = (stretch.factor(cfg.swap.correction_growth), burn, "swap.correction_growth")
    return {k: v for k, v in out.items() if v[1] > 0}


def fast_schedule(cfg: Any, limit: float = FAST_FACTOR) -> tuple[str, int] | None:
    """``(description, fewest epochs)`` when the schedule as run changes the learning rate, the
    temperature or ``F`` by more than ``limit`` per epoch (the config's schedule squeezed into
    few epochs: the chains cannot follow a target that moves that fast), else ``None``;
    ``fewest epochs``: the smallest ``training.epochs`` that keeps every factor within ``limit``.

    Example:
      >>> from tf_vrre.workflows.image_classification import config
      >>> text, fewest = fast_schedule(config.resolve(config.apply_overrides(config.load("vr-resghmc"),
      ...                                                                    {"training.epochs": 4})))
      >>> fewest
      5
      >>> for part in text.split(" and "):
      ...     print(part)
      the temperature x0.0841 per epoch (0.01 -> 7.1e-05 over 2 epochs)
      F x11.9 per epoch (1.5e+05 -> 2.1e+07 over 2 epochs)
    """
    rates = schedule_rates(cfg)
    words = {"lr": "the learning rate", "temperature": "the temperature", "F": "F"}
    start = {
        "lr": cfg.sampler.lr,
        "temperature": cfg.sampler.temperature,
        "F": cfg.swap.correction if cfg.swap is not None else None,
    }
    parts, fewest = [], 1
    for name, (factor, span, _) in rates.items():
        if max(factor, 1.0 / factor) <= limit:
            continue
        end = start[name] * factor**span
        parts.append(
            f"{words[name]} x{factor:.3g} per epoch ({start[name]:.2g} -> {end:.2g} over {span} epoch{'s' if span != 1 else ''})"
        )
    if not parts:
        return None
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    for (
        factor,
        _,
        _,
    ) in rates.values():  # E epochs run the config's factor f as f ** (S / E): |log f| S / E <= log limit
        log_config_factor = abs(math.log(factor)) * Stretch(cfg).scale
        fewest = max(fewest, math.ceil(cfg.training.schedule_epochs * log_config_factor / math.log(limit) - 1e-9))
    return text, fewest
