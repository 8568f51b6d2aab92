"""Per-step cost of SGHMC, reSGHMC and VR-reSGHMC on a CIFAR-shaped ResNet, in one run.

What is measured
----------------
Seconds per sampler step (``ReplicaExchangeSampler.fit``, batch 128) for four
configurations built on the same network and data:

  (a) ``sghmc``    one chain, SGHMC, no swaps                        (the 1x baseline)
  (b) ``resghmc``  two chains, SGHMC + corrected swaps               (reSGHMC)
  (c) ``vr``       (b) + control variates, refresh every ``m`` steps, ``energy_mode="train"``
  (d) ``vr_inf``   (c) with ``energy_mode="inference"``

and the ratios ``vr / resghmc`` (target <= 1.20; the paper reports 1.40),
``resghmc / sghmc`` (target <= 2.2) and ``vr_inf / resghmc``.  Two clocks are reported:

* **wall**: ``time.perf_counter`` around each window (what a user waits);
* **cpu**: ``time.process_time`` (CPU seconds of all the process's threads).  A cross-check
  on a busy machine, where other processes take cores away and inflate wall times; it
  also counts thread-pool spinning, so it is not a pure FLOP count.

How the timing is made honest
-----------------------------
* The variance-reduced samplers refresh their snapshots (one full pass over the ``N``
  reference examples, per chain) every ``m`` steps.  Every timed window is a multiple of
  ``m`` consecutive steps, so it contains exactly ``steps / m`` refreshes wherever it
  starts: the refresh is amortised in the right proportion.
* Each sampler is built, compiled and warmed up (``--warmup`` steps through ``fit``:
  tracing and first executions), then all get one more untimed round of ``--warmup`` steps,
  before any timing; the timed windows continue the same samplers.
* Configurations are interleaved round-robin (the first configuration rotates every round)
  and the median over ``--repeats`` rounds is reported.
* A window is one ``fit(..., steps_per_epoch=steps, epochs=1)`` call timed end to end (so
  it includes ``fit``'s small fixed per-call overhead, the same for every configuration).
  The weight updates are stateful and the last loss is read back and checked, so nothing
  can be pruned as dead code.
* Data: ``N = --data-size`` real CIFAR-10 images (``../shared/data/cifar10`` from the
  repository root; random images, with a printed note, if the file is missing), normalised
  per channel.  The same ``N`` images are the reference data of the full pass and the
  source of the shuffled mini-batches.
* Batches: the VR samplers get ``sampler.make_dataset`` batches (``--batches indexed``, the
  default), which carry example indices so that, where exact (``energy_mode="inference"``
  with BatchNorm nets), the snapshot energies are read from the full pass's per-example
  cache instead of a snapshot forward; ``--batches plain`` feeds plain ``(x, y)`` batches
  (snapshot forward every step).  The other samplers get plain batches from an identical
  pipeline (shuffled indices, gather from in-memory tensors), so input costs match.
* tf.data autotuning is off on every timed dataset (``--tf-data-autotune``: on).  With it on,
  ``fit`` windows on this CPU intermittently ended on a ~10.24 s grid (wall time rounded up to
  a multiple of 10.24 s, CPU time unchanged: idle waiting, plausibly on the autotuning thread).

Refresh proportion
------------------
The amortised refresh costs ``N / m`` forward passes per chain and step.  The defaults
(``N = 640``, ``m = 98``: 6.5 images per step) keep the proportion of ``N = 2560``,
``m = 392`` at a quarter of the run time; ``--m 392 --data-size 2560`` uses the paper's
``m`` (4x the timed part, about 10 min).  The paper's CIFAR-10 setting (``N = 50000``,
``m = 392``) does about 128 forwards per step, so the script also times the full pass and
prints the VR ratios extrapolated to ``--paper-data-size`` / ``--paper-m`` (an estimate,
labelled so).

Run (from the repository root)::

    python benchmarks/step_cost.py --force              # ResNet-8: ~3 min on 2 idle CPU cores
    python benchmarks/step_cost.py --paper-ratio --force  # -> benchmarks/results/step-cost-paper-ratio.json
    python benchmarks/step_cost.py --m 392 --data-size 2560 --results runs/step-cost-m392.json
(``benchmarks/results/step-cost.json`` by default; ``python benchmarks/render_docs.py`` shows it.)

Every flag and the ``--data`` file are checked before TensorFlow starts (exit status 2 and one
line naming the flag or file).
"""

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import arguments
import numpy as np
import results
import step_cost_data
from step_cost_report import CLOCKS, CONFIGS, RATIOS, VR_CONFIGS, print_parts, print_tables, results_table

