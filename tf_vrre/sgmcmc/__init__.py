"""The algorithm on tensors and variables (no ``keras.Model``, no files).

- :mod:`.dynamics` - SGLD / SGHMC / M-SGD updates; :mod:`.gradients` - forward pass and
  gradients of every chain's mini-batch energy; :mod:`.energy` - per-example NLLs and the
  energy estimators (:func:`~tf_vrre.sgmcmc.energy.gaussian_nll`);
- :mod:`.control_variates` - :class:`~tf_vrre.sgmcmc.control_variates.ControlVariates`, snapshot
  refresh, full-data pass and the coefficient;
- :mod:`.swap_energy` - the energies a swap compares; :mod:`.swaps` - the corrected swap
  (``CorrectedSwap``, ``SwapResults``); :mod:`.swap_record` - the per-step swap ring buffer;
- :mod:`.state` - the sampler's state record (``SamplerState``: ladder, chains, swap, control
  variates, loss scale); :mod:`.estimators` - variance and coefficient estimators;
- :mod:`.schedules` - schedules of the step and the one check of every hyperparameter argument;
  :mod:`.seeds`; :mod:`.distribute` - cross-replica sums.
"""

import keras  # noqa: F401  (first: the Keras classes register before a module here runs; see tf_vrre/__init__.py)
