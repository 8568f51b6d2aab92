"""Mixing diagnostics of a run: is the sampler mixing?

Pure functions over arrays and run files (``RUN/swaps/`` from :class:`tf_vrre.SwapLogger`,
``RUN/samples/`` from :class:`tf_vrre.SampleCollector`):

- replica flow (:mod:`.replicas`): each state's slot over time, round trips cold -> hottest
  -> cold per 1,000 steps, mean first-passage time cold -> hot, per-pair acceptance with
  batch-means errors, the sigma^2 trend;
- function space (:mod:`.function_space`): the rank-normalised split R-hat and bulk ESS of the
  stored predictive at every held-out input, across runs / seeds as chains, summarised over the
  inputs: what the verdict is decided on;
- chain quality (:mod:`.chains`): ESS and R-hat through ``tfp.mcmc`` on scalar summaries
  (cold energy, sample energy, weight norm: context; the mixture's beta) across runs / seeds or
  split chains, and the rank-normalised R-hat / bulk ESS of any ``[chains, draws, ...]`` array;
- posterior fidelity (:mod:`.fidelity`): agreement, total variation, Wasserstein-1 / KS of a
  sampler's predictive against a reference's, e.g. full-batch NUTS (:mod:`tf_vrre.diagnostics.hmc`);
- :func:`diagnose` / :func:`verdict` / :func:`format_verdict` / :func:`format_table` /
  :func:`to_json` (:mod:`.report`), the figures
  (:mod:`.plots`) and :func:`to_inference_data` (ArviZ, optional extra ``[arviz]``);
- where replica exchange pays: :func:`advise` (:mod:`.advisor`) runs a short pilot and recommends
  one chain, replica exchange with ``K`` chains, or variance-reduced swaps, from the swap noise with
  and without control variates, the cost per step and the barrier (the rules: :mod:`.advice`).

``tf-vrre diagnose --run RUN`` runs all of it.
"""

from typing import Any

from tf_vrre.diagnostics.advice import Advice
from tf_vrre.diagnostics.arviz import to_inference_data
from tf_vrre.diagnostics.chains import (
    bulk_ess,
    chain_summary,
    effective_sample_size,
    potential_scale_reduction,
    rank_normalized_rhat,
    split_chains,
)
from tf_vrre.diagnostics.fidelity import (
    agreement,
    classification_fidelity,
    classification_nll,
    ks_distance,
    regression_fidelity,
    regression_nll,
    total_variation,
    wasserstein_1,
)
from tf_vrre.diagnostics.replicas import pair_acceptance, replica_flow, round_trips, sigma2_trend, slot_paths
from tf_vrre.diagnostics.report import diagnose, format_table, format_verdict, to_json, verdict
from tf_vrre.diagnostics.runs import SwapLog, locate, read_samples, read_swap_log

__all__ = [
    "advise",
    "Advice",
    "to_inference_data",
    "chain_summary",
    "effective_sample_size",
    "potential_scale_reduction",
    "split_chains",
    "rank_normalized_rhat",
    "bulk_ess",
    "pair_acceptance",
    "replica_flow",
    "round_trips",
    "sigma2_trend",
    "slot_paths",
    "diagnose",
    "format_table",
    "format_verdict",
    "verdict",
    "to_json",
    "SwapLog",
    "locate",
    "read_samples",
    "read_swap_log",
]
__all__ += [
    "agreement",
    "total_variation",
    "wasserstein_1",
    "ks_distance",
    "classification_nll",
    "regression_nll",
    "classification_fidelity",
    "regression_fidelity",
]


def __getattr__(name: str) -> Any:
    """``advise`` on first use: its pilot runs a sampler, and the rest of this package reads run
    files without TensorFlow (the benchmarks refuse bad flags before it is imported)."""
    if name == "advise":
        from tf_vrre.diagnostics.advisor import advise

        return advise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
