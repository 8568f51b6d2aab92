"""Command line: ``tf-vrre mixture`` runs the paper's Gaussian-mixture study offline.

    tf-vrre mixture                      # default scenario, ~1-2 minutes on 2 CPU cores
    tf-vrre mixture --steps 20000 --seed 1 --out runs/quick
"""

import argparse
import json
import os
import sys
import time


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {kind.__name__}, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def _parser():
    p = argparse.ArgumentParser(prog="tf-vrre", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("mixture", help="SGLD vs reSGLD vs VR-reSGLD on the 1-D Gaussian mixture (offline)")
    m.add_argument("--data-size", type=_positive(int), default=1000, help="N (default 1000)")
    m.add_argument("--steps", type=_positive(int), default=60000, help="iterations per method (default 6e4)")
    m.add_argument("--lr", type=_positive(float), default=1e-4, help="eta (default 1e-4)")
    m.add_argument("--batch", type=_positive(int), default=100, help="mini-batch size n (default 100)")
    m.add_argument("--m", type=_positive(int), default=4, help="variance/snapshot period m (default 4)")
    m.add_argument("--tau1", type=_positive(float), default=10.0, help="cold temperature (default 10)")
    m.add_argument("--tau2", type=_positive(float), default=3000.0, help="hot temperature (default 3000)")
    m.add_argument("--correction", type=_positive(float), default=2.0, help="F (default 2)")
    m.add_argument("--smoothing", type=_positive(float), default=0.3, help="gamma in (0, 1] (default 0.3)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--out", default=None, help="output directory (default runs/mixture-<timestamp>)")
    return p


class _Progress:
    def __init__(self, label, steps):
        import keras

        outer = self

        class CB(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                outer.update(batch + 1)

        self.callback = CB()
        self.label, self.steps, self.last = label, steps, -1
        self.start = time.perf_counter()

    def update(self, done):
        pct = int(100 * done / self.steps)
        if pct // 5 != self.last // 5:
            self.last = pct
            bar = "#" * (pct // 5) + "." * (20 - pct // 5)
            sys.stderr.write(f"\r  {self.label:<10} [{bar}] {pct:3d}%  {time.perf_counter() - self.start:6.1f}s")
            if pct >= 100:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _mode_fraction(beta, split, batches=10):
    """Fraction of the trace left of ``split`` with a batch-means standard error."""
    import numpy as np

    left = (np.asarray(beta) < split).astype(float)
    t = len(left) - len(left) % batches
    means = left[:t].reshape(batches, -1).mean(1)
    return float(left.mean()), float(means.std(ddof=1) / np.sqrt(batches))


def mixture(args):
    if args.tau1 >= args.tau2:
        _die(f"--tau1 must be < --tau2 (got {args.tau1} >= {args.tau2})")
    if not 0 < args.smoothing <= 1:
        _die(f"--smoothing must be in (0, 1], got {args.smoothing}")
    if args.batch > args.data_size:
        _die(f"--batch must be <= --data-size ({args.data_size}), got {args.batch}")
    out = args.out or os.path.join("runs", "mixture-" + time.strftime("%Y%m%d-%H%M%S"))
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".write-test")
        open(probe, "w").close()
        os.remove(probe)
    except OSError as err:
        _die(f"--out {out!r} is not writable: {err}")

    from tf_vrre import mixture as mx

    data = mx.make_data(args.data_size, seed=args.seed)
    exact_left, exact_right = mx.mode_weights(data, args.tau1)
    print(f"Gaussian mixture, N={args.data_size}, tau=({args.tau1}, {args.tau2}), eta={args.lr}, "
          f"n={args.batch}, m={args.m}, F={args.correction}, {args.steps} steps, seed={args.seed}")
    results = {}
    for method in mx.METHODS:
        prog = _Progress(method, args.steps)
        r = mx.run(method, data, steps=args.steps, learning_rate=args.lr, batch_size=args.batch,
                   period=args.m, temperatures=(args.tau1, args.tau2), correction=args.correction,
                   smoothing=args.smoothing, seed=args.seed, record_every=10, callbacks=[prog.callback])
        frac, se = _mode_fraction(r["beta"], mx.PHI / 2)
        sig = r["sigma2"][len(r["sigma2"]) // 10:]
        results[method] = {
            "swaps": r.get("swaps"), "attempts": r.get("attempts"),
            "accept_rate": (r["swaps"] / r["attempts"]) if r.get("attempts") else None,
            "mean_sigma2": float(sig.mean()) if sig.size else None,
            "left_mode_weight": frac, "left_mode_weight_se": se, "seconds": r["seconds"],
        }
    vr, re = results["vr-resgld"], results["resgld"]
    summary = {
        "config": vars(args) | {"out": out},
        "exact_mode_weights": [exact_left, exact_right],
        "variance_reduction_factor": re["mean_sigma2"] / vr["mean_sigma2"] if vr["mean_sigma2"] else None,
        "methods": results,
    }
    print(f"\n{'method':<11}{'swaps':>8}{'accept':>9}{'mean sigma2':>14}{'left-mode weight':>22}{'time':>8}")
    for method, r in results.items():
        sw = "-" if r["swaps"] is None else str(r["swaps"])
        acc = "-" if r["accept_rate"] is None else f"{r['accept_rate']:.4f}"
        s2 = "-" if r["mean_sigma2"] is None else f"{r['mean_sigma2']:.4g}"
        w = f"{r['left_mode_weight']:.3f} +- {r['left_mode_weight_se']:.3f}"
        print(f"{method:<11}{sw:>8}{acc:>9}{s2:>14}{w:>22}{r['seconds']:>7.1f}s")
    print(f"{'exact':<11}{'':>8}{'':>9}{'':>14}{exact_left:>22.3f}")
    print(f"variance reduction factor (reSGLD sigma2 / VR sigma2): {summary['variance_reduction_factor']:.1f}")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"wrote {os.path.join(out, 'summary.json')}")
    return 0


def _die(message):
    sys.stderr.write(f"tf-vrre: error: {message}\n")
    raise SystemExit(2)


def main(argv=None):
    args = _parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.command == "mixture":
        return mixture(args)
    return 2  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
