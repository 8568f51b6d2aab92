"""Per-step overhead of the swap logger and the sample collector, measured side by side.

Four VR-reSGHMC samplers on the same data and network, timed in interleaved rounds:

  (a) ``bare``     no callbacks
  (b) ``swaplog``  + ``SwapLogger`` (drains the in-graph record buffer after every call)
  (c) ``collect``  + ``SampleCollector(every=--every)`` (one ``.npz`` + manifest per sample)
  (d) ``both``     (b) + (c)

It prints ms per step (median over ``--repeats`` rounds of ``--steps`` steps) and the
ratios to ``bare``.  The default network is a small MLP, so that the per-step work is tiny
and the callbacks' host-side cost shows at its largest; ``--model resnet8`` uses a
CIFAR-shaped ResNet-8 (batch 128) where it is a much smaller fraction.

    python benchmarks/callback_overhead.py --force    # ~1 minute; benchmarks/results/callback-overhead.json
    python benchmarks/callback_overhead.py --model resnet8 --steps 40 --results runs/callback-overhead-resnet8.json
"""

import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arguments
import numpy as np
import results

CONFIGS = ("bare", "swaplog", "collect", "both")
LABELS = {
    "bare": "none",
    "swaplog": "`SwapLogger` (drains the in-graph record after every call)",
    "collect": "`SampleCollector(every={every})` (one `.npz` + manifest per sample)",
    "both": "both",
}


def mlp():
    import keras

    inp = keras.Input((32,))
    h = keras.layers.Dense(64, activation="relu")(inp)
    return keras.Model(inp, keras.layers.Dense(10)(h))


def resnet8():
    from tf_vrre.workflows.image_classification.models.resnet import resnet

    return resnet(8, num_classes=10)


def parse_args(argv=None):
    """The command line, every count checked to be >= 1 and the results file to be new (or
    ``--force``), before TensorFlow starts."""
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument("--model", choices=("mlp", "resnet8"), default="mlp")
    p.add_argument("--steps", type=arguments.positive(int, 10**7), default=200, help="steps per timed window")
    p.add_argument("--repeats", type=arguments.positive(int, 1000), default=5)
    p.add_argument("--every", type=arguments.positive(int, 10**7), default=16, help="collector thinning T")
    p.add_argument("--json", action="store_true")
    results.add_arguments(p, "callback-overhead")
    args = p.parse_args(argv)
    args.target = results.check_target(args.results, args.force)
    return args


def make_data(model):
    """Random inputs and labels for ``model`` ("mlp" or "resnet8"): ``(x, y, batch)``."""
    rng = np.random.default_rng(0)
    if model == "mlp":
        n, batch = 4096, 64
        x = rng.normal(size=(n, 32)).astype("float32")
    else:
        n, batch = 640, 128
        x = rng.normal(size=(n, 32, 32, 3)).astype("float32")
    y = rng.integers(0, 10, size=n).astype("int32")
    return x, y, batch


def build_samplers(build, x, y, every, tmp):
    """One VR-reSGHMC sampler per configuration and its callbacks (writing under ``tmp``)."""
    import keras

    import tf_vrre

    samplers, callbacks = {}, {}
    for name in CONFIGS:
        s = tf_vrre.ReplicaExchangeSampler(
            build,
            data_size=len(x),
            num_chains=2,
            temperatures=[1e-3, 5e-3],
            learning_rates=1e-5,
            weight_decay=1.0,
            variance_reduction=tf_vrre.ControlVariates(period=50),
            seed=0,
        )
        s.set_reference_data((x, y))
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        cbs = []
        if name in ("swaplog", "both"):
            cbs.append(tf_vrre.SwapLogger(os.path.join(tmp, name, "swaps")))
        if name in ("collect", "both"):
            cbs.append(tf_vrre.SampleCollector(os.path.join(tmp, name, "samples"), every=every))
        samplers[name], callbacks[name] = s, cbs
    return samplers, callbacks


def time_rounds(samplers, callbacks, batch, args):
    """Seconds per step of every configuration in each of ``args.repeats`` interleaved rounds of
    ``args.steps`` steps, after an untimed warm-up window (tracing) of each."""
    data = {k: s.make_dataset(batch, repeat=True, drop_remainder=True) for k, s in samplers.items()}

    def window(name, steps):
        start = time.perf_counter()
        samplers[name].fit(
            data[name], steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False, callbacks=callbacks[name]
        )
        return time.perf_counter() - start

    for name in CONFIGS:  # trace + warm up
        window(name, max(args.steps // 4, 2 * args.every))
    times = {k: [] for k in CONFIGS}
    for r in range(args.repeats):
        order = CONFIGS[r % 4 :] + CONFIGS[: r % 4]
        for name in order:
            times[name].append(window(name, args.steps) / args.steps)
        print(
            f"round {r + 1}/{args.repeats}: " + ", ".join(f"{k} {1e3 * times[k][-1]:.2f} ms" for k in CONFIGS),
            file=sys.stderr,
        )
    return times


def main(argv=None):
    args = parse_args(argv)
    target = args.target

    build = mlp if args.model == "mlp" else resnet8
    x, y, batch = make_data(args.model)
    tmp = tempfile.mkdtemp(prefix="tf_vrre_cb_")
    samplers, callbacks = build_samplers(build, x, y, args.every, tmp)
    times = time_rounds(samplers, callbacks, batch, args)
    med = {k: float(np.median(v)) for k, v in times.items()}
    out = {
        "model": args.model,
        "batch": batch,
        "steps": args.steps,
        "repeats": args.repeats,
        "every": args.every,
        "ms_per_step": {k: 1e3 * v for k, v in med.items()},
        "ratio_to_bare": {k: med[k] / med["bare"] for k in CONFIGS},
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{args.model}, batch {batch}, {args.steps} steps x {args.repeats} rounds (median), collector every {args.every}"
        )
        for k in CONFIGS:
            print(f"  {k:<8} {1e3 * med[k]:8.2f} ms/step   x{med[k] / med['bare']:.3f}")
    rows = [
        [LABELS[k].format(every=args.every), [1e3 * t for t in times[k]], 1e3 * med[k], med[k] / med["bare"]]
        for k in CONFIGS
    ]
    table = results.table(
        ["callbacks", "ms/step (per round)", "median ms/step", "vs. none"],
        ["{}", ", ".join(["{:.1f}"] * args.repeats), "{:.1f}", "{:.2f}"],
        rows,
        keys=CONFIGS,
    )
    results.write(
        target,
        {"main": table},
        settings={k: v for k, v in vars(args).items() if k not in ("json", "results", "force", "target")}
        | {"batch": batch},
    )
    return out


if __name__ == "__main__":
    main()