warnings.filterwarnings("ignore", message=".*`shuffle=True` was passed.*")

DEFAULT_DATA = REPO.parent / "shared" / "data" / "cifar10" / "cifar10_test.npz"

ATTEMPT_EVERY = {"vr_thin4": 4, "vr_thin8": 8}

# Network of every chain and snapshot; set from the command line in main().
_MODEL_KWARGS = {"depth": 8, "width": 16, "num_classes": 10}


def benchmark_model():
    """``model_fn`` of the samplers: the CIFAR ResNet chosen by ``--depth`` / ``--width``."""
    from tf_vrre.workflows.image_classification import models

    return models.resnet(**_MODEL_KWARGS)


def _parser():
    """The command line (the derived defaults and the checks are in :func:`parse_args`)."""
    p = arguments.parser(__file__, __doc__.split("\n", 1)[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    count = arguments.positive(int, 10**7)
    p.add_argument("--depth", type=count, default=8, help="ResNet depth 6n+2 (8, 14, 20, ...)")
    p.add_argument("--width", type=count, default=16, help="filters of the first stage")
    p.add_argument("--batch", type=count, default=128, help="mini-batch size")
    p.add_argument("--data-size", type=count, default=640, help="N: training = reference examples")
    p.add_argument("--m", type=count, default=98, help="control-variate refresh period")
    p.add_argument(
        "--paper-ratio",
        action="store_true",
        help="N = m * batch / 2: the paper's refresh work per step (N = 50,000, m = 392, "
        "n = 256: 128 images per step and chain), measured, not extrapolated",
    )
    p.add_argument("--steps", type=count, default=None, help="timed steps per window, a multiple of m (default: m)")
    p.add_argument(
        "--warmup",
        type=count,
        default=None,
        help="untimed steps per sampler before timing (default: 2 x steps-per-execution)",
    )
    p.add_argument("--repeats", type=count, default=2, help="rounds; the median is reported")
    p.add_argument(
        "--steps-per-execution", type=count, default=7, help="steps per compiled call; must divide --steps and --warmup"
    )
    p.add_argument("--ref-batch", type=count, default=1000, help="batch size of the full pass")
    p.add_argument(
        "--batches",
        choices=("indexed", "plain"),
        default="indexed",
        help="VR samplers: sampler.make_dataset batches with example indices "
        "(snapshot-NLL cache where exact) or plain (x, y) batches",
    )
    p.add_argument(
        "--tf-data-autotune",
        action="store_true",
        help="leave tf.data autotuning on (off by default: see the module docstring)",
    )
    p.add_argument(
        "--configs",
        type=arguments.names(CONFIGS, "configurations"),
        default=tuple(CONFIGS),
        help="comma-separated subset of " + ", ".join(CONFIGS),
    )
    p.add_argument(
        "--paper-data-size", type=count, default=50000, help="N of the extrapolated VR ratios (CIFAR-10 training set)"
    )
    p.add_argument("--paper-m", type=count, default=392, help="m of the extrapolated VR ratios")
    p.add_argument(
        "--data",
        default=str(DEFAULT_DATA),
        help="npz with x (uint8 NHWC) and y (random images if the file does not exist)",
    )
    p.add_argument("--seed", type=arguments.nonnegative_int, default=0)
    p.add_argument(
        "--inter-op-threads",
        type=arguments.nonnegative_int,
        default=0,
        help="tf.config.threading inter-op threads (0: TensorFlow's default)",
    )
    p.add_argument(
        "--intra-op-threads",
        type=arguments.nonnegative_int,
        default=0,
        help="tf.config.threading intra-op threads (0: TensorFlow's default)",
    )
    p.add_argument(
        "--results",
        type=arguments.output_file,
        help="results file (default benchmarks/results/step-cost[-paper-ratio].json)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing results file")
    return p


def parse_args(argv=None):
    """The parsed command line with its derived defaults, every value checked before any work."""
    p = _parser()
    args = p.parse_args(argv)
    if args.paper_ratio:
        args.data_size = args.m * args.batch // 2
    if args.steps is None:
        args.steps = args.m
    if args.warmup is None:
        args.warmup = 2 * args.steps_per_execution
    args.configs = list(args.configs)
    if args.depth < 8 or (args.depth - 2) % 6:
        arguments.die(f"--depth: must be 6n + 2 with n >= 1 (8, 14, 20, 32, ...), got {args.depth}")
    if args.steps % args.m:
        arguments.die(
            f"--steps: must be a multiple of --m ({args.m}) so that every timed window holds the same "
            f"number of refreshes, got {args.steps}"
        )
    k = args.steps_per_execution
    if args.steps % k or args.warmup % k:
        arguments.die(
            f"--steps-per-execution: must divide --steps ({args.steps}) and --warmup ({args.warmup}), got {k}"
        )
    if args.batch > args.data_size:
        arguments.die(f"--batch: must be <= --data-size ({args.data_size}), got {args.batch}")
    args.images = step_cost_data.read_images(args.data, args.data_size)
    args.results = str(
        results.check_target(
            args.results or results.path_of("step-cost-paper-ratio" if args.paper_ratio else "step-cost"), args.force
        )
    )
    return args


def build_sampler(config, args, data):
    import keras

    import tf_vrre

    two = config != "sghmc"
    vr = config in VR_CONFIGS
    swap = None
    if two and config != "indep":
        swap = tf_vrre.CorrectedSwap(correction=1.5e5, attempt_every=ATTEMPT_EVERY.get(config, 1))
    sampler = tf_vrre.ReplicaExchangeSampler(
        benchmark_model,
        data_size=args.data_size,
        num_chains=2 if two else 1,
        temperatures=[0.01, 0.05] if two else 0.01,
        learning_rates=2e-6,
        dynamics="sghmc",
        momentum=0.9,
        weight_decay=25.0,
        swap=swap,
        variance_reduction=(tf_vrre.ControlVariates(period=args.m, batch_size=args.ref_batch) if vr else None),
        energy_mode="train" if config in ("vr", "resghmc", "indep", "sghmc") else "inference",
        seed=args.seed,
    )
    if vr:
        sampler.set_reference_data(data)
    sampler.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=args.steps_per_execution,
        jit_compile=False,
    )
    return sampler


def run_window(sampler, ds, steps):
    """Runs ``steps`` sampler steps through ``fit``; returns (wall s, cpu s, last logs)."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    hist = sampler.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    logs = {k: float(v[-1]) for k, v in hist.history.items()}
    if not np.isfinite(logs["loss"]):
        raise RuntimeError(f"non-finite loss after the window: {logs}")
    return wall, cpu, logs


def full_pass_seconds(data, num_models, batch_size, repeats=3):
    """Median (wall, cpu) seconds of a full inference pass of ``num_models`` nets over ``data``.

    Mirrors the sampler's refresh (K snapshot forwards over the N reference examples, NLLs
    summed in float64) to extrapolate its amortised cost to another ``N``; the sums are
    read back and checked.
    """
    import keras
    import tensorflow as tf

    nets = [benchmark_model() for _ in range(num_models)]
    for net in nets:
        net.trainable = False
    x, y = (tf.convert_to_tensor(a) for a in data)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    n = int(x.shape[0])

    @tf.function(autograph=False)  # plain Python loop over static batch offsets
    def full_pass():
        total = tf.zeros([num_models], tf.float64)
        for start in range(0, n, batch_size):
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
            total += tf.stack([tf.reduce_sum(tf.cast(loss(yb, net(xb, training=False)), tf.float64)) for net in nets])
        return total

    full_pass().numpy()  # trace
    walls, cpus = [], []
    for _ in range(repeats):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        value = full_pass().numpy()
        walls.append(time.perf_counter() - wall0)
        cpus.append(time.process_time() - cpu0)
        if not np.all(np.isfinite(value)):
            raise RuntimeError("non-finite full-pass energy")
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus)}


def _setup(args):
    """Builds and warms up every configuration's sampler; returns (samplers, datasets, batches)."""
    samplers, datasets, batches = {}, {}, {}
    x, y = args.data_xy
    for config in args.configs:
        t0 = time.perf_counter()
        samplers[config] = build_sampler(config, args, (x, y))
        datasets[config], batches[config] = step_cost_data.sampler_dataset(samplers[config], config, args, args.ds)
        run_window(samplers[config], datasets[config], args.warmup)
        print(
            f"  built + warmed up {CONFIGS[config]:<40s} ({args.warmup} steps incl. tracing) "
            f"in {time.perf_counter() - t0:5.1f} s; {batches[config]}",
            flush=True,
        )
    # One more untimed round-robin pass: the first window after the other samplers' set-up
    # ran up to 25% slow in trials.
    t0 = time.perf_counter()
    for config in args.configs:
        run_window(samplers[config], datasets[config], args.warmup)
    print(f"  untimed settling round ({args.warmup} steps each) in {time.perf_counter() - t0:.1f} s", flush=True)
    return samplers, datasets, batches


