"""Method configuration files: TOML, schema-checked, overridable, resolved to sampler arguments.

A config file (``configs/<method>.toml``; shipped in the package, so ``--config vr-resghmc``
works by name) has a top-level ``method`` and the tables ``[data]``, ``[model]``,
``[training]``, ``[sampler]``, ``[swap]``, ``[variance_reduction]``, ``[samples]``.  Every key is
checked against :data:`SCHEMA`: an unknown key, a key that does not apply to the method, or a
bad value raises :class:`ConfigError` naming the key and the allowed values.  Missing keys take
the schema's defaults (the paper's VR-reSGHMC numbers).

Units are those of SGD on the mean loss, so a config means the same thing for any data-set
size ``N``: the sampler's learning rate is ``eta = lr / N`` and its prior precision
``weight_decay * N`` (the paper's ``eta = 2e-6``, ``wd = 25`` at ``N = 50,000`` are
``lr = 0.1``, ``weight_decay = 5e-4``).

Epoch numbers in ``[sampler]`` and ``[samples]`` refer to a run of ``training.schedule_epochs``
epochs.  A run of ``E`` epochs stretches the schedule by ``s = E / schedule_epochs``: epoch
counts are multiplied by ``s`` (rounded) and per-epoch factors raised to ``1 / s``, so the
learning-rate, temperature and ``F`` curves are the same functions of the fraction of training
(e.g. ``--epochs 10`` of the 500-epoch recipe decays the lr by ``0.984^50`` per epoch after
epoch 4).
"""

import copy
import math
import numbers
import os

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, the package tomllib was made from (same API)
    import tomli as tomllib

METHODS = ("msgd", "sghmc", "resghmc", "vr-resghmc", "cycsghmc", "cvr-resghmc")
REPLICA = ("resghmc", "vr-resghmc", "cvr-resghmc")          # two chains with swaps
VARIANCE_REDUCED = ("vr-resghmc", "cvr-resghmc")
CYCLICAL = ("cycsghmc", "cvr-resghmc")
CONFIG_DIR = os.path.join(os.path.dirname(__file__), "configs")

__all__ = ["ConfigError", "METHODS", "SCHEMA", "load", "parse", "apply_overrides", "resolve",
           "schedule_values", "available", "config_path"]


class ConfigError(ValueError):
    """A config key is unknown, does not apply, or has a bad value (the message names it)."""


# ---- value checks: each returns the normalised value or raises ValueError(allowed) ----------
def _int(lo, hi=None):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo or (hi is not None and v > hi):
            raise ValueError(f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]")
        return int(v)
    return check


SEED_MAX = 2 ** 31 - 1
"""Largest seed (``--seed``'s bound): seeds reach int32 stateless-RNG keys."""


def _num(lo, hi=math.inf, lo_open=False, hi_open=False):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ValueError(_range_text(lo, hi, lo_open, hi_open))
        if (v <= lo if lo_open else v < lo) or (v >= hi if hi_open else v > hi):
            raise ValueError(_range_text(lo, hi, lo_open, hi_open))
        return float(v)
    return check


def _range_text(lo, hi, lo_open, hi_open):
    left = f"> {lo:g}" if lo_open else f">= {lo:g}"
    if hi == math.inf:
        return f"a number {left}"
    return f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def _bool(v):
    if not isinstance(v, bool):
        raise ValueError("true or false")
    return v


def _choice(*values):
    def check(v):
        if v not in values:
            raise ValueError("one of " + ", ".join(map(str, values)))
        return v
    return check


