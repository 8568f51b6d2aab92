"""The algorithm on tensors and variables (no ``keras.Model``, no files).

- :mod:`.dynamics` - SGLD / SGHMC / M-SGD updates; :mod:`.gradients` - forward pass and
  gradients of every chain's mini-batch energy; :mod:`.energy` - per-example NLLs and the
  energy estimators (:func:`gaussian_nll`, :class:`ControlVariates`);
- :mod:`.control_variates` - snapshot refresh, full-data pass and the coefficient;
- :mod:`.swap_energy` - the energies a swap compares; :mod:`.swaps` - the corrected swap
  (:class:`CorrectedSwap`, :class:`SwapResults`); :mod:`.swap_record` - the per-step swap ring buffer;
- :mod:`.state` - chain / swap / VR state containers; :mod:`.estimators` - variance and
  coefficient estimators; :mod:`.seeds`; :mod:`.schedules`; :mod:`.distribute` - cross-replica sums.
"""

import keras  # noqa: F401  (first: the Keras classes register before a module here runs; see tf_vrre/__init__.py)
