"""The full-batch NUTS reference of ``posterior_fidelity.py``: built (``reference``), written
atomically as ``benchmarks/reference/<problem>.npz`` (the predictive: per-chain BMA
probabilities or the draws of f, with R-hat / ESS per test point) and ``.json`` (settings,
convergence, versions), and read back by ``run``, checked before any work (exit 2 and one line
naming the file).
"""

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

import arguments
import numpy as np

from tf_vrre.runs import atomic

HERE = Path(__file__).resolve().parent
REFERENCE_KEYS = (  # what `run` reads of a reference's JSON
    "fingerprint",
    "settings",
    "seconds",
    "dimension",
    "convergence",
    "divergences",
    "step_size",
    "leapfrogs_per_iteration",
    "gradient_evaluations_per_chain",
    "command",
    "date",
)
PREDICTIVE = {"classification": "probs_by_chain", "regression": "draws"}
REBUILD = "; rebuild it with `python benchmarks/posterior_fidelity.py reference --force`"


def environment():
    """Versions, hardware, git commit and date for the JSON files."""
    import keras
    import sklearn
    import tensorflow as tf
    import tensorflow_probability as tfp

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain"], cwd=HERE, capture_output=True, text=True, check=True
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = None, None
    return {
        "command": "python benchmarks/posterior_fidelity.py " + " ".join(sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit,
        "git_dirty": dirty,
        "hardware": {
            "machine": platform.machine(),
            "processor": platform.processor() or None,
            "cpus": os.cpu_count(),
            "system": platform.system(),
        },
        "versions": {
            "python": platform.python_version(),
            "tensorflow": tf.__version__,
            "tensorflow_probability": tfp.__version__,
            "keras": keras.__version__,
            "numpy": np.__version__,
            "scikit-learn": sklearn.__version__,
        },
    }


def write_json(path, obj):
    """Writes ``obj`` to ``path`` atomically (a symbolic link there is replaced, never followed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, obj, indent=1, newline=True)


def write_reference(npz, meta, arrays, info):
    """Writes a reference: its arrays to ``npz`` and its record to ``meta``, each atomically (a
    symbolic link at either name, or beside it, is replaced or left alone, never written through)."""
    atomic.savez(npz, **arrays)
    write_json(meta, info)


def reference_predictive(problem, outputs):
    """What is stored of the reference: per-chain BMA probabilities (classification) or the draws of f."""
    from tf_vrre.runs.samples import softmax

    if problem.kind == "classification":
        return {"probs_by_chain": softmax(outputs).mean(1)}
    return {"draws": outputs[..., 0].astype(np.float32)}


def convergence(problem, outputs):
    """R-hat and ESS over the chains of the predictive at each test point: the probability of the
    reference's top class (classification) or f(x) (regression)."""
    from tf_vrre import diagnostics
    from tf_vrre.runs.samples import softmax

    if problem.kind == "classification":
        p = softmax(outputs)
        top = p.mean((0, 1)).argmax(-1)
        summary = p[..., np.arange(len(top)), top]  # [chains, draws, n]
    else:
        summary = outputs[..., 0]
    rhat = diagnostics.potential_scale_reduction(summary, split=True)
    ess = diagnostics.effective_sample_size(summary, split=True)
    return {"rhat": rhat, "ess": ess}, {
        "summary": ("p(top class | x)" if problem.kind == "classification" else "f(x)") + " at each test point",
        "rhat_max": float(rhat.max()),
        "rhat_median": float(np.median(rhat)),
        "rhat_fraction_above_1.01": float(np.mean(rhat > 1.01)),
        "ess_min": float(ess.min()),
        "ess_median": float(np.median(ess)),
        "ess_max": float(ess.max()),
    }


def build_reference(problem, settings, out_dir, force):
    """Runs NUTS on ``problem`` and writes ``out_dir/<name>.npz`` and ``.json``."""
    import keras

    from tf_vrre.diagnostics import hmc

    npz, meta = Path(out_dir) / f"{problem.name}.npz", Path(out_dir) / f"{problem.name}.json"
    if (npz.exists() or meta.exists()) and not force:
        raise SystemExit(f"reference: {npz} exists; pass --force to replace it")
    keras.utils.set_random_seed(settings["seed"])
    model = problem.model_fn()
    posterior = hmc.FullBatchPosterior(model, (problem.x_train, problem.y_train), problem.nll(), problem.weight_decay)
    starts = []
    for c in range(settings["chains"]):  # independent Keras (Glorot) initialisations
        keras.utils.set_random_seed(settings["seed"] + 1 + c)
        starts.append(posterior.flatten(problem.model_fn()))
    print(
        f"reference {problem.name}: D = {posterior.dimension} weights, N = {problem.data_size}, "
        f"{settings['chains']} chains x ({settings['warmup']} warm-up + {settings['draws']} draws)",
        flush=True,
    )
    run = hmc.sample_nuts(
        posterior,
        np.stack(starts),
        settings["warmup"],
        settings["draws"],
        settings["seed"],
        thin=settings["thin"],
        max_tree_depth=settings["max_tree_depth"],
        chunk=settings["chunk"],
        progress=lambda s: print(f"  {problem.name}: {s}", flush=True),
    )
    outputs = posterior.predict(run.draws, problem.x_test)
    arrays, diag = convergence(problem, outputs)
    predictive = reference_predictive(problem, outputs)
    per_iteration = run.leapfrogs * problem.data_size
    info = {
        **environment(),
        "problem": problem.name,
        "fingerprint": problem.fingerprint(),
        "settings": settings,
        "dimension": posterior.dimension,
        "seconds": run.seconds,
        "step_size": run.step_size.tolist(),
        "leapfrogs_per_iteration": run.leapfrogs,
        "divergences": run.divergences,
        "gradient_evaluations_per_chain": per_iteration * (settings["warmup"] + settings["draws"]),
        "convergence": diag,
    }
    write_reference(npz, meta, {**predictive, **arrays}, info)
    print(
        f"  {problem.name}: {run.seconds:.0f} s, R-hat max {diag['rhat_max']:.3f} "
        f"(median {diag['rhat_median']:.3f}), "
        f"ESS min {diag['ess_min']:.0f} (median {diag['ess_median']:.0f}), {run.divergences} divergences",
        flush=True,
    )
    return info


def read_reference(npz, meta, kind):
    """The predictive array and the JSON of a stored reference of a ``kind`` problem, checked
    before any work: exit 2 with one line naming the file if it is missing, truncated, not valid
    JSON, lacks a key, holds a NaN or an infinity, has fewer than two chains, or (classification)
    rows that are not probabilities."""
    what = "run: --reference"
    info = arguments.read_json(meta, what, keys=REFERENCE_KEYS, hint=REBUILD)
    key = PREDICTIVE[kind]
    a = arguments.read_npz(npz, (key,), what, hint=REBUILD)[key]
    if a.ndim != 3 or a.shape[0] < 2:
        arguments.die(f"{what}: {npz}: {key} has shape {list(a.shape)}; expected [chains >= 2, ., .]{REBUILD}")
    if not np.issubdtype(a.dtype, np.floating):
        arguments.die(f"{what}: {npz}: {key} holds {a.dtype} values, not floats{REBUILD}")
    bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
    if bad:
        arguments.die(f"{what}: {npz}: {key} holds {bad} NaN or infinite values{REBUILD}")
    if kind == "classification" and (a.min() < 0 or np.abs(a.sum(-1) - 1).max() > 1e-3):
        arguments.die(f"{what}: {npz}: {key} rows are not probabilities (in [0, 1], summing to 1){REBUILD}")
    return {key: a}, info


def load_reference(problem, ref_dir):
    """The stored reference of ``problem``, checked (:func:`read_reference`; refused if it was
    built on other data or for other test points)."""
    npz, meta = Path(ref_dir) / f"{problem.name}.npz", Path(ref_dir) / f"{problem.name}.json"
    if not npz.exists() or not meta.exists():
        arguments.die(
            f"run: --reference: no reference for {problem.name} in {ref_dir} ({npz.name} and {meta.name}); build it "
            "with `python benchmarks/posterior_fidelity.py reference`"
        )
    arrays, info = read_reference(npz, meta, problem.kind)
    if info["fingerprint"] != problem.fingerprint():
        arguments.die(
            f"run: --reference: {npz} was built on other data (the data set or the split "
            "changed); rebuild it with `python benchmarks/posterior_fidelity.py reference --force`"
        )
    a = next(iter(arrays.values()))
    n_test = len(problem.x_test)
    expected = (n_test, problem.outputs) if problem.kind == "classification" else (n_test,)
    got = a.shape[1:] if problem.kind == "classification" else a.shape[2:]
    if tuple(got) != expected:
        arguments.die(f"run: --reference: {npz}: shape {list(a.shape)} does not fit the {n_test} test points{REBUILD}")
    return arrays, info
