"""The contenders of ``regimes.py`` and how each runs at a budget of per-example gradient evaluations.

The unit and the rule are the library's (:mod:`tf_vrre.sampler.cost`, the posterior-fidelity
benchmark's): a step of ``K`` chains on a batch of ``n`` costs ``K n``, a refresh of the control
variates ``K N``.  Every run's own log (``history["gradient_evaluations"]``) is checked against it.

- ``sghmc``: one SGHMC chain at the cold temperature;
- ``cycsghmc``: one chain, ``CyclicalCosine(2 eta, cycles=4)``, samples in each cycle's sampling phase;
- ``resghmc``: ``K`` chains on a geometric ladder from the cold temperature to the problem's hot
  one, mini-batch swap energies, a :class:`tf_vrre.LadderTuner` in the first 20% of the steps
  (``K >= 3``); ``K`` from the pilot's barrier with mini-batch energies;
- ``vr-resghmc``: the same with ``ControlVariates(period=m)`` (m = 0.4 epochs) on ``make_dataset``
  batches; ``K`` from the pilot's barrier with control variates.

The first 20% of every run's steps are burn-in (the ladder's tuning phase), and the distance is
computed on the cold chain's weights recorded after it.
"""

import dataclasses
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import tf_vrre
from tf_vrre.diagnostics import advisor
from tf_vrre.runs import ladder_file
from tf_vrre.sampler import cost

BURN_IN = 0.2
RECORDS = 200
MAX_CHAINS = 8
PILOT_FRACTION = 0.1
PILOT_EXAMPLES = 256
PILOT_BLOCKS = 3
FIDELITY_EPOCHS = 500
"""The posterior-fidelity benchmark's budget per run, in units of N."""


@dataclasses.dataclass(frozen=True)
class Method:
    label: str
    replica: bool = False
    vr: bool = False
    cycles: int = 0


METHODS = {
    "sghmc": Method("SGHMC"),
    "cycsghmc": Method("cycSGHMC, 4 cycles", cycles=4),
    "resghmc": Method("reSGHMC", replica=True),
    "vr-resghmc": Method("VR-reSGHMC", replica=True, vr=True),
}
ADVICE_METHOD = {
    "one chain": ("sghmc", "cycsghmc"),
    "replica exchange": ("resghmc",),
    "variance-reduced replica exchange": ("vr-resghmc",),
}
"""The methods of the map each recommendation stands for: "one chain" is either single-chain
method (the advisor recommends one chain, replica exchange or variance reduction, not a
step-size schedule), the closer of them on each problem."""


def _learning_rates(problem, temps):
    """eta_h = eta (tau_h / tau)^0.25: the LadderTuner's default rule, also on the initial ladder."""
    return [problem.learning_rate * (t / problem.temperature) ** 0.25 for t in temps]


def build(problem, chains, seed, vr=False, schedule=None):
    """A compiled-ready sampler of ``problem`` with ``chains`` chains (``chains = 1``: no swaps)."""
    if chains == 1:
        temps, lrs = problem.temperature, schedule or problem.learning_rate
    else:
        temps = problem.ladder(chains)
        lrs = _learning_rates(problem, temps)
    return tf_vrre.ReplicaExchangeSampler(
        problem.model_fn,
        data_size=problem.data_size,
        num_chains=chains,
        temperatures=temps,
        learning_rates=lrs,
        dynamics="sghmc",
        weight_decay=problem.weight_decay,
        nll=problem.nll,
        seed=seed,
        swap=tf_vrre.CorrectedSwap(correction=2.0) if chains > 1 else None,
        variance_reduction=tf_vrre.ControlVariates(period=problem.period, batch_size=min(problem.data_size, 10_000))
        if vr
        else None,
    )


def batches(sampler, problem, seed):
    data = problem.data
    if sampler.variance_reduction is not None:
        sampler.set_reference_data(data if len(data) > 1 else data[0])
        return sampler.make_dataset(cost_batch(), repeat=True, drop_remainder=True)
    ds = tf.data.Dataset.from_tensor_slices(data if len(data) > 1 else data[0])
    return ds.shuffle(problem.data_size, seed=seed).repeat().batch(cost_batch(), drop_remainder=True)


def cost_batch():
    import regimes_problems

    return regimes_problems.BATCH


class _Recorder(keras.callbacks.Callback):
    """The cold chain's weights after every executed block of steps."""

    def __init__(self, cycle=None):
        super().__init__()
        self.cycle, self.steps, self.weights_, self.collect = cycle, [], [], []

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.state.step.numpy())
        self.steps.append(step)
        self.weights_.append(np.concatenate([np.ravel(w.numpy()) for w in self.model.chains[0].trainable_weights]))
        self.collect.append(self.cycle is None or self.cycle.in_sampling_phase(step - 1))


