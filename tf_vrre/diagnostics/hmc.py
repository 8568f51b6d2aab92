"""A full-batch NUTS reference for the posterior the sampler targets (TensorFlow Probability).

For a Keras model with trainable weights ``beta`` (all of them, flattened into one vector of
length ``D``), a per-example negative log-likelihood ``l``, N training examples, prior precision
``wd`` and temperature ``tau``, the density is the one :class:`tf_vrre.ReplicaExchangeSampler`
samples with ``weight_decay=wd`` at temperature ``tau``::

    log pi(beta) = -U(beta) / tau,   U(beta) = sum_{i=1..N} l(x_i | beta) + wd/2 ||beta||^2

(:mod:`tf_vrre.sgmcmc.energy`).  :class:`FullBatchPosterior` evaluates it through the model itself
(``model.stateless_call`` vectorised over chains), so the reference and the sampler cannot
disagree on the network, the likelihood or the prior.  :func:`sample_nuts` runs several
independent No-U-Turn chains (``tfp.mcmc.NoUTurnSampler`` with dual-averaging step-size
adaptation during warm-up, XLA-compiled) in chunks, reporting progress between chunks.

Every leapfrog step costs one gradient of the full-data energy, i.e. ``N`` per-example gradient
evaluations per chain: this is a reference for networks of up to a few thousand weights and a
few thousand examples, to check a stochastic-gradient sampler against, not a sampler for
production networks.

#### References

Hoffman and Gelman (2014), "The No-U-Turn sampler", JMLR 15.
Izmailov, Vikram, Hoffman, Wilson (2021), "What are Bayesian neural network posteriors really
like?", ICML.
"""

import collections
import time

import keras
import numpy as np
import tensorflow as tf

from tf_vrre.sgmcmc import energy


class NutsDraws(collections.namedtuple("NutsDraws", ["draws", "step_size", "leapfrogs", "divergences", "seconds"])):
    """The result of :func:`sample_nuts`.

    Fields:
      draws: float32 ``[chains, draws, D]``, flat weight vectors after warm-up (thinned).
      step_size: float64 ``[chains]``, each chain's adapted leapfrog step size.
      leapfrogs: float64, mean leapfrog steps per NUTS iteration after warm-up.
      divergences: int, divergent trajectories after warm-up (all chains).
      seconds: float, wall time of the whole run (warm-up included).
    """


