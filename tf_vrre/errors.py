"""The base class of tf_vrre's own errors (no TensorFlow: the bottom layer, beside ``numerics``).

An error tf_vrre raises about what it was given or found — a config value, the data, a run
directory and its files, a lock another process holds, the environment (a TPU address, an
offline data set), a chain that diverged — is a :class:`TfVrreError` (public as
``tf_vrre.TfVrreError``).  Each keeps its
conventional base too (``ValueError``, ``OSError``, ``FileNotFoundError``,
``tf.errors.InvalidArgumentError``), so existing ``except ValueError:`` handlers keep working:

- ``ValueError``: :class:`tf_vrre.runs.run_json.RunDirError` (and its
  :class:`tf_vrre.runs.locks.RunLockedError`, :class:`tf_vrre.callbacks.checkpoint.CheckpointError`),
  :class:`tf_vrre.runs.samples.RunFileError`, :class:`tf_vrre.RunMismatchError`,
  :class:`tf_vrre.callbacks.checkpoint.EpochsError`,
  :class:`tf_vrre.workflows.image_classification.config.ConfigError`,
  :class:`tf_vrre.workflows.step_bounds.BoundError`,
  :class:`tf_vrre.sampler.execution.ExecutionError`, :class:`tf_vrre.sampler.placements.PlacementError`;
- ``OSError``: :class:`tf_vrre.runs.atomic.SymlinkError`, :class:`tf_vrre.runs.atomic.SpecialFileError`,
  :class:`tf_vrre.runs.locks.Busy`; ``FileNotFoundError``:
  :class:`tf_vrre.workflows.image_classification.data.tfds_source.OfflineError`;
- ``tf.errors.InvalidArgumentError``: :class:`tf_vrre.SamplerError` (:class:`tf_vrre.DivergenceError`,
  :class:`tf_vrre.InvariantError`).

The command line (``tf-vrre``) prints a :class:`TfVrreError` as one line, wherever it is raised;
any other exception is a bug and keeps its traceback.  A wrong argument of a Python call (a
negative ``batch_size``, a string where a number belongs) stays a plain ``ValueError`` /
``TypeError``.

Example:
  >>> try:
  ...     tf_vrre.load_samples("no/such/samples")
  ... except tf_vrre.TfVrreError as err:
  ...     print(type(err).__name__, isinstance(err, ValueError))
  RunFileError True
"""

__all__ = ["TfVrreError"]


class TfVrreError(Exception):
    """An error tf_vrre raised on purpose about its inputs, files, environment or a run; the
    message names what and, where there is one, the remedy (see the module docstring)."""