def _count_or_fraction(v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or v < 0 or (
            not isinstance(v, numbers.Integral) and v >= 1):
        raise ValueError("an integer count >= 0 or a fraction in [0, 1)")
    return v if isinstance(v, numbers.Integral) else float(v)


def _coefficient(v):
    if v == "adaptive":
        return v
    try:
        return _num(-math.inf)(v)
    except ValueError:
        raise ValueError("a finite number (the paper: -1) or \"adaptive\"") from None


def _kwargs(v):
    if not isinstance(v, dict) or not all(isinstance(x, (bool, int, float, str)) for x in v.values()):
        raise ValueError("a table of numbers, booleans or strings (builder keyword arguments)")
    return dict(v)


def _dataset(v):
    from tf_vrre.workflows.image_classification.data.sources import ALIASES, DATASETS

    if not isinstance(v, str) or ALIASES.get(v, v) not in DATASETS:
        raise ValueError("one of " + ", ".join(list(DATASETS) + list(ALIASES)))
    return ALIASES.get(v, v)


MODEL_NAMES = ("cnn", "resnet8", "resnet20", "resnet32", "resnet56")
"""``models.names()`` without importing Keras (the command line checks configs before TensorFlow
starts; ``tests/workflows/image_classification/test_config.py`` checks that the two agree)."""

_RESNET_KWARGS = {"width": _int(1), "synchronized_bn": _bool, "name": str}
MODEL_KWARGS = {"cnn": {"width": _int(1), "batch_norm": _bool, "synchronized_bn": _bool, "name": str},
                **{name: _RESNET_KWARGS for name in MODEL_NAMES if name.startswith("resnet")}}
"""``model.kwargs`` each builder takes, with their checks (the builders' keyword arguments, without
Keras; ``tests/workflows/image_classification/test_config.py`` checks them against the signatures)."""


def _model_kwargs(cfg, raw, where):
    name, kwargs = cfg["model"]["name"], cfg["model"]["kwargs"]
    allowed = MODEL_KWARGS[name]
    for key, value in kwargs.items():
        dotted = f"model.kwargs.{key}"
        at = " (override)" if dotted in raw.get("overridden", ()) else where
        if key not in allowed:
            raise ConfigError(f"config key {dotted} is unknown for model {name}; allowed: "
                              f"{', '.join(allowed)}{at}")
        if allowed[key] is str:
            if not isinstance(value, str) or not value:
                raise ConfigError(f"config key {dotted} must be a non-empty string, got {value!r}{at}")
        else:
            kwargs[key] = _check(dotted, value, allowed[key], at)


def _model(v):
    if v not in MODEL_NAMES:
        raise ValueError("one of " + ", ".join(MODEL_NAMES))
    return v


# ---- the schema: section -> key -> (default, check, methods it applies to or None = all) -----
_ONE_CHAIN_T = ("sghmc", "cycsghmc")
_EXPONENTIAL = ("msgd", "sghmc", "resghmc", "vr-resghmc")
_TEMPERED = ("sghmc", "resghmc", "vr-resghmc", "cycsghmc", "cvr-resghmc")
SCHEMA = {
    "data": {
        "dataset": ("cifar10", _dataset, None),
        "batch_size": (256, _int(1), None),
        "subset": (0, _int(0), None),                 # training-set size N; 0 = the whole split
        "holdout": (0.05, _count_or_fraction, None),  # held out of training (fitted T, running BMA)
        "split_seed": (0, _int(0, SEED_MAX), None),
        "augment": (True, _bool, None),
        "crop_padding": (4, _int(0), None),
        "flip": (True, _bool, None),
        "erasing": (0.0, _num(0, 1), None),
    },
    "model": {
        "name": ("resnet20", _model, None),
        "kwargs": ({}, _kwargs, None),
    },
    "training": {
        "epochs": (500, _int(1), None),
        "schedule_epochs": (500, _int(1), None),
        "seed": (0, _int(0, SEED_MAX), None),
    },
    "sampler": {
        "lr": (0.1, _num(0, lo_open=True), None),
        "lr_constant_epochs": (200, _int(0), _EXPONENTIAL),
        "lr_decay": (0.984, _num(0, 1, lo_open=True), _EXPONENTIAL),
        "cycles": (2, _int(1), CYCLICAL),
        "weight_decay": (5e-4, _num(0), None),
        "momentum": (0.9, _num(0, 1, hi_open=True), None),
        "temperature": (0.01, _num(0, lo_open=True), _TEMPERED),
        "temperature_annealing": (1.02, _num(1), _TEMPERED),
        "burn_in_epochs": (300, _int(0), _TEMPERED),
        "hot_lr_multiplier": (1.5, _num(0, lo_open=True), REPLICA),
        "hot_temperature_multiplier": (5.0, _num(1, lo_open=True), REPLICA),
        "energy_mode": ("auto", _choice("auto", "train", "inference"), None),
    },
    "swap": {
        "correction": (1.5e5, _num(0, lo_open=True), REPLICA),
        "correction_growth": (1.02, _num(1), REPLICA),
        "smoothing": (0.3, _num(0, 1, lo_open=True), REPLICA),
        "period": (0, _int(0), REPLICA),              # sigma2 window; 0 = the VR period (1 without VR)
        "cooling": (False, _bool, REPLICA),           # at most one swap per epoch (authors' code)
    },
    "variance_reduction": {
        "period": (392, _int(1), VARIANCE_REDUCED),
        "coefficient": (-1.0, _coefficient, VARIANCE_REDUCED),
        "smoothing": (0.3, _num(0, 1, lo_open=True), VARIANCE_REDUCED),
        "batch_size": (1000, _int(1), VARIANCE_REDUCED),
    },
    "samples": {
        "thinning": (256, _int(1), None),
        "burn_in_epochs": (300, _int(0), _EXPONENTIAL),
        "cycle_threshold": (0.7, _num(0, 1, lo_open=True, hi_open=True), CYCLICAL),
        "max_samples": (0, _int(0), None),            # 0 = keep all
        "keep": ("last", _choice("last", "reservoir"), None),
        "validation": (1000, _int(0), None),          # held-out images scored by the running BMA
    },
}
TOP = {"method": (None, _choice(*METHODS), None), "description": ("", str, None)}


def available():
    """Names of the configs shipped with the package (``tf_vrre/workflows/image_classification/configs/*.toml``)."""
    if not os.path.isdir(CONFIG_DIR):
        return ()
    return tuple(sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".toml")))


