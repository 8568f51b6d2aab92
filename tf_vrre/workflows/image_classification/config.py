"""Method configuration files: TOML in, a frozen :class:`Config` out (one dataclass per table).

A config file (``configs/<method>.toml``; shipped in the package, so ``--config vr-resghmc``
works by name) has a top-level ``method`` (and an optional ``description``) and the tables
``[data]``, ``[model]``, ``[training]``, ``[sampler]``, ``[swap]``, ``[ladder]``,
``[variance_reduction]``, ``[samples]`` (their dataclasses:
:mod:`tf_vrre.workflows.image_classification.config_tables`).  :func:`resolve` checks every key once: an unknown key, a key that does not apply
to the method, or a bad value raises :class:`ConfigError` naming the key, the allowed values and
the file (or ``(override)`` for a value given by :func:`apply_overrides`, i.e. a flag or ``--set``).
Missing keys take the defaults of the dataclass fields (the paper's VR-reSGHMC numbers).  Keys
that do not apply to the method are ``None`` (``cfg.sampler.cycles`` of ``vr-resghmc``), and so are
the tables ``swap`` (single-chain methods) and ``variance_reduction`` (methods without it), and
``ladder`` when the config has no ``[ladder]`` table (two chains: the paper's; K chains and a tuned
ladder: :mod:`tf_vrre.workflows.image_classification.config_ladder`).

Units are those of SGD on the mean loss, so a config means the same thing for any data-set
size ``N``: the sampler's learning rate is ``eta = lr / N`` and its prior precision
``weight_decay * N`` (the paper's ``eta = 2e-6``, ``wd = 25`` at ``N = 50,000`` are
``lr = 0.1``, ``weight_decay = 5e-4``).

Epoch numbers in ``[sampler]`` and ``[samples]`` refer to a run of ``training.schedule_epochs``
epochs; how a run of other length uses them: :mod:`tf_vrre.workflows.image_classification.config_schedule`.

Example:
  >>> cfg = resolve(apply_overrides(load("vr-resghmc"), {"training.epochs": 10, "model.name": "cnn"}))
  >>> cfg.training.epochs, cfg.model.name, cfg.swap.correction, cfg.sampler.cycles
  (10, 'cnn', 150000.0, None)
  >>> cfg.to_dict()["training"]                     # as run.json records it
  {'epochs': 10, 'schedule_epochs': 500, 'seed': 0}
"""

from __future__ import annotations

import copy
import dataclasses
import os
import types
from collections.abc import Mapping
from typing import Any

import tf_vrre.workflows.image_classification.config_ladder as config_ladder
import tf_vrre.workflows.image_classification.config_rules as config_rules
import tf_vrre.workflows.image_classification.config_values as config_values
import tf_vrre.workflows.image_classification.sampler_numbers as sampler_numbers
from tf_vrre import errors
from tf_vrre.workflows.image_classification.config_tables import (
    CYCLICAL,
    METHODS,
    REPLICA,
    SECTIONS,
    TOP,
    VARIANCE_REDUCED,
    DataConfig,
    LadderConfig,
    ModelConfig,
    SamplerConfig,
    SamplesConfig,
    SwapConfig,
    TrainingConfig,
    VarianceReductionConfig,
)

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, the package tomllib was made from (same API)
    import tomli as tomllib

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "configs")
SEED_MAX = config_values.INT_MAX
"""Largest seed (``--seed``'s bound): seeds reach int32 stateless-RNG keys."""
MAX_DEPTH = 4
"""Deepest nesting of a config (``model.kwargs.<name> = value``): deeper values are refused
before anything walks them."""

__all__ = [
    "ConfigError",
    "METHODS",
    "REPLICA",
    "VARIANCE_REDUCED",
    "CYCLICAL",
    "Config",
    "DataConfig",
    "ModelConfig",
    "TrainingConfig",
    "SamplerConfig",
    "SwapConfig",
    "LadderConfig",
    "VarianceReductionConfig",
    "SamplesConfig",
    "RawConfig",
    "load",
    "parse",
    "apply_overrides",
    "resolve",
    "applies",
    "available",
    "config_path",
]