def _time_rounds(args, samplers, datasets):
    """Interleaved timed windows; returns (per-step seconds per clock and config, last logs)."""
    per_step = {clock: {c: [] for c in args.configs} for clock in CLOCKS}
    last_logs = {}
    for r in range(args.repeats):
        shift = r % len(args.configs)
        for config in args.configs[shift:] + args.configs[:shift]:
            wall, cpu, logs = run_window(samplers[config], datasets[config], args.steps)
            per_step["wall"][config].append(wall / args.steps)
            per_step["cpu"][config].append(cpu / args.steps)
            last_logs[config] = logs
            swaps = f", swaps {int(logs['swaps'])}/{int(logs['swap_attempts'])} so far" if "swaps" in logs else ""
            print(
                f"  [round {r + 1}/{args.repeats}] {CONFIGS[config]:<40s} {args.steps} steps: "
                f"wall {wall:7.2f} s = {wall / args.steps * 1e3:7.1f} ms/step, "
                f"cpu {cpu / args.steps * 1e3:7.1f} ms/step (loss {logs['loss']:.3f}{swaps})",
                flush=True,
            )
    return per_step, last_logs


def _ratios_and_full_pass(args, med):
    """Ratios of medians, the full pass's cost and the VR ratios extrapolated to the paper's N, m."""
    ratios = {clock: {} for clock in CLOCKS}
    for clock in CLOCKS:
        for name, (num, den, _, _) in RATIOS.items():
            if num in med[clock] and den in med[clock]:
                ratios[clock][name] = med[clock][num] / med[clock][den]
    full, extrapolated = None, {clock: {} for clock in CLOCKS}
    if any(c in args.configs for c in VR_CONFIGS):
        full = full_pass_seconds(args.data_xy, 2, args.ref_batch)
        for clock in CLOCKS:
            if "resghmc" not in med[clock] or args.paper_ratio:
                continue
            # Replace the measured amortised refresh (full / m) by (N_paper / N) full / m_paper.
            delta = full[clock] * (args.paper_data_size / args.data_size / args.paper_m - 1.0 / args.m)
            for c in VR_CONFIGS:
                if c in med[clock]:
                    extrapolated[clock][f"{c}/resghmc"] = (med[clock][c] + delta) / med[clock]["resghmc"]
    return ratios, full, extrapolated


