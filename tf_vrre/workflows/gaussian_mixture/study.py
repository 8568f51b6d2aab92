"""The paper's Section 5.1 study on the Gaussian mixture (``tf-vrre mixture``): SGLD, reSGLD and
VR-reSGLD against the exact tempered posterior, over chain seeds; the variance of the swap
energies by ``m``; the sensitivity grid of sigma^2 over ``(n/N, eta)``; figures and
``summary.json`` (written as each method / seed finishes, so an interrupted study keeps them).
"""

import os
import sys

import keras
import numpy as np

import tf_vrre.workflows.gaussian_mixture.plots as plots
import tf_vrre.workflows.gaussian_mixture.target as target
import tf_vrre.workflows.gaussian_mixture.tuning as tuning
from tf_vrre.callbacks import progress
from tf_vrre.diagnostics import chain_summary
from tf_vrre.runs import atomic
from tf_vrre.runs.run_json import write_json


class Progress:
    """Progress of one run on stderr (stdout keeps the results) under a label line:
    :class:`tf_vrre.callbacks.progress.StepProgress` (a ``keras.utils.Progbar`` on a terminal,
    plain lines in a file); ``.callback`` is a Keras callback feeding it.  ``quiet``: nothing."""

    def __init__(self, label, steps, quiet=False):
        outer = self

        class CB(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                outer.update(batch + 1)

        self.callback = CB()
        self.bar = None
        if not quiet:
            sys.stderr.write(f"{label}\n")
            self.bar = progress.StepProgress(steps)

    def update(self, done):
        if self.bar is not None:
            self.bar.update(done)


def _mean_se(values):
    v = np.asarray([x for x in values if x is not None], np.float64)
    if v.size == 0:
        return None, None
    return float(v.mean()), (float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else None)


def _beta_chains(rs, burn_in):
    """ESS / R-hat (TFP) of the cold chain's beta after burn-in, seeds as chains, each split in
    halves (one seed: split-R-hat of its halves)."""
    traces = [r["beta"][int(len(r["beta"]) * burn_in) :] for r in rs]
    n = min(len(t) for t in traces)
    if n < 8:
        return {"beta_ess": None, "beta_rhat": None}
    s = chain_summary(np.stack([t[:n] for t in traces]))
    return {"beta_ess": s["ess"], "beta_rhat": s["rhat"], "beta_draws": n * len(traces)}


class Study:
    """One study (``tf-vrre mixture``): the exact answer, the runs, the figures, the summary.

    ``args``: the settings (``argparse.Namespace`` of ``tf-vrre mixture``, checked; ``args.quiet``:
    no progress on stderr); ``scenario``: its name; ``out``: the output directory."""

    def __init__(self, args, scenario, out):
        self.args, self.scenario, self.out = args, scenario, out
        self.quiet = bool(getattr(args, "quiet", False))
        self.target = target.Mixture(args.phi, args.sigma, args.prior_sd, args.true_beta)
        self.seeds = [args.seed + i for i in range(args.seeds)]
        self.data = target.make_data(args.data_size, seed=args.data_seed, target=self.target)
        t = self.target
        grid = target.default_grid(self.data, args.tau1, target=t)
        u = target.energy(grid, self.data, target=t)  # once: N = 1e5 makes every grid evaluation cost seconds
        self.grid, self.dens = target.exact_posterior(self.data, args.tau1, grid, u, target=t)
        _, self.cdf = target.exact_cdf(self.data, args.tau1, grid, u, target=t)
        self.exact_left, self.exact_right = target.mode_weights(self.data, args.tau1, grid=grid, u=u, target=t)
        lo, hi = self.grid < t.split, self.grid >= t.split
        self.modes = (float(self.grid[lo][np.argmax(self.dens[lo])]), float(self.grid[hi][np.argmax(self.dens[hi])]))
        self.barrier = target.barrier(self.data, grid=grid, u=u, target=t)

    def describe(self):
        a, t = self.args, self.target
        print(
            f"Gaussian mixture ({self.scenario}): phi={t.phi:g}, sigma={t.sigma:g}, prior sd={t.prior_sd:g}, "
            f"N={a.data_size} (data seed {a.data_seed}, beta={t.true_beta:g}), tau=({a.tau1:g}, {a.tau2:g}), "
            f"eta={a.lr:g}, n={a.batch}, m={a.m}, F={a.correction:g} (VR) / {a.correction_re:g} (reSGLD), "
            f"penalty {a.penalty}, {a.steps} iterations, chain seeds {self.seeds}"
        )
        print(
            f"exact: modes at {self.modes[0]:.2f} and {self.modes[1]:.2f}, weights {self.exact_left:.3f} / "
            f"{self.exact_right:.3f}; barrier at beta={t.split:g}: {self.barrier:.4g} nats = "
            f"{self.barrier / a.tau1:.3g} x tau1 = {self.barrier / a.tau2:.3g} x tau2"
        )

    def run(self, method, seed, steps, label, show=True, **over):
        a = self.args
        kw = dict(
            learning_rate=a.lr,
            batch_size=a.batch,
            period=a.m,
            temperatures=(a.tau1, a.tau2),
            correction=a.correction_re if method == "resgld" else a.correction,
            smoothing=a.smoothing,
            initial=a.initial,
            seed=seed,
            record_every=a.record_every,
            num_chains=a.ladder_chains,
            target=self.target,
            swap_options={"penalty": a.penalty},
        )
        kw.update(over)
        callbacks = [Progress(label, steps, quiet=self.quiet).callback] if show else []
        callbacks += list(kw.pop("callbacks", ()))
        return target.run(method, self.data, steps=steps, callbacks=callbacks, **kw)

    def main_runs(self, runs, on_finished):
        """Every method, every chain seed into ``runs`` (``{method: [run dicts]}``); ``on_finished(runs)``
        after each."""
        for method in self.args.methods:
            for seed in self.seeds:
                runs.setdefault(method, []).append(
                    self.run(
                        method,
                        seed,
                        self.args.steps,
                        f"{method} seed {seed}",
                        **tuning.run_options(self.args, method, seed, self.out),
                    )
                )
                on_finished(runs)
        return runs

    def save_partial(self, runs, wall, status="running"):
        """``summary.json`` (``status``, the finished methods / seeds) and ``traces.npz`` (their
        recorded beta and sigma2), both written atomically."""
        arrays = {
            f"{m}/seed{seed}/{k}": r[k]
            for m, rs in runs.items()
            for seed, r in zip(self.seeds, rs)
            for k in ("beta", "sigma2")
        }
        atomic.savez(os.path.join(self.out, "traces.npz"), **arrays)
        results = {m: self.aggregate(m, rs) for m, rs in runs.items()}
        write_json(os.path.join(self.out, "summary.json"), self.summary(results, None, {}, None, wall, status))

    def aggregate(self, method, rs):
        """Per-seed numbers and their mean +- SE across seeds for one method."""
        a, split = self.args, self.target.split
        per_seed = []
        for seed, r in zip(self.seeds, rs):
            b = r["beta"][int(len(r["beta"]) * a.burn_in) :]
            left, left_bm = target.left_fraction(b, split)
            sig = r["sigma2"][int(len(r["sigma2"]) * a.burn_in) :]
            per_seed.append(
                {
                    "seed": seed,
                    "swaps": r.get("swaps"),
                    "attempts": r.get("attempts"),
                    "pair_swaps": r.get("pair_swaps"),
                    "temperatures": r.get("temperatures"),
                    "accept_rate": (r["swaps"] / r["attempts"]) if r.get("attempts") else None,
                    "mean_sigma2": float(sig.mean()) if sig.size else None,
                    "left_mode_weight": left,
                    "left_mode_weight_batch_means_se": left_bm,
                    "mode_changes": target.mode_changes(r["beta"], split),
                    "ks": target.ks_distance(b, self.grid, self.cdf),
                    "seconds": r["seconds"],
                }
            )
        agg = {}
        for key in ("swaps", "accept_rate", "mean_sigma2", "left_mode_weight", "mode_changes", "ks"):
            agg[key], agg[key + "_se"] = _mean_se([p[key] for p in per_seed])
        agg["seconds"] = float(sum(p["seconds"] for p in per_seed))
        agg.update(_beta_chains(rs, a.burn_in))
        agg["per_seed"] = per_seed
        return agg

    def variance_runs(self, runs):
        """variance.png curves (reSGLD and VR-reSGLD at several m) and mean sigma2 by m."""
        a = self.args
        curves = []
        if "resgld" in runs:
            curves.append((f"reSGLD (F={a.correction_re:g})", "resgld", runs["resgld"][0]["sigma2"]))
        if "vr-resgld" in runs:
            curves.append((f"VR-reSGLD m={a.m}", "vr-resgld", runs["vr-resgld"][0]["sigma2"]))
        variance_m = {}
        for period in a.variance_m:
            if period == a.m and "vr-resgld" in runs:
                continue
            s2 = self.run("vr-resgld", self.seeds[0], a.variance_steps, f"variance m={period}", period=period)["sigma2"]
            variance_m[str(period)] = float(s2[len(s2) // 10 :].mean())
            curves.append((f"VR-reSGLD m={period}", "vr-resgld", s2))
        horizon = a.variance_steps // a.record_every
        return [(lab, meth, s[:horizon]) for lab, meth, s in curves], variance_m

    def sensitivity(self):
        """log10 sigma2 of VR-reSGLD over (n/N, eta): ``[len(lrs), len(ratios)]``."""
        a = self.args
        sens = np.zeros((len(a.sens_lrs), len(a.sens_ratios)))
        bar, done = Progress("sensitivity grid", len(a.sens_ratios) * len(a.sens_lrs) * a.sens_seeds, self.quiet), 0
        for j, ratio in enumerate(a.sens_ratios):
            n = max(1, int(round(ratio * a.data_size)))
            for i, lr in enumerate(a.sens_lrs):
                vals = []
                for seed in self.seeds[:1] + [self.seeds[0] + 1000 + k for k in range(a.sens_seeds - 1)]:
                    r = self.run(
                        "vr-resgld",
                        seed,
                        a.sens_steps,
                        "",
                        show=False,
                        batch_size=n,
                        learning_rate=lr,
                        record_every=1,
                        jit_compile=False,
                    )  # short: no XLA compile
                    vals.append(float(r["sigma2"][len(r["sigma2"]) // 2 :].mean()))
                    done += 1
                    bar.update(done)
                sens[i, j] = float(np.log10(np.mean(vals)))
        return sens

    def figures(self, runs, curves, sens):
        a, out = self.args, self.out
        title = (
            f"N={a.data_size}, tau=({a.tau1:g},{a.tau2:g}), eta={a.lr:g}, n={a.batch}, "
            f"m={a.m}, F={a.correction:g}/{a.correction_re:g}"
        )
        plots.traces(
            os.path.join(out, "traces.png"),
            {k: v[0]["beta"] for k, v in runs.items()},
            a.record_every,
            self.modes,
            self.exact_left,
            title=f"Cold-chain traces (seed {self.seeds[0]}): {title}",
        )
        pooled = {k: np.concatenate([r["beta"][int(len(r["beta"]) * a.burn_in) :] for r in v]) for k, v in runs.items()}
        plots.density(
            os.path.join(out, "density.png"),
            pooled,
            self.grid,
            self.dens,
            {k: target.ks_distance(v, self.grid, self.cdf) for k, v in pooled.items()},
            title=f"Cold chain ({len(self.seeds)} seeds pooled) vs exact posterior at tau1={a.tau1:g}",
        )
        if curves:
            plots.variance(
                os.path.join(out, "variance.png"),
                curves,
                a.record_every,
                title=f"log10 sigma2 (seed {self.seeds[0]}): N={a.data_size}, eta={a.lr:g}, n={a.batch}",
            )
        plots.sensitivity(
            os.path.join(out, "sensitivity.png"),
            a.sens_ratios,
            a.sens_lrs,
            sens,
            title=f"VR-reSGLD log10 sigma2, m={a.m}, {a.sens_steps} its, {a.sens_seeds} seeds",
        )

    def summary(self, results, factor, variance_m, sens, wall, status="complete"):
        a = self.args
        finished = [[m, seed] for m, r in results.items() for seed in self.seeds[: len(r["per_seed"])]]
        sensitivity = (
            None
            if sens is None
            else {"ratios": list(a.sens_ratios), "lrs": list(a.sens_lrs), "log10_sigma2": sens.tolist()}
        )
        return {
            "status": status,
            "finished": finished,
            "scenario": self.scenario,
            "config": {
                k: (list(v) if isinstance(v, tuple) else v)
                for k, v in vars(a).items()
                if k not in ("command", "scenario")
            }
            | {"out": self.out},
            "target": self.target._asdict(),
            "chain_seeds": self.seeds,
            "exact": {
                "mode_weights": [self.exact_left, self.exact_right],
                "modes": list(self.modes),
                "barrier_nats": self.barrier,
                "barrier_over_tau1": self.barrier / a.tau1,
                "barrier_over_tau2": self.barrier / a.tau2,
            },
            "variance_reduction_factor": factor,
            "methods": results,
            "variance_by_m": variance_m,
            "sensitivity": sensitivity,
            "wall_seconds": wall,
        }