def run(method, problem, budget, seed, chains=1):
    """One run of ``method`` within ``budget`` gradient evaluations: distances and what it did."""
    n, N = cost_batch(), problem.data_size
    K = chains if method.replica else 1
    period = problem.period if method.vr else None
    steps = cost.steps_within(budget, K, n, N, period)
    every = max(1, steps // RECORDS)
    steps -= steps % every  # whole blocks of steps_per_execution: fit runs no partial block
    cycle = (
        tf_vrre.CyclicalCosine(2 * problem.learning_rate, total_steps=steps, cycles=method.cycles)
        if method.cycles
        else None
    )
    keras.utils.clear_session()
    sampler = build(problem, K, seed, vr=method.vr, schedule=cycle)
    data = batches(sampler, problem, seed)
    sampler.compile(steps_per_execution=every, jit_compile=False)  # XLA: 3x the compile time, no faster here
    recorder = _Recorder(cycle)
    callbacks = [recorder]
    tuner = None
    if K >= 3:
        t = int(BURN_IN * steps)
        tuner = tf_vrre.LadderTuner(t, first_round_steps=max(1, t // 15))
        callbacks.append(tuner)
    t0 = time.time()
    history = sampler.fit(data, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=callbacks).history
    seconds = time.time() - t0
    logged = float(history["gradient_evaluations"][-1])
    expected = float(cost.gradient_evaluations(steps, K, n, N, period))
    if logged != expected:
        raise RuntimeError(
            f"{method.label}: the sampler logged {logged} gradient evaluations, the rule gives {expected}"
        )
    s = np.array(recorder.steps)
    keep = (s > BURN_IN * steps) & np.array(recorder.collect)
    params = np.array(recorder.weights_)[keep]
    info = {"steps": steps, "chains": K, "gradient_evaluations": logged, "seconds": seconds, "samples": int(keep.sum())}
    if K > 1:
        info |= {
            "swaps": float(history["swaps"][-1]),
            "attempts": float(history["swap_attempts"][-1]),
            "temperatures": [float(v) for v in sampler.state.ladder.temperature.numpy()],
        }
    measured = [] if tuner is None else ladder_file.measured(tuner.record)  # rounds that kept their ladder: no barrier
    if measured:
        last = measured[-1]
        info["tuner"] = {"barrier": float(last["barrier"]), "recommended_chains": int(last["recommended_chains"])}
    return {**problem.distance(params), "info": info}


def pilot(problem, budget, seed=0):
    """The advisor's pilot on ``problem`` within ``PILOT_FRACTION`` of ``budget``: a replica-exchange
    sampler with mini-batch energies on the problem's ladder (as many chains, up to 4, as leave the
    pilot the advisor's minimum, :func:`tf_vrre.diagnostics.advisor.minimum_steps`: the first quarter
    of a refresh period after its snapshot; shorter than two periods, it measures the control
    variates' noise over part of one, a lower bound), measured by :func:`tf_vrre.diagnostics.advise`."""
    n, N, m = cost_batch(), problem.data_size, problem.period
    examples = min(N, PILOT_EXAMPLES)
    share = PILOT_FRACTION * budget
    need = advisor.minimum_steps(m)  # window 1: mini-batch energies, CorrectedSwap's default period
    for K0 in (4, 3, 2):
        steps = advisor.steps_within(share, K0, n, examples, len(problem.probe), PILOT_BLOCKS, m)
        if steps >= need:
            break
    else:
        raise SystemExit(
            f"{problem.name}: a pilot within {PILOT_FRACTION:.0%} of the budget holds {steps} steps with 2 chains, "
            f"fewer than the {need} the advisor needs at m = {m}"
        )
    keras.utils.clear_session()
    sampler = build(problem, K0, seed)
    sampler.compile(steps_per_execution=1, jit_compile=False)
    t0 = time.time()
    data = problem.data if len(problem.data) > 1 else problem.data[0]
    result = advisor.advise(
        sampler,
        data,
        steps,
        batch_size=n,
        period=m,
        probe_inputs=problem.probe,
        measure_examples=examples,
        blocks=PILOT_BLOCKS,
        seed=seed,
        budget=budget,
        directory=Path("runs") / "regimes-pilots" / problem.key,  # its measurements, to re-derive the advice
    )
    spent = K0 * n * steps + result.numbers["pilot"]["measurement_evaluations"]
    if spent > share:
        raise RuntimeError(f"{problem.name}: the pilot cost {spent} gradient evaluations, over {share}")
    return result, {"chains": K0, "steps": steps, "gradient_evaluations": spent, "seconds": time.time() - t0}


def _check_pilot(
    key,
    sampler,
    data,
    budget,
    batch_size,
    period,
    probe,
    label,
    table_says,
    examples=PILOT_EXAMPLES,
    quenches=advisor.QUENCHES,
):
    """The advisor on a sampler of another benchmark, within ``PILOT_FRACTION`` of its budget."""
    N, K = sampler.data_size, sampler.num_chains
    examples = min(N, examples)
    share = PILOT_FRACTION * budget
    steps = advisor.steps_within(share, K, batch_size, examples, len(probe), PILOT_BLOCKS, period, quenches)
    sampler.compile(steps_per_execution=1, jit_compile=False, **({} if sampler.nll is not None else {"loss": data[2]}))
    t0 = time.time()
    a = advisor.advise(
        sampler,
        data[:2] if len(data) > 2 else data,
        steps,
        batch_size=batch_size,
        period=period,
        probe_inputs=probe,
        measure_examples=examples,
        blocks=PILOT_BLOCKS,
        budget=budget,
        quenches=quenches,
        directory=Path("runs") / "regimes-pilots" / key,  # its measurements, to re-derive the advice
    )
    spent = K * batch_size * steps + a.numbers["pilot"]["measurement_evaluations"]
    if spent > share:
        raise RuntimeError(f"{label}: the pilot cost {spent} gradient evaluations, over {share}")
    return {
        "label": label,
        "table_says": table_says,
        "advice": a.to_dict(),
        "pilot_steps": steps,
        "pilot_fraction": spent / budget,
        "seconds": time.time() - t0,
    }


def checks(quick=False):
    """The advisor on the mixture study's main job (``tf-vrre mixture``: reSGLD / VR-reSGLD, tau = (10,
    3000), N = 1e3, eta = 3e-4, m = 4, 3e4 iterations) and on the two networks of the
    posterior-fidelity benchmark (their hand ladder, K = 2, 500 epochs), each from a pilot of 10% of
    that benchmark's budget of its reSG* run (``quick``: the main job's budget a tenth; the networks'
    pilots, 80-300 steps, are short already)."""
    import posterior_fidelity_methods as pf

    from tf_vrre.workflows.gaussian_mixture import target as mixture_target

    out = {}
    keras.utils.clear_session()
    x = mixture_target.make_data(1000, seed=0)
    main = tf_vrre.ReplicaExchangeSampler(
        mixture_target.build_default_model,
        data_size=1000,
        num_chains=2,
        temperatures=[10.0, 3000.0],
        learning_rates=3e-4,
        dynamics="sgld",
        weight_decay=mixture_target.weight_decay(),
        nll=mixture_target.nll,
        seed=0,
        swap=tf_vrre.CorrectedSwap(correction=2.0, smoothing=0.3, period=4),
    )
    iterations = 3e4 / (10 if quick else 1)
    out["mixture-main-job"] = _check_pilot(
        "mixture-main-job",
        main,
        (x,),
        2 * 100 * iterations,
        100,
        4,
        x[:1],
        "mixture main job (N = 1e3, tau = (10, 3000), SGLD)",
        "VR-reSGLD: 156 mode changes against 4 (mixture.md)",
    )
    for name, says in (
        ("digits", "SGLD closest; VR-reSGHMC 15% farther than reSGHMC"),
        ("diabetes", "reSGHMC K=2 closest; VR-reSGHMC 20% farther"),
    ):
        keras.utils.clear_session()
        problem = pf.PROBLEMS[name]()
        method = pf.METHODS["resghmc"]
        sampler, _, nll, _ = pf._sampler(method, problem, 1000, seed=0)
        budget = FIDELITY_EPOCHS * problem.data_size  # also --quick: a tenth of it leaves no pilot (diabetes: 0 steps)
        period = pf.VR_PERIOD_EPOCHS * -(-problem.data_size // problem.batch_size)
        data = (problem.x_train, problem.y_train) + ((nll,) if isinstance(nll, keras.losses.Loss) else ())
        out[name] = _check_pilot(
            name,
            sampler,
            data,
            budget,
            problem.batch_size,
            period,
            problem.x_test[:64],
            f"{name} (posterior fidelity, reSGHMC K = 2, ladder ratio 1.02)",
            says,
            examples=128,
            quenches=4,
        )
    return out