def main(argv=None):
    args = parse_args(argv)
    import keras
    import tensorflow as tf

    wall_start = time.perf_counter()
    if args.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_op_threads)
    if args.intra_op_threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_threads)
    _MODEL_KWARGS.update(depth=args.depth, width=args.width)
    params = benchmark_model().count_params()

    x, y, source = step_cost_data.load_data(args.data, args.data_size, args.seed, args.images)
    args.data_xy, args.ds = (x, y), step_cost_data.make_dataset(x, y, args.batch, args.seed)
    print(
        f"step_cost: ResNet-{args.depth} (width {args.width}, {params:,} parameters), "
        f"batch {args.batch}, N={args.data_size} {source} images, m={args.m} "
        f"({args.data_size / args.m:.1f} refresh images/step/chain), {args.steps} timed steps "
        f"x {args.repeats} rounds, steps_per_execution={args.steps_per_execution}, "
        f"warm-up {args.warmup} steps",
        flush=True,
    )
    print(
        f"  TensorFlow {tf.__version__}, Keras {keras.__version__}, {os.cpu_count()} CPUs, "
        f"devices {[d.device_type for d in tf.config.list_logical_devices()]}",
        flush=True,
    )

    samplers, datasets, batches = _setup(args)
    per_step, last_logs = _time_rounds(args, samplers, datasets)
    med = {clock: {c: statistics.median(v) for c, v in per_step[clock].items()} for clock in CLOCKS}
    ratios, full, extrapolated = _ratios_and_full_pass(args, med)
    print_tables(args, per_step, med, ratios, full, extrapolated)
    parts = print_parts(med, full, args, last_logs)
    wall_total = time.perf_counter() - wall_start
    print(f"\nwall time {wall_total:.1f} s", flush=True)

    results.write(
        args.results,
        {"main": results_table(args, med, parts)},
        settings={k: v for k, v in vars(args).items() if k not in ("data_xy", "ds", "results", "force", "images")},
        model={"depth": args.depth, "width": args.width, "parameters": params},
        data_source=source,
        batches=batches,
        seconds_per_step={
            clock: {c: {"median": med[clock][c], "rounds": per_step[clock][c]} for c in args.configs}
            for clock in CLOCKS
        },
        ratios=ratios,
        full_pass_seconds=full,
        extrapolated_ratios=extrapolated,
        parts_ms_per_step=parts,
        last_logs=last_logs,
        wall_seconds=wall_total,
    )
    return {"median_seconds_per_step": med, "ratios": ratios}


if __name__ == "__main__":
    main()