def config_path(name_or_path):
    """The file of a shipped config name (``"vr-resghmc"``) or an existing path."""
    if os.path.isfile(name_or_path):
        return name_or_path
    candidate = os.path.join(CONFIG_DIR, f"{name_or_path}.toml")
    if os.path.isfile(candidate) and os.sep not in name_or_path:
        return candidate
    raise ConfigError(f"config {name_or_path!r}: no such file; shipped configs are "
                      f"{', '.join(available())} (or give a path to a .toml file)")


def load(name_or_path):
    """Reads a config file (by shipped name or path); returns the raw dict (see :func:`resolve`).

    Raises:
      ConfigError: missing file (listing the shipped names) or TOML syntax error.
    """
    path = config_path(name_or_path)
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config {path}: TOML syntax error: {err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"config {path}: not UTF-8 text (byte {err.start}: {err.reason}); TOML files are "
                          "UTF-8") from None
    except OSError as err:
        raise ConfigError(f"config {path}: cannot be read ({err.strerror or err})") from None
    raw.setdefault("source", os.path.abspath(path))
    return raw


def parse(text):
    """A raw config dict from TOML text (for tests and notebooks)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config: TOML syntax error: {err}") from None


def apply_overrides(raw, overrides):
    """Returns a copy of ``raw`` with ``{"section.key": value}`` (or ``"method"``) replaced.

    Values are Python values, or strings parsed as TOML values (``"1e-5"``, ``"true"``,
    ``'"adaptive"'``; a bare word is taken as a string).

    Example:
      >>> cfg = apply_overrides(load("vr-resghmc"), {"training.epochs": 10, "model.name": "cnn"})
    """
    out = copy.deepcopy(raw)
    out.setdefault("overridden", [])
    for dotted, value in overrides.items():
        out["overridden"].append(dotted)
        if isinstance(value, str):
            value = _parse_value(value)
        parts = dotted.split(".")
        if len(parts) == 1:
            if parts[0] not in TOP:
                raise ConfigError(f"override {dotted!r}: top-level keys are {', '.join(TOP)}; "
                                  "use section.key (e.g. training.epochs)")
            out[parts[0]] = value
            continue
        section, key = parts[0], ".".join(parts[1:])
        if section not in SCHEMA:
            raise ConfigError(f"override {dotted!r}: unknown section {section!r}; sections are "
                              f"{', '.join(SCHEMA)}")
        if section == "model" and key.startswith("kwargs."):
            out.setdefault("model", {}).setdefault("kwargs", {})[key[len("kwargs."):]] = value
            continue
        out.setdefault(section, {})[key] = value
    return out


def _parse_value(text):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def resolve(raw):
    """Checks a raw config against the schema and fills defaults.

    Returns:
      The resolved config: ``{"method", "description", "data": {...}, "model": {...},
      "training": {...}, "sampler": {...}, "swap": {...}, "variance_reduction": {...},
      "samples": {...}}`` where sections and keys that do not apply to the method are left out.

    Raises:
      ConfigError: naming the first unknown / inapplicable key or bad value and the allowed values.

    Example:
      >>> cfg = resolve(load("resghmc"))
      >>> cfg["swap"]["correction"]
      150000.0
    """
    if not isinstance(raw, dict):
        raise ConfigError("config: expected a table of sections")
    where = f" (in {raw['source']})" if "source" in raw else ""
    method = raw.get("method")
    if method is None:
        raise ConfigError(f"config key method is required: one of {', '.join(METHODS)}{where}")
    method = _check("method", method, TOP["method"][1], " (override)" if "method" in raw.get("overridden", ()) else where)
    out = {"method": method, "description": str(raw.get("description", ""))}
    for key in raw:
        if key in TOP or key in ("source", "overridden"):
            continue
        if key not in SCHEMA:
            raise ConfigError(f"config: unknown {'section' if isinstance(raw[key], dict) else 'key'} {key!r}; "
                              f"allowed: {', '.join(list(TOP) + list(SCHEMA))}{where}")
        if not isinstance(raw[key], dict):
            raise ConfigError(f"config: {key} must be a table [{key}]{where}")
    for section, keys in SCHEMA.items():
        given = raw.get(section, {})
        for key in given:
            if key not in keys:
                at = " (override)" if f"{section}.{key}" in raw.get("overridden", ()) else where
                raise ConfigError(f"config key {section}.{key} is unknown; allowed in [{section}]: "
                                  f"{', '.join(keys)}{at}")
            methods = keys[key][2]
            if methods is not None and method not in methods:
                at = " (override)" if f"{section}.{key}" in raw.get("overridden", ()) else where
                raise ConfigError(f"config key {section}.{key} does not apply to method {method!r} "
                                  f"(it applies to {', '.join(methods)}){at}")
        values = {}
        for key, (default, check, methods) in keys.items():
            if methods is not None and method not in methods:
                continue
            name = f"{section}.{key}"
            at = " (override)" if name in raw.get("overridden", ()) else where
            values[key] = _check(name, given.get(key, default), check, at)
        if values:
            out[section] = values
    _model_kwargs(out, raw, where)
    _check_consistency(out, where)
    return out


def _check(name, value, check, where):
    try:
        return check(value)
    except ValueError as err:
        raise ConfigError(f"config key {name} must be {err}, got {value!r}{where}") from None


def _check_consistency(cfg, where):
    t = cfg["training"]
    if cfg["method"] in CYCLICAL and cfg["sampler"]["cycles"] > t["epochs"]:
        raise ConfigError(f"config key sampler.cycles must be <= training.epochs ({t['epochs']}), "
                          f"got {cfg['sampler']['cycles']}{where}")


def schedule_values(cfg, data_size, steps_per_epoch):
    """The sampler's numbers for a run: ``eta``, prior precision and the time-stretched schedule.

    Returns a dict: ``eta`` (= lr / N), ``weight_decay`` (= weight_decay * N), ``scale``
    (``epochs / schedule_epochs``) and, as applicable, ``lr_constant_epochs``, ``lr_decay``,
    ``burn_in_epochs``, ``temperature_annealing``, ``correction_growth``,
    ``sample_burn_in_epochs``, ``total_steps``, ``sample_burn_in_steps``, ``cooling_steps``
    (all per epoch of this run).

    Example:
      >>> v = schedule_values(resolve(load("vr-resghmc")), data_size=50000, steps_per_epoch=195)
      >>> v["eta"]
      2e-06
    """
    s, sm = cfg["sampler"], cfg["samples"]
    epochs = cfg["training"]["epochs"]
    scale = epochs / cfg["training"]["schedule_epochs"]
    out = {"eta": s["lr"] / data_size, "weight_decay": s["weight_decay"] * data_size, "scale": scale,
           "epochs": epochs, "steps_per_epoch": steps_per_epoch, "total_steps": epochs * steps_per_epoch}

    def epochs_(k):
        return int(round(k * scale))

    def factor(f):
        return float(f ** (1.0 / scale))

    if "lr_constant_epochs" in s:
        out["lr_constant_epochs"] = epochs_(s["lr_constant_epochs"])
        out["lr_decay"] = factor(s["lr_decay"])
    if "temperature" in s:
        out["burn_in_epochs"] = epochs_(s["burn_in_epochs"])
        out["temperature_annealing"] = factor(s["temperature_annealing"])
    if "swap" in cfg:
        out["correction_growth"] = factor(cfg["swap"]["correction_growth"])
        out["cooling_steps"] = steps_per_epoch if cfg["swap"]["cooling"] else 0
    if "burn_in_epochs" in sm:
        out["sample_burn_in_epochs"] = epochs_(sm["burn_in_epochs"])
        out["sample_burn_in_steps"] = out["sample_burn_in_epochs"] * steps_per_epoch
    else:
        out["sample_burn_in_steps"] = 0
    return out