class ConfigError(errors.TfVrreError, ValueError):
    """A config key is unknown, does not apply, or has a bad value (the message names it)."""


@dataclasses.dataclass(frozen=True)
class Config:
    """A checked method config (made by :func:`resolve`; the fields hold checked values only).

    ``swap`` is ``None`` for single-chain methods, ``variance_reduction`` for methods without
    control variates, ``ladder`` for configs without a ``[ladder]`` table (two chains for a
    replica method); inside a table, keys that do not apply to the method are ``None``.
    """

    method: str
    description: str
    data: DataConfig
    model: ModelConfig
    training: TrainingConfig
    sampler: SamplerConfig
    swap: SwapConfig | None
    ladder: LadderConfig | None
    variance_reduction: VarianceReductionConfig | None
    samples: SamplesConfig

    @property
    def replica(self) -> bool:
        """K >= 2 chains with swaps."""
        return self.method in REPLICA

    @property
    def num_chains(self) -> int:
        """K: 1 for single-chain methods, ``ladder.chains`` (2 without ``[ladder]``) for replica methods."""
        return config_ladder.num_chains(self)

    @property
    def rungs(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The chains' (temperature, learning-rate) multiples, cold first
        (:func:`tf_vrre.workflows.image_classification.config_ladder.rungs`)."""
        return config_ladder.rungs(self)

    @property
    def cyclical(self) -> bool:
        """The cyclical cosine learning rate."""
        return self.method in CYCLICAL

    def to_dict(self) -> dict:
        """The config as ``run.json`` records it: tables and keys that do not apply left out."""
        out: dict = {"method": self.method, "description": self.description}
        for name in SECTIONS:
            section = getattr(self, name)
            if section is None:
                continue
            table = {
                f.name: getattr(section, f.name)
                for f in dataclasses.fields(section)
                if getattr(section, f.name) is not None
            }
            if "kwargs" in table:
                table["kwargs"] = dict(table["kwargs"])
            out[name] = {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()}
        return out


class RawConfig(dict):
    """The tables of a config file as read (a ``dict``), and where they came from: ``path`` (the
    file, ``None`` for text) and ``overridden`` (the dotted keys :func:`apply_overrides` replaced).
    Error messages name the file, or ``(override)`` for a replaced key."""

    def __init__(self, tables: Mapping = (), path: str | None = None, overridden: tuple[str, ...] = ()) -> None:
        super().__init__(tables)
        self.path, self.overridden = path, tuple(overridden)


def available() -> tuple[str, ...]:
    """Names of the configs shipped with the package (``tf_vrre/workflows/image_classification/configs/*.toml``)."""
    if not os.path.isdir(CONFIG_DIR):
        return ()
    return tuple(sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".toml")))


def config_path(name_or_path: str) -> str:
    """The file of a shipped config name (``"vr-resghmc"``) or an existing path."""
    if os.path.isfile(name_or_path):
        return name_or_path
    candidate = os.path.join(CONFIG_DIR, f"{name_or_path}.toml")
    if os.path.isfile(candidate) and os.sep not in name_or_path:
        return candidate
    raise ConfigError(
        f"config {name_or_path!r}: no such file; shipped configs are "
        f"{', '.join(available())} (or give a path to a .toml file)"
    )


def _toml(text: str, where: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config{where}: TOML syntax error: {err}") from None
    except RecursionError:
        raise ConfigError(
            f"config{where}: nested too deeply to parse (a config has at most {MAX_DEPTH} levels: "
            "model.kwargs.<name> = value)"
        ) from None


def load(name_or_path: str) -> RawConfig:
    """Reads a config file (by shipped name or path) into a :class:`RawConfig` (see :func:`resolve`).

    Raises:
      ConfigError: missing file (listing the shipped names), unreadable or non-UTF-8 file, TOML
        syntax error, nesting deeper than :data:`MAX_DEPTH`.
    """
    path = config_path(name_or_path)
    try:
        with open(path, "rb") as f:
            data = f.read()
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"config {path}: not UTF-8 text (byte {err.start}: {err.reason}); TOML files are UTF-8"
        ) from None
    except OSError as err:
        raise ConfigError(f"config {path}: cannot be read ({err.strerror or err})") from None
    raw = RawConfig(_toml(text, f" {path}"), path=os.path.abspath(path))
    _check_depth(raw, f" (in {raw.path})")
    return raw


def parse(text: str) -> RawConfig:
    """A :class:`RawConfig` from TOML text (for tests and notebooks)."""
    raw = RawConfig(_toml(text, ""))
    _check_depth(raw, "")
    return raw


def _check_depth(raw: Mapping, where: str) -> None:
    """Refuses a value nested deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    stack = [(str(k), v, 1) for k, v in raw.items()]
    while stack:
        name, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(
                f"config key {name.split('.')[0]}...: nested more than {MAX_DEPTH} levels deep (tables "
                f"or arrays); a config has at most model.kwargs.<name> = value{where}"
            )
        if isinstance(value, dict):
            stack += [(f"{name}.{k}", v, depth + 1) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{name}[{i}]", v, depth + 1) for i, v in enumerate(value)]


def apply_overrides(raw: Mapping, overrides: Mapping[str, Any]) -> RawConfig:
    """Returns a copy of ``raw`` with ``{"section.key": value}`` (or ``"method"``) replaced.

    Values are Python values, or strings parsed as TOML values (``"1e-5"``, ``"true"``,
    ``'"adaptive"'``; a bare word is taken as a string).

    Example:
      >>> raw = apply_overrides(load("vr-resghmc"), {"training.epochs": 10, "model.name": "cnn"})
      >>> raw["training"]["epochs"], raw.overridden
      (10, ('training.epochs', 'model.name'))
    """
    _check_depth(raw, "")
    out = RawConfig(
        copy.deepcopy(dict(raw)),
        path=getattr(raw, "path", None),
        overridden=getattr(raw, "overridden", ()) + tuple(overrides),
    )
    for dotted, value in overrides.items():
        if isinstance(value, str):
            value = _parse_value(dotted, value)
        parts = dotted.split(".")
        if len(parts) == 1:
            if parts[0] not in TOP:
                raise ConfigError(
                    f"override {dotted!r}: top-level keys are {', '.join(TOP)}; use section.key (e.g. training.epochs)"
                )
            out[parts[0]] = value
            continue
        section, key = parts[0], ".".join(parts[1:])
        if section not in SECTIONS:
            raise ConfigError(f"override {dotted!r}: unknown section {section!r}; sections are {', '.join(SECTIONS)}")
        table = out.setdefault(section, {})
        if not isinstance(table, dict):
            raise ConfigError(
                f"config: {section} must be a table [{section}], got {config_values.show(table)}"
                + (f" (in {out.path})" if out.path else "")
            )
        if section == "model" and key.startswith("kwargs."):
            kwargs = table.setdefault("kwargs", {})
            if not isinstance(kwargs, dict):
                raise ConfigError(f"config key model.kwargs must be a table, got {config_values.show(kwargs)}")
            kwargs[key[len("kwargs.") :]] = value
            continue
        table[key] = value
    return out


def _parse_value(dotted: str, text: str) -> Any:
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise ConfigError(f"override {dotted!r}: value nested too deeply to parse") from None
    _check_depth({dotted: value}, " (override)")
    return value


def applies(dotted: str, method: str) -> bool:
    """Whether config key ``"section.key"`` applies to ``method`` (an unknown key: ``True``, so that
    :func:`resolve` names it).

    Example:
      >>> applies("swap.correction", "msgd"), applies("swap.correction", "resghmc")
      (False, True)
    """
    section, _, name = dotted.partition(".")
    fields = {f.name: f for f in dataclasses.fields(SECTIONS[section])} if section in SECTIONS else {}
    methods = fields[name].metadata["methods"] if name in fields else None
    return methods is None or method in methods


def resolve(raw: Mapping) -> Config:
    """Checks a raw config (:func:`load`, :func:`parse`, :func:`apply_overrides`, or a plain dict
    of tables) once and fills the defaults.

    Raises:
      ConfigError: naming the first unknown / inapplicable key or bad value, the allowed values
        and the file (``(override)`` for a replaced key).

    Example:
      >>> cfg = resolve(load("resghmc"))
      >>> cfg.swap.correction, cfg.variance_reduction
      (150000.0, None)
    """
    if not isinstance(raw, Mapping):
        raise ConfigError("config: expected a table of sections")
    source = getattr(raw, "path", None)
    where = f" (in {source})" if source else ""
    overridden = set(getattr(raw, "overridden", ()))

    def at(name):
        return " (override)" if name in overridden else where

    _check_depth(raw, where)
    method = raw.get("method")
    if method is None:
        raise ConfigError(f"config key method is required: one of {', '.join(METHODS)}{where}")
    method = _check("method", method, config_values.choice(*METHODS), at("method"))
    for key in raw:
        if key in TOP:
            continue
        if key not in SECTIONS:
            raise ConfigError(
                f"config: unknown {'section' if isinstance(raw[key], dict) else 'key'} {str(key)!r}; "
                f"allowed: {', '.join(TOP + tuple(SECTIONS))}{where}"
            )
        if not isinstance(raw[key], dict):
            raise ConfigError(f"config: {key} must be a table [{key}]{where}")
    tables = {name: _section(name, cls, raw.get(name, {}), method, at) for name, cls in SECTIONS.items()}
    if "ladder" not in raw:
        tables["ladder"] = None  # the two chains of sampler.hot_*_multiplier
    elif tables["ladder"] is not None:
        try:
            tables["ladder"], tables["sampler"] = config_ladder.complete(
                tables["ladder"], tables["sampler"], raw["ladder"], raw.get("sampler", {}), prefer=overridden
            )
        except sampler_numbers.BoundError as err:
            raise ConfigError(f"{err}{at(err.key)}") from None
    cfg = Config(method=method, description=str(raw.get("description", "")), **tables)
    cfg = dataclasses.replace(cfg, model=_model_kwargs(cfg.model, at))
    _check_consistency(cfg, at, overridden)
    return cfg


def _section(name: str, cls: type, given: Mapping, method: str, at: Any) -> Any:
    """The dataclass of table ``name`` from its ``given`` keys (``None`` if no key applies)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in given:
        dotted = f"{name}.{key}"
        if key not in fields:
            raise ConfigError(f"config key {dotted} is unknown; allowed in [{name}]: {', '.join(fields)}{at(dotted)}")
        methods = fields[key].metadata["methods"]
        if methods is not None and method not in methods:
            raise ConfigError(
                f"config key {dotted} does not apply to method {method!r} "
                f"(it applies to {', '.join(methods)}){at(dotted)}"
            )
    out = {}
    for key, f in fields.items():
        methods = f.metadata["methods"]
        if methods is not None and method not in methods:
            out[key] = None
            continue
        dotted = f"{name}.{key}"
        out[key] = _check(dotted, given.get(key, f.metadata["default"]), f.metadata["check"], at(dotted))
    if all(v is None for v in out.values()):
        return None
    if "kwargs" in out:
        out["kwargs"] = types.MappingProxyType(out["kwargs"])
    return cls(**out)


def _model_kwargs(model: ModelConfig, at: Any) -> ModelConfig:
    allowed = config_values.MODEL_KWARGS[model.name]
    checked = {}
    for key, value in model.kwargs.items():
        dotted = f"model.kwargs.{key}"
        if key not in allowed:
            raise ConfigError(
                f"config key {dotted} is unknown for model {model.name}; allowed: {', '.join(allowed)}{at(dotted)}"
            )
        checked[key] = _check(dotted, value, allowed[key], at(dotted))
    return dataclasses.replace(model, kwargs=types.MappingProxyType(checked))


def _check(name: str, value: Any, check: config_values.Check, where: str) -> Any:
    try:
        return check(value)
    except ValueError as err:
        raise ConfigError(f"config key {name} must be {err}, got {config_values.show(value)}{where}") from None


def _check_consistency(cfg: Config, at: Any, overridden: set[str]) -> None:
    """The rules between keys (:func:`tf_vrre.workflows.image_classification.config_rules.check`) as
    a :class:`ConfigError` naming the file or ``(override)``."""
    try:
        config_rules.check(cfg, prefer=overridden)
    except sampler_numbers.BoundError as err:
        raise ConfigError(f"{err}{at(err.key)}") from None