class FullBatchPosterior:
    """The sampler's target ``exp(-U(beta) / tau)`` over a Keras model's flattened weights.

    Args:
      model: a built ``keras.Model`` (its weights are not changed; the flat vector follows
        ``model.trainable_variables``).  Models with non-trainable state used in the forward
        pass (BatchNormalization) are refused: their density depends on that state.
      data: ``(x, y)`` arrays, the N training examples.
      nll: per-example negative log-likelihood: a callable ``nll(x, y, y_pred) -> [batch]`` (the
        sampler's ``nll=``) or a Keras loss instance or name (the loss given to ``compile``).
      weight_decay: the prior precision ``wd >= 0`` (the sampler's ``weight_decay``).
      temperature: ``tau > 0``; 1 is the Bayesian posterior.

    Example:
      >>> model = net()
      >>> posterior = FullBatchPosterior(model, (x, y),
      ...     keras.losses.SparseCategoricalCrossentropy(from_logits=True), weight_decay=1.0)
      >>> beta = posterior.flatten(model)
      >>> beta.shape, bool(np.isclose(posterior.log_prob(beta[None])[0], -posterior.energy(beta[None])[0]))
      ((6,), True)
    """

    def __init__(self, model, data, nll, weight_decay, temperature=1.0):
        if not isinstance(model, keras.Model) or not model.built:
            raise TypeError(f"model must be a built keras.Model, got {model!r}")
        if model.non_trainable_variables:
            raise ValueError(
                "model: non-trainable variables (e.g. BatchNormalization statistics) would make the "
                "density depend on state outside beta; use a model without them"
            )
        for name, value in (("weight_decay", weight_decay), ("temperature", temperature)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if weight_decay < 0 or not temperature > 0:
            raise ValueError(f"need weight_decay >= 0 and temperature > 0, got {weight_decay!r}, {temperature!r}")
        x, y = data
        if len(x) != len(y) or not len(x):
            raise ValueError(f"data: x and y must hold the same number (> 0) of examples, got {len(x)} and {len(y)}")
        if isinstance(nll, (str, keras.losses.Loss)):
            nll = energy.resolve_nll(nll)
        energy.check_nll_callable(nll)
        self.model, self.nll = model, nll
        self.weight_decay, self.temperature = float(weight_decay), float(temperature)
        self.x, self.y = tf.constant(x), tf.constant(y)
        self.data_size = len(x)
        self.shapes = [tuple(v.shape) for v in model.trainable_variables]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.dimension = sum(self.sizes)

    def flatten(self, weights):
        """A ``keras.Model`` (same architecture) or its trainable weight list as one float32 vector ``[D]``."""
        if isinstance(weights, keras.Model):
            weights = [v.numpy() for v in weights.trainable_variables]
        flat = [np.asarray(w, np.float32).ravel() for w in weights]
        if [f.size for f in flat] != self.sizes:
            raise ValueError(
                f"weights: expected {len(self.sizes)} arrays of sizes {self.sizes}, got sizes {[f.size for f in flat]}"
            )
        return np.concatenate(flat)

    def unflatten(self, beta):
        """The trainable weight list (numpy arrays) of one flat vector ``[D]``."""
        beta = np.asarray(beta, np.float32)
        return [p.reshape(s) for p, s in zip(np.split(beta, np.cumsum(self.sizes)[:-1]), self.shapes)]

    def _outputs(self, beta, x):
        weights = [tf.reshape(p, s) for p, s in zip(tf.split(beta, self.sizes), self.shapes)]
        outputs, _ = self.model.stateless_call(weights, [], x, training=False)
        return outputs

    def _energy(self, beta):
        """``U(beta)`` of a batch of flat vectors ``[C, D]`` (float32 in, float64 sums out)."""

        def one(b):
            nll = energy.per_example(self.nll(self.x, self.y, self._outputs(b, self.x)))
            return tf.reduce_sum(tf.cast(nll, tf.float64))

        nll = tf.vectorized_map(one, beta)
        prior = 0.5 * self.weight_decay * tf.reduce_sum(tf.square(tf.cast(beta, tf.float64)), axis=-1)
        return nll + prior

    def log_prob(self, beta):
        """``-U(beta) / tau`` of flat vectors ``[C, D]`` as float32 ``[C]`` (a tensor; differentiable)."""
        beta = tf.convert_to_tensor(beta, tf.float32)
        return tf.cast(-self._energy(beta) / self.temperature, tf.float32)

    def energy(self, beta):
        """``U(beta)`` of flat vectors ``[C, D]`` as float64 numpy ``[C]``."""
        return self._energy(tf.convert_to_tensor(beta, tf.float32)).numpy()

    def predict(self, beta, x, batch_size=256):
        """The model's outputs at flat vectors ``[..., D]`` on inputs ``x``: numpy ``[..., n, outputs]``
        (``batch_size`` weight vectors at a time)."""
        beta = np.asarray(beta, np.float32)
        lead = beta.shape[:-1]
        flat = beta.reshape(-1, self.dimension)
        fn = tf.function(lambda b, xb: tf.vectorized_map(lambda w: self._outputs(w, xb), b), jit_compile=True)
        x = tf.constant(x)
        out = np.concatenate(
            [fn(tf.constant(flat[i : i + batch_size]), x).numpy() for i in range(0, len(flat), batch_size)], 0
        )
        return out.reshape(*lead, *out.shape[1:])


def _kernel(posterior, num_warmup, initial_step_size, max_tree_depth, target_accept, chains):
    import tensorflow_probability as tfp

    nuts = tfp.mcmc.NoUTurnSampler(
        posterior.log_prob, step_size=tf.fill([chains, 1], float(initial_step_size)), max_tree_depth=max_tree_depth
    )
    return tfp.mcmc.DualAveragingStepSizeAdaptation(
        nuts, num_adaptation_steps=num_warmup, target_accept_prob=target_accept
    )


def _check_run(initial_state, num_warmup, num_draws, thin, chunk, max_tree_depth):
    state = np.asarray(initial_state, np.float32)
    if state.ndim != 2 or not np.all(np.isfinite(state)):
        raise ValueError(f"initial_state must be finite [chains, D], got shape {state.shape}")
    for name, value, low in (
        ("num_warmup", num_warmup, 1),
        ("num_draws", num_draws, 1),
        ("thin", thin, 1),
        ("chunk", chunk, 1),
        ("max_tree_depth", max_tree_depth, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if num_draws % thin or num_warmup % chunk or num_draws % chunk or chunk % thin:
        raise ValueError(
            f"num_warmup ({num_warmup}) and num_draws ({num_draws}) must be multiples of chunk "
            f"({chunk}), and num_draws and chunk multiples of thin ({thin})"
        )
    return state


def _chunk_runner(kernel, chunk, thin):
    """One XLA-compiled call of ``chunk`` NUTS iterations, every ``thin``-th kept:
    ``run_chunk(current, previous_kernel_results, key)`` -> ``tfp.mcmc.sample_chain``'s result, whose
    trace holds each kept iteration's leapfrog steps and divergence flags."""
    import tensorflow_probability as tfp

    def trace(_, results):
        inner = results.inner_results
        return inner.leapfrogs_taken, inner.has_divergence

    @tf.function(jit_compile=True)
    def run_chunk(current, previous, key):
        return tfp.mcmc.sample_chain(
            chunk // thin,
            current,
            previous_kernel_results=previous,
            kernel=kernel,
            num_steps_between_results=thin - 1,
            trace_fn=trace,
            return_final_kernel_results=True,
            seed=key,
        )

    return run_chunk


def _progress_line(done, num_warmup, num_draws, results, taken, seconds):
    """The progress report after ``done`` iterations: phase, mean step size and leapfrogs, wall time."""
    phase = f"warm-up {done}/{num_warmup}" if done <= num_warmup else f"draws {done - num_warmup}/{num_draws}"
    return (
        f"NUTS {phase}: step size {np.mean(results.new_step_size.numpy()):.3g}, "
        f"{np.mean(taken.numpy()):.0f} leapfrogs/iteration, {seconds:.0f} s"
    )


def sample_nuts(
    posterior,
    initial_state,
    num_warmup,
    num_draws,
    seed,
    thin=1,
    max_tree_depth=7,
    target_accept=0.8,
    initial_step_size=1e-3,
    chunk=50,
    progress=None,
):
    """Independent NUTS chains on ``posterior``, warm-up with dual-averaging step-size adaptation.

    Each chain adapts its own step size for ``num_warmup`` iterations (Hoffman and Gelman's
    dual averaging towards ``target_accept``), then keeps the averaged step size for
    ``num_draws`` iterations, of which every ``thin``-th is kept.  The chains run batched in one
    XLA-compiled loop of ``chunk`` iterations at a time; the same ``seed`` gives the same draws.

    Args:
      posterior: a :class:`FullBatchPosterior`.
      initial_state: ``[chains, D]`` starting weight vectors (e.g. independent initialisations).
      num_warmup: adaptation iterations (discarded); num_draws: iterations after warm-up.
      seed: integer seed.
      thin: keep every ``thin``-th draw.
      max_tree_depth: at most ``2**max_tree_depth - 1`` leapfrog steps per iteration.
      target_accept: dual averaging's target acceptance probability.
      initial_step_size: the step size warm-up starts from.
      chunk: iterations per compiled call (``num_warmup`` and ``num_draws`` multiples of it).
      progress: optional ``callable(str)``, called after every chunk (e.g. ``print``).

    Returns:
      :class:`NutsDraws`.

    Example:
      >>> model = net()
      >>> posterior = FullBatchPosterior(model, (x, y),
      ...     keras.losses.SparseCategoricalCrossentropy(from_logits=True), weight_decay=1.0)
      >>> start = np.stack([posterior.flatten(model)] * 2)             # two chains
      >>> run = sample_nuts(posterior, start, num_warmup=20, num_draws=20,
      ...                  seed=0, chunk=10, max_tree_depth=3)
      >>> run.draws.shape
      (2, 20, 6)
    """
    state = _check_run(initial_state, num_warmup, num_draws, thin, chunk, max_tree_depth)
    if state.shape[1] != posterior.dimension:
        raise ValueError(f"initial_state: D = {state.shape[1]}, the posterior has D = {posterior.dimension}")
    kernel = _kernel(posterior, num_warmup, initial_step_size, max_tree_depth, target_accept, state.shape[0])
    run_chunk = _chunk_runner(kernel, chunk, thin)
    start = time.perf_counter()
    current = tf.constant(state)
    results = kernel.bootstrap_results(current)
    draws, leapfrogs, divergences = [], [], 0
    for i in range((num_warmup + num_draws) // chunk):
        key = tf.random.experimental.stateless_fold_in(tf.constant([int(seed), 0], tf.int64), i)
        out = run_chunk(current, results, key)
        chain, (taken, divergent), results = out.all_states, out.trace, out.final_kernel_results
        current = chain[-1]
        done = (i + 1) * chunk
        if done > num_warmup:
            draws.append(np.moveaxis(chain.numpy(), 0, 1))
            leapfrogs.append(float(np.mean(taken.numpy())))
            divergences += int(np.sum(divergent.numpy()))
        if progress is not None:
            progress(_progress_line(done, num_warmup, num_draws, results, taken, time.perf_counter() - start))
    step = np.asarray(results.new_step_size.numpy(), np.float64).reshape(state.shape[0])
    return NutsDraws(
        np.concatenate(draws, 1), step, float(np.mean(leapfrogs)), divergences, time.perf_counter() - start
    )
