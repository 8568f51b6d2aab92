"""Saving and loading a sampler: fail at save time, and name what does not match on load.

- :func:`constructor_config` / :func:`constructor_arguments`: the sampler's ``get_config`` and
  ``from_config`` (its constructor arguments, hyperparameters by :func:`tf_vrre.sgmcmc.schedules.serialize`).
- :func:`check_restorable`: ``sampler.get_config()`` (so ``save``, ``to_json``,
  ``ModelCheckpoint``) raises a ``ValueError`` naming the fix when a part of the config cannot be
  rebuilt by ``keras.saving.load_model`` (an unregistered ``model_fn`` or ``nll``, a lambda, an
  unregistered schedule), instead of a file that fails to load later.
- :func:`check_weights_file`: before ``sampler.load_weights(path)`` reads a ``.weights.h5`` or
  ``.keras`` file, compares its number of chains and the shapes of the chain weights with the
  sampler's and names the mismatch (Keras' own message lists layer paths only).
- :func:`check_own_variables`: when Keras loads the sampler's own state variables (also inside
  ``keras.saving.load_model``), names another ``num_chains`` or chain architecture instead of
  Keras' "expected 24 variables, but received 20".
- :class:`SavingHooks`: the sampler's Keras hooks of saving and loading, each behind these checks.
"""

from __future__ import annotations

import io
import json
import os
import re
import warnings
import zipfile
from typing import Any

import keras

import tf_vrre.sampler.placements as placements
from tf_vrre import _keras_compat
from tf_vrre.sgmcmc import schedules

_FIX = (
    "decorate it with @keras.saving.register_keras_serializable() (a named, module-level "
    "function) so that keras.saving.load_model can rebuild the sampler; or save the state only "
    "with sampler.save_weights(path) / tf_vrre.Checkpoint"
)


def _is_serialized_object(value):
    return isinstance(value, dict) and "class_name" in value


def _check_one(name, original, serialized):
    try:
        back = keras.saving.deserialize_keras_object(serialized)
    except Exception as err:  # noqa: BLE001  (any failure: the saved file would not load)
        what = getattr(original, "__name__", type(original).__name__)
        raise ValueError(
            f"cannot serialize the sampler: {name} ({what}) cannot be restored from its config "
            f"({type(err).__name__}: {str(err).splitlines()[0][:200]}); {_FIX}"
        ) from None
    if callable(original) and not isinstance(original, type) and hasattr(original, "__code__") and back is not original:
        raise ValueError(
            f"cannot serialize the sampler: {name} ({original.__name__}) is not the function "
            f"registered under its name; {_FIX}"
        )


LAMBDA_WARNING = "The object being serialized includes a `lambda`"
"""The start of Keras' warning when it serializes a lambda (``serialization_lib``), which would
name a line of this module: a lambda is reported by :func:`check_restorable` instead, as an
error naming the argument, where a config must load (``get_config``, ``save``); a run's identity
(:func:`tf_vrre.runs.ownership.run_identity`) only compares configs and allows one."""


def _serialize(value: Any) -> Any:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=re.escape(LAMBDA_WARNING))
        return keras.saving.serialize_keras_object(value)


def constructor_config(sampler: Any) -> dict:
    """``sampler``'s constructor arguments, serialized (its ``get_config``; inverse:
    :func:`constructor_arguments`)."""
    ser = _serialize
    return {
        "name": sampler.name,
        "model_fn": ser(sampler.model_fn),
        "data_size": sampler.data_size,
        "num_chains": sampler.num_chains,
        "temperatures": schedules.serialize(sampler.temperatures),
        "learning_rates": schedules.serialize(sampler.learning_rates),
        "dynamics": sampler.dynamics,
        "momentum": sampler.momentum,
        "weight_decay": sampler.weight_decay,
        "swap": ser(sampler.swap_rule) if sampler.swap_rule is not None else None,
        "variance_reduction": ser(sampler.variance_reduction) if sampler.variance_reduction is not None else None,
        "energy_mode": sampler.energy_mode_arg,
        "nll": ser(sampler.nll) if sampler.nll is not None else None,
        "seed": sampler.seed,
        "independent_init": sampler.independent_init,
    }


def constructor_arguments(config: dict) -> dict:
    """The constructor's keyword arguments from a :func:`constructor_config` (its ``from_config``)."""
    config = dict(config)
    for k in ("model_fn", "nll", "swap", "variance_reduction"):
        if config.get(k) is not None:
            config[k] = keras.saving.deserialize_keras_object(config[k])
    if config.get("swap") is None:
        config["swap"] = None
    config["temperatures"] = schedules.deserialize(config["temperatures"])
    config["learning_rates"] = schedules.deserialize(config["learning_rates"])
    return config


def check_restorable(sampler: Any, config: dict) -> None:
    """``ValueError`` naming the first constructor argument of ``config`` that would not load.

    Args:
      sampler: the :class:`tf_vrre.ReplicaExchangeSampler` (for the original objects).
      config: its serialized constructor arguments.
    """
    originals = {
        "model_fn": sampler.model_fn,
        "nll": sampler.nll,
        "swap": sampler.swap_rule,
        "variance_reduction": sampler.variance_reduction,
    }
    for name, value in config.items():
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if _is_serialized_object(item):
                label = name if not isinstance(value, list) else f"{name}[{i}]"
                _check_one(label, originals.get(name), item)


# ---- loading -----------------------------------------------------------------------------------
def _h5_from(path):
    import h5py

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            config = json.loads(z.read("config.json")) if "config.json" in z.namelist() else None
            if "model.weights.h5" not in z.namelist():
                return None, config
            return h5py.File(io.BytesIO(z.read("model.weights.h5")), "r"), config
    return h5py.File(path, "r"), None


