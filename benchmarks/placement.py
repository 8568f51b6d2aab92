"""Chains on devices: data-parallel (``placement="replicated"``) against one chain per replica
(``placement="chain_per_replica"``), side by side in one run on logical CPU devices.

One CPU is split into 4 logical devices; for K = 2 and 4 chains a ``MirroredStrategy`` over K
of them runs the same VR-reSGHMC sampler (an MLP 64-256-256-10, batch 128, control variates with
the per-example cache) in both placements.  Printed per (K, placement):

- *bytes crossing devices per step*, read from the traced train step's graph
  (:func:`tf_vrre.sampler.traffic.step_traffic`): collective payloads of every replica, copies
  between devices, and the logs Keras reduces;
- the largest tensor crossing devices (elements);
- *step time*: the median over ``--repeats`` interleaved rounds of the time per step inside a
  ``fit`` of ``--steps`` steps (tracing, and the host copy's transfers at the start and end of a
  chain-per-replica ``fit``, excluded).

Each K runs in its own process (one strategy per process: two strategies over the same devices
in one process would share TensorFlow's collective keys).  Logical CPU devices share the same
cores and memory, so the times say what the placement costs in work, not what a second GPU would gain; the bytes are what crosses a device boundary on any
hardware.  ``--figure`` draws where the weights live and what crosses devices, with the bytes
measured for K = 2.

    python benchmarks/placement.py --figure docs/placement.png     # ~3 minutes on 2 cores

The tables are written to ``benchmarks/results/placement.json`` (``--results``; ``--force`` to
replace it); ``python benchmarks/render_docs.py`` renders them in ``docs/benchmarks/placement.md``.
The flags are checked before TensorFlow starts (exit status 2 and one line for a bad value); only
the measuring child processes import it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arguments
import numpy as np
import results

from tf_vrre.runs import atomic

DEVICES = 4
N, BATCH, PLACEMENTS = 2048, 128, ("replicated", "chain_per_replica")


def logical_devices():
    """Splits the CPU into :data:`DEVICES` logical devices (before TensorFlow's runtime starts)."""
    import tensorflow as tf

    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * DEVICES
    )


def mlp():
    import keras

    inp = keras.Input((64,))
    h = keras.layers.Dense(256, activation="relu")(inp)
    h = keras.layers.Dense(256, activation="relu")(h)
    return keras.Model(inp, keras.layers.Dense(10)(h))


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 64)).astype("float32")
    return x, (np.abs(x[:, :10]).argmax(1)).astype("int64")


def build(strategy, chains, placement):
    import keras

    import tf_vrre

    x, y = data()
    with strategy.scope():
        s = tf_vrre.ReplicaExchangeSampler(
            mlp,
            data_size=N,
            num_chains=chains,
            temperatures=list(np.geomspace(1e-3, 1e-2, chains)),
            learning_rates=1e-5,
            dynamics="sghmc",
            seed=0,
            swap=tf_vrre.CorrectedSwap(correction=5.0),
            variance_reduction=tf_vrre.ControlVariates(period=16, batch_size=512),
            placement=placement,
        )
        s.set_reference_data((x, y))
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    return s


def step_clock():
    """A Keras callback timing the steps between the end of the first step and the end of the last."""
    import keras

    class StepClock(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.ends = []

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(time.perf_counter())

        def per_step(self):
            return (self.ends[-1] - self.ends[0]) / (len(self.ends) - 1)

    return StepClock()


def timed(sampler, steps):
    clock = step_clock()
    sampler.fit(
        sampler.make_dataset(BATCH, drop_remainder=True, repeat=True),
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        callbacks=[clock],
    )
    return clock.per_step()


def figure(path, measured, params):
    """Where the weights live and what crosses devices, K = 2 (bytes per step as measured)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig = Figure(figsize=(10, 4.2))
    colors = ("#4477aa", "#ee6677")
    panels = [("replicated (data parallel)", "replicated"), ("chain_per_replica", "chain_per_replica")]
    for i, (title, key) in enumerate(panels):
        ax = fig.add_axes((0.01 + 0.5 * i, 0.02, 0.48, 0.88))
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 7)
        ax.axis("off")
        ax.set_title(title, fontsize=12)
        for d, x0 in enumerate((0.3, 5.7)):
            ax.add_patch(FancyBboxPatch((x0, 1.9), 4.0, 4.6, boxstyle="round,pad=0.05", fc="#f4f4f4", ec="#555"))
            ax.text(x0 + 2.0, 6.15, f"device {d}", ha="center", fontsize=10)
            chains = (0, 1) if key == "replicated" else (d,)
            for j, h in enumerate(chains):
                ax.add_patch(
                    FancyBboxPatch(
                        (x0 + 0.25, 4.2 - 1.6 * j),
                        3.5,
                        1.3,
                        boxstyle="round,pad=0.03",
                        fc=colors[h],
                        ec="none",
                        alpha=0.85,
                    )
                )
                ax.text(
                    x0 + 2.0,
                    4.85 - 1.6 * j,
                    f"chain {h}: weights, velocities,\nsnapshot, U_hat",
                    ha="center",
                    va="center",
                    color="white",
                    fontsize=8.5,
                )
            if key == "replicated":
                ax.text(x0 + 2.0, 2.2, f"batch shard {d + 1}/2", ha="center", fontsize=8.5)
            else:
                ax.text(x0 + 2.0, 2.9, "whole batch\nrung label: T, lr", ha="center", fontsize=8.5)
        ax.add_patch(FancyArrowPatch((4.4, 3.6), (5.6, 3.6), arrowstyle="<|-|>", mutation_scale=14, color="#222"))
        t = measured[key]
        what = (
            "all-reduce of every chain's gradients\n+ energies, per-example NLLs"
            if key == "replicated"
            else "one all_gather: energies and\nper-example swap energies"
        )
        ax.text(5.0, 1.05, f"{what}\n{t['bytes'] / 1024:.1f} KiB per step", ha="center", va="center", fontsize=9)
    fig.text(
        0.5, 0.96, f"Where the weights live (K = 2, MLP {params:,} parameters per chain)", ha="center", fontsize=12
    )
    atomic.save_figure(fig, path, dpi=110)


def measure(chains, steps, repeats):
    """Both placements of K = ``chains`` under one strategy (two strategies over the same devices
    in one process would share TensorFlow's collective keys): traffic and per-step times."""
    logical_devices()
    import tensorflow as tf

    from tf_vrre.sampler import traffic

    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(chains)])
    samplers, out = {}, {}
    for placement in PLACEMENTS:
        s = build(strategy, chains, placement)
        t = traffic.step_traffic(s, s.make_dataset(BATCH, drop_remainder=True))
        out[placement] = {"bytes": t.bytes, "largest": t.largest, "kinds": t.by_kind(), "times": []}
        timed(s, 3)  # trace and warm up
        samplers[placement] = s
    for _ in range(repeats):
        for placement, s in samplers.items():
            out[placement]["times"].append(timed(s, steps))
    out["params"] = int(sum(np.prod(w.shape) for w in samplers[PLACEMENTS[0]].cold_model.trainable_weights))
    return out


