"""What ``tf-vrre train`` and ``tf-vrre evaluate`` check before TensorFlow starts.

Training: the run directory, the numbers of the run (batch, refreshes, samples), the execution
options, the training-set size when it is known without reading images, and the resume epoch
of a checkpoint.  Evaluation: the run and its samples, the data splits it reads.  No
TensorFlow here: the command line answers a bad flag or a foreign run directory with one line
before anything heavy loads.
"""

import math
import os
import re
import shutil

from tf_vrre.runs import run_json as rundir
from tf_vrre.runs.samples import MANIFEST, load_samples, repair_hint
import tf_vrre.workflows.image_classification.config as cfgmod
import tf_vrre.workflows.image_classification.strategies as strategies
from tf_vrre.workflows.image_classification.data import sources

OOD_CHOICES = ("auto", "cifar10", "cifar100", "svhn", "none")
DEFAULT_OOD = {"cifar10": "cifar100", "cifar100": "cifar10", "svhn_cropped": "cifar10"}


def expected_samples(cfg, values):
    """Number of cold-chain samples the run will collect (thinning, burn-in, cycles)."""
    every, total = cfg["samples"]["thinning"], values["total_steps"]
    burn = values["sample_burn_in_steps"]
    steps = range(every * (burn // every + 1), total + 1, every)
    if cfg["method"] in cfgmod.CYCLICAL:  # CyclicalCosine.in_sampling_phase(step - 1), without Keras
        length = math.ceil(total / cfg["sampler"]["cycles"])
        steps = [s for s in steps if ((s - 1) % length) / length > cfg["samples"]["cycle_threshold"]]
    count = len(steps)
    cap = cfg["samples"]["max_samples"]
    return min(count, cap) if cap else count


def check_numbers(cfg, train_size):
    """``(values, samples)`` of a run on ``train_size`` images, or a ``ValueError`` (no TensorFlow).

    Checks: the batch fits the data, the control variates are refreshed at least once, the
    schedule collects at least one sample (naming ``samples.thinning`` and the burn-in).
    """
    d = cfg["data"]
    if d["batch_size"] > train_size:
        raise ValueError(f"data.batch_size ({d['batch_size']}) must be <= the {train_size} training examples")
    values = cfgmod.schedule_values(cfg, train_size, train_size // d["batch_size"])
    if "variance_reduction" in cfg and cfg["variance_reduction"]["period"] > values["total_steps"]:
        raise ValueError(f"variance_reduction.period ({cfg['variance_reduction']['period']}) must be <= the run's "
                         f"{values['total_steps']} steps, or the control variates are never refreshed")
    count = expected_samples(cfg, values)
    if count == 0:
        raise ValueError(f"samples.thinning ({cfg['samples']['thinning']}) collects no sample: the run has "
                         f"{values['total_steps']} steps, {values['sample_burn_in_steps']} of them burn-in; "
                         "lower --thinning or raise --epochs")
    return values, count


def check_execution(cfg, jit_compile=None, steps_per_execution=None):
    """Checks ``train``'s execution options without TensorFlow (``ValueError`` naming the argument).

    ``jit_compile``: ``None`` (the sampler's default: ``$TF_VRRE_JIT_COMPILE``, else ``"auto"``),
    ``True``, ``False`` or ``"auto"``.  ``steps_per_execution``: ``None`` (1) or an integer in
    ``[1, 1024]`` (the swap record's ring buffer, :data:`tf_vrre.strategies.MAX_STEPS_PER_EXECUTION`)
    that divides ``samples.thinning`` (callbacks see the weights once per execution).
    """
    if not (jit_compile is None or isinstance(jit_compile, bool) or jit_compile == "auto"):
        raise ValueError(f"jit_compile must be None, True, False or 'auto'; got {jit_compile!r}")
    if steps_per_execution is None:
        return
    top = strategies.MAX_STEPS_PER_EXECUTION
    if isinstance(steps_per_execution, bool) or not isinstance(steps_per_execution, int) \
            or not 1 <= steps_per_execution <= top:
        raise ValueError(f"steps_per_execution must be an integer in [1, {top}]; got {steps_per_execution!r}")
    if cfg["samples"]["thinning"] % steps_per_execution:
        raise ValueError(f"steps_per_execution ({steps_per_execution}) must divide samples.thinning "
                         f"({cfg['samples']['thinning']}): callbacks see the weights once per execution")


def train_size_hint(cfg, source, data_dir):
    """The number of training images, known without reading images: ``data.subset``, or for the
    npz source the split's label count less the held-out part; ``None`` for tfds (no TensorFlow)."""
    d = cfg["data"]
    if d["subset"]:
        return int(d["subset"])
    name = sources.check_dataset(d["dataset"])
    if sources.resolve_source(source, name, "train", data_dir) != "npz":
        return None
    total = sources.npz_split_size(data_dir, name, "train")
    held = sources.example_count(d["holdout"], total, "holdout")
    if held >= total:
        raise ValueError(f"data.holdout ({held}) must leave training examples: the {name} train split in "
                         f"{str(data_dir)!r} has {total}")
    return total - held


def check_run_dir(out, cfg, overwrite=False):
    """The existing run (same config) or ``None``; refuses a different run unless ``overwrite``."""
    existing = rundir.read_run(out, required=False)
    if overwrite:
        return None
    if existing is None:
        foreign = [p for p in rundir.TRAIN_OUTPUTS if os.path.exists(os.path.join(out, p))]
        if foreign:
            raise rundir.RunDirError(f"{out!r} holds {', '.join(foreign)} but no run.json; use --overwrite to "
                                     "replace it or choose another --out")
        return None
    diff = rundir.config_difference(existing["config"], cfg)
    if diff is not None:
        key, old, new = diff
        raise rundir.RunDirError(f"{out!r} holds a different run ({existing['method']}): config key {key} is "
                                 f"{old!r} there, {new!r} now; use --overwrite to replace it or choose another --out")
    return existing


def check_same_data(out, existing, prepared):
    """Refuses to resume run ``existing`` on other training data than it started with.

    Compared: the source, the training / held-out index digests (labels and split), the digest
    of the training split's pixels and the fitted normalisation (for runs recorded before the
    pixel digest).  Raises ``RunDirError`` naming the first difference; nothing is written.
    """
    old, new = existing["data"], prepared["data"]
    checks = [(f"data.{key}", old.get(key), new.get(key)) for key in ("source", "train_digest", "holdout_digest")]
    if "pixels_digest" in old:
        checks.append(("data.pixels_digest", old["pixels_digest"], new["pixels_digest"]))
    fitted = prepared["train"].preprocessing.to_dict()
    recorded = existing["preprocessing"] if isinstance(existing["preprocessing"], dict) else {}
    checks += [(f"preprocessing.{key}", recorded.get(key), fitted[key]) for key in ("mean", "std")]
    for key, there, now in checks:
        if there != now:
            where = f" in {new['data_dir']!r}" if new.get("data_dir") else ""
            raise rundir.RunDirError(f"{out!r}: the training data{where} differ from the run's ({key} {there!r} there, "
                                     f"{now!r} now); resume with the run's data ({old.get('source')} "
                                     f"{old.get('data_dir')!r}), or use --overwrite / another --out")


def _clear(out):
    for name in rundir.TRAIN_OUTPUTS + rundir.DERIVED_OUTPUTS:  # never RUN/.lock: the one-writer lock
        path = os.path.join(out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


def _backup_epoch(root):
    """The epoch the :class:`tf_vrre.Checkpoint` in ``root/backup`` resumes from (0 without one):
    read from its ``checkpoint`` index file (``ckpt-<epoch>``), without TensorFlow."""
    path = os.path.join(root, rundir.BACKUP, "checkpoint")
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return 0
    except OSError:
        return -3  # unreadable: the workers must still agree
    found = re.search(r'^model_checkpoint_path:\s*"(?:.*/)?ckpt-(\d+)"', text, re.M)
    return int(found.group(1)) if found else -3


def check_run(run_dir):
    """``(run, samples)`` of a run directory with at least one sample, or a ``RunDirError``
    naming the missing / broken file (no TensorFlow: ``tf-vrre evaluate`` checks before it starts)."""
    run = rundir.read_run(run_dir)
    directory = os.path.join(str(run_dir), rundir.SAMPLES)
    manifest = os.path.join(directory, MANIFEST)
    if not os.path.isfile(manifest):
        raise rundir.RunDirError(f"{manifest} does not exist: the run has collected no sample yet "
                                 f"(status {run.get('status')!r}; samples start after the burn-in)")
    try:
        samples = load_samples(directory)
    except ValueError as err:
        raise rundir.RunDirError(f"{err}; {repair_hint(run_dir)}") from None
    if not len(samples):
        raise rundir.RunDirError(f"{manifest} lists no sample: the run has collected none yet "
                                 f"(status {run.get('status')!r}; samples start after the burn-in)")
    return run, samples


def data_sources(run, ood="auto", data_dir=None, source=None):
    """``(data_dir, source, ood_name)`` an evaluation of ``run`` reads: the arguments, else the run's.

    ``ood_name`` is ``None`` for ``ood="none"``; ``"auto"`` is :data:`DEFAULT_OOD` of the run's
    data set.  Raises ``ValueError`` for an unknown ``ood``.
    """
    if ood not in OOD_CHOICES:
        raise ValueError(f"ood must be one of {', '.join(OOD_CHOICES)}; got {ood!r}")
    data = run["data"]
    data_dir = data_dir if data_dir is not None else data.get("data_dir")
    source = source or data.get("source", "auto")
    ood_name = DEFAULT_OOD[data["dataset"]] if ood == "auto" else (None if ood == "none" else sources.check_dataset(ood))
    if ood_name is not None and ood_name == data["dataset"]:
        others = [o for o in OOD_CHOICES if o not in ("auto", "none") and sources.check_dataset(o) != ood_name]
        raise ValueError(f"ood {ood!r} is the run's training data set {data['dataset']}, not out of distribution; "
                         f"choose one of {', '.join(others + ['none'])}")
    return data_dir, source, ood_name


def check_data(run, ood="auto", data_dir=None, source=None, fit_size=2000):
    """Checks, without reading images or TensorFlow, that the splits an evaluation reads exist.

    Rule: the run's test split, the OOD test split and (``fit_size > 0``) the run's training
    split (its held-out part fits the temperature) pass :func:`tf_vrre.data.sources.check_available`.

    Raises:
      ValueError / FileNotFoundError naming the data set, split and expected files.
    """
    data_dir, source, ood_name = data_sources(run, ood, data_dir, source)
    needed = [(run["data"]["dataset"], "test")] + ([(ood_name, "test")] if ood_name else [])
    needed += [(run["data"]["dataset"], "train")] if fit_size else []
    for name, split in needed:
        sources.check_available(name, split, source, data_dir, download=False)
