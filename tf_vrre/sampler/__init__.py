"""The Keras model that runs the chains under ``fit``: :class:`ReplicaExchangeSampler`.

- :mod:`.replica_exchange` - the model and its ``train_step``; :mod:`.construction` - its
  argument checks, chains and saved variables (its state: :mod:`tf_vrre.sgmcmc.state`);
- :mod:`.hyperparameters` - learning rates / temperatures in force; :mod:`.batch` - the batch
  layout; :mod:`.input_checks` / :mod:`.datasets` - input checks, reference data and the indexed dataset;
- :mod:`.invariants` - in-graph runtime checks and :class:`SamplerError`;
- :mod:`.chain_metrics`, :mod:`.listeners`, :mod:`.saving`, :mod:`.xla`.
"""

import keras  # noqa: F401  (first: the Keras classes register before a module here runs; see tf_vrre/__init__.py)

from tf_vrre.sampler.batch import INDEX_KEY, unpack
from tf_vrre.sampler.replica_exchange import ReplicaExchangeSampler, require_sampler

__all__ = ["ReplicaExchangeSampler", "require_sampler", "INDEX_KEY", "unpack"]