def main_table(measured):
    """Per (K, placement): median ms/step, bytes per step, the largest tensor crossing, by kind."""
    rows, keys = [], []
    for chains in (2, 4):
        for placement in PLACEMENTS:
            t = measured[chains][placement]
            kinds = "; ".join(f"{k} {v:,}" for k, v in sorted(t["kinds"].items()))
            rows.append([chains, placement, 1e3 * statistics.median(t["times"]), t["bytes"], t["largest"], kinds])
            keys.append(f"k{chains}_{placement}")
    return results.table(
        ["K", "placement", "ms/step", "bytes / step", "largest tensor crossing (elements)", "what crosses"],
        ["{}", "{}", "{:.1f}", "{:,}", "{:,}", "{}"],
        rows,
        keys,
    )


def ratio_table(measured):
    """Per K: how many times fewer bytes chain_per_replica moves, and its step time over replicated's."""
    rows = []
    for chains in (2, 4):
        a, b = (measured[chains][p] for p in PLACEMENTS)
        ratio = statistics.median(b["times"]) / statistics.median(a["times"])
        rows.append([chains, a["bytes"] / b["bytes"], ratio])
    return results.table(
        ["K", "bytes: replicated / chain_per_replica", "step time: chain_per_replica / replicated"],
        ["{}", "{:,.0f}x", "{:.2f}"],
        rows,
        [f"k{chains}" for chains in (2, 4)],
    )


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.split("\n\n")[0])
    p.add_argument(
        "--steps", type=arguments.at_least(2, 10**6), default=30, help="steps per timed fit (>= 2: a step time)"
    )
    p.add_argument("--repeats", type=arguments.positive(int, 1000), default=3, help="interleaved rounds (median)")
    p.add_argument("--figure", type=arguments.output_file, help="write the placement figure (PNG) here")
    p.add_argument("--chains", type=int, choices=(2, 4), help=argparse.SUPPRESS)  # one K, JSON out (child)
    results.add_arguments(p, "placement")
    args = p.parse_args(argv)
    if not args.chains:
        results.check_target(args.results, args.force)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.chains:
        print(json.dumps(measure(args.chains, args.steps, args.repeats)))
        return
    measured = {}
    for chains in (2, 4):  # one process per K (see measure)
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--chains",
                str(chains),
                "--steps",
                str(args.steps),
                "--repeats",
                str(args.repeats),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode:
            sys.exit(f"K={chains} failed:\n{child.stderr[-3000:]}")
        measured[chains] = json.loads(child.stdout.strip().splitlines()[-1])
    params = measured[2]["params"]
    print(
        f"MLP 64-256-256-10 ({params:,} parameters per chain), batch {BATCH}, VR-reSGHMC; "
        f"{DEVICES} logical CPU devices on {os.cpu_count()} cores; medians of {args.repeats} rounds"
    )
    tables = {"main": main_table(measured), "ratios": ratio_table(measured)}
    for tab in tables.values():
        print(results.markdown(tab))
    results.write(
        args.results,
        tables,
        settings={"steps": args.steps, "repeats": args.repeats, "batch": BATCH, "n": N, "devices": DEVICES},
        params=params,
        measured={str(k): v for k, v in measured.items()},
    )
    if args.figure:
        figure(args.figure, measured[2], params)
        print("figure:", args.figure)


if __name__ == "__main__":
    main()