def _shapes(group):
    import h5py

    out = []
    group.visititems(lambda name, obj: out.append(tuple(obj.shape)) if isinstance(obj, h5py.Dataset) else None)
    return sorted(out)


def check_weights_file(sampler, path):
    """``ValueError`` naming a mismatch between a weights file and ``sampler`` (chains, shapes).

    Reads the file's structure only; files it cannot read are left to Keras.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        return
    try:
        h5, config = _h5_from(path)
    except Exception:  # noqa: BLE001  (not an h5 / .keras file: Keras reports it)
        return
    if config is not None:
        k = config.get("config", {}).get("num_chains")
        if k is not None and k != sampler.num_chains:
            raise ValueError(
                f"{path} holds a sampler with num_chains={k}; this sampler has num_chains={sampler.num_chains}"
            )
    if h5 is None:
        return
    with h5:
        chains = h5.get("chains")
        if chains is None:
            return
        groups = sorted(chains.keys())
        if len(groups) != sampler.num_chains:
            raise ValueError(f"{path} holds {len(groups)} chains; this sampler has num_chains={sampler.num_chains}")
        theirs = _shapes(chains[groups[0]])
        ours = sorted(tuple(v.shape) for v in sampler.cold_model.weights)
        if theirs != ours:
            raise ValueError(
                f"{path}: its chains have another architecture than this sampler's model_fn builds: "
                f"{len(theirs)} weight arrays {_summary(theirs)} in the file, {len(ours)} "
                f"{_summary(ours)} here"
            )


def _summary(shapes, limit=6):
    text = ", ".join(str(s) for s in shapes[:limit])
    return f"[{text}{', ...' if len(shapes) > limit else ''}]"


def own_variables(layer):
    """The variables Keras saves for ``layer`` itself (``vars/0, vars/1, ...``), in that order."""
    return _keras_compat.own_variables(layer)


def check_own_variables(sampler, store):
    """``ValueError`` naming the mismatch between a saved sampler state ``store`` and ``sampler``."""
    own = own_variables(sampler)
    ours = [tuple(v.shape) for v in own]
    theirs = [tuple(store[str(i)].shape) for i in range(len(store.keys()))]
    if ours == theirs:
        return
    names = [v.name for v in own]
    t = names.index("temperature")
    if len(theirs) > t and len(theirs[t]) == 1 and theirs[t][0] != sampler.num_chains:
        raise ValueError(
            f"the saved sampler has num_chains={theirs[t][0]}; this sampler has num_chains={sampler.num_chains}"
        )
    i = next((j for j, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
    first = (
        f"variable {i} ({names[i] if i < len(names) else '-'}) has shape "
        f"{theirs[i] if i < len(theirs) else 'none'} in the file, {ours[i] if i < len(ours) else 'none'} here"
    )
    raise ValueError(
        f"the saved sampler state does not fit this sampler: {len(theirs)} state variables in the file, "
        f"{len(ours)} here ({first}); its chains have another architecture (one velocity per weight "
        "array): did model_fn, or the function registered under its name, change since the file was "
        "saved?"
    )


class SavingHooks:
    """Mixin of :class:`tf_vrre.ReplicaExchangeSampler`: Keras' hooks of saving and loading (config,
    compile config, ``save``, ``load_weights``, the sampler's own variables), each after the check
    of this module that makes a mismatch fail before anything is written or read."""

    def get_compile_config(self) -> dict:
        """Serialized ``compile`` arguments (loss, metrics, steps_per_execution, jit_compile)."""
        if not getattr(self, "_compile_args", None):
            return {}
        return {k: keras.saving.serialize_keras_object(v) for k, v in self._compile_args.items()}

    def compile_from_config(self, config: dict) -> None:
        """Re-compiles from :meth:`get_compile_config` output (used by ``keras.saving``)."""
        if config:
            self.compile(**{k: keras.saving.deserialize_keras_object(v) for k, v in config.items()})

    def get_config(self) -> dict:
        """The constructor arguments, serialized (:func:`tf_vrre.sampler.saving.constructor_config`);
        ``ValueError`` if they cannot be restored (e.g. an unregistered ``model_fn``), so a save
        fails now instead of a later load."""
        config = {**self._config(), "placement": self.placement}  # not part of the run's identity
        check_restorable(self, config)
        return config

    def _config(self) -> dict:
        """The serialized constructor arguments, unchecked: what a run's identity records
        (:func:`tf_vrre.runs.ownership.run_identity`), also for a sampler that would not load."""
        return constructor_config(self)

    def save(self, filepath: Any, *args: Any, **kwargs: Any) -> None:
        """``keras.Model.save`` after checking that the config can be restored (nothing is written
        otherwise; see :func:`tf_vrre.sampler.saving.check_restorable`)."""
        self.get_config()
        return super().save(filepath, *args, **kwargs)

    def load_own_variables(self, store: Any) -> None:
        check_own_variables(self, store)  # names another num_chains / architecture
        super().load_own_variables(store)
        self.chains_restored()  # chain per replica: the replicas take the loaded state at the next step

    def load_weights(self, filepath: Any, *args: Any, **kwargs: Any) -> None:
        """``keras.Model.load_weights`` after checking that the file's chains match this sampler
        (``ValueError`` naming another ``num_chains`` or architecture)."""
        check_weights_file(self, filepath)
        return super().load_weights(filepath, *args, **kwargs)

    @classmethod
    def from_config(cls, config: dict) -> Any:
        return cls(**placements.for_loading(constructor_arguments(config)))
