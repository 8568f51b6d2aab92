"""The configurations of ``step_cost.py`` by name, and its report: the printed tables of per-step
times, ratios and parts of a step, and the table of the results file.
"""

import results

CONFIGS = {
    "sghmc": "(a) SGHMC, 1 chain",
    "indep": "(a2) 2 chains, no swaps",
    "resghmc": "(b) reSGHMC, 2 chains",
    "vr": "(c) VR-reSGHMC, energy_mode=train",
    "vr_inf": "(d) VR-reSGHMC, energy_mode=inference",
    "vr_thin4": "(e) (d) + attempt_every=4",
    "vr_thin8": "(f) (d) + attempt_every=8",
}
LABELS = {
    "sghmc": "SGHMC, 1 chain",
    "indep": "2 chains, no swaps",
    "resghmc": "reSGHMC",
    "vr": 'VR-reSGHMC, `energy_mode="train"`',
    "vr_inf": 'VR-reSGHMC, `"inference"` (cached snapshot NLLs)',
    "vr_thin4": "same + `CorrectedSwap(attempt_every=4)`",
    "vr_thin8": "same + `attempt_every=8`",
}
VR_CONFIGS = ("vr", "vr_inf", "vr_thin4", "vr_thin8")
RATIOS = {  # name: (numerator, denominator, target, paper)
    "vr/resghmc": ("vr", "resghmc", 1.20, 1.40),
    "resghmc/sghmc": ("resghmc", "sghmc", 2.2, None),
    "vr_inf/resghmc": ("vr_inf", "resghmc", 1.20, 1.40),
    "vr_thin4/resghmc": ("vr_thin4", "resghmc", 1.20, None),
    "vr_thin8/resghmc": ("vr_thin8", "resghmc", 1.20, None),
}
CLOCKS = ("wall", "cpu")


def print_parts(med, full, args, logs):
    """Each part's share of a step (wall clock), from differences of the measured medians:
    chains (2 chains without swaps), swap bookkeeping (reSGHMC - that), full pass (measured
    alone, amortised over m), swap energies (the rest of a VR step); and swaps per epoch."""
    wall = med["wall"]
    if not {"indep", "resghmc"} <= set(wall) or full is None:
        return None
    chains, swap = wall["indep"], wall["resghmc"] - wall["indep"]
    refresh = full["wall"] / args.m
    epoch = args.data_size / args.batch
    print(
        f"\n{'parts of a step, wall ms':<40s} {'chains':>8s} {'swap':>7s} {'energies':>9s} {'full pass':>10s}"
        f" {'total':>7s} {'/ reSGHMC':>10s} {'swaps/epoch':>12s}"
    )
    parts = {}
    for c in ("resghmc",) + VR_CONFIGS:
        if c not in wall:
            continue
        energies = wall[c] - wall["resghmc"] - (refresh if c in VR_CONFIGS else 0.0)
        row = [chains, swap, energies if c in VR_CONFIGS else 0.0, refresh if c in VR_CONFIGS else 0.0]
        parts[c] = dict(zip(("chains", "swap", "energies", "full_pass"), row))
        steps_done = args.repeats * args.steps + 2 * args.warmup  # swaps in logs are cumulative
        per_epoch = logs[c].get("swaps", 0.0) / steps_done * epoch
        parts[c]["swaps_per_epoch"] = per_epoch
        print(
            f"{CONFIGS[c]:<40s} "
            + " ".join(f"{v * 1e3:{w}.1f}" for v, w in zip(row, (8, 7, 9, 10)))
            + f" {wall[c] * 1e3:7.1f} {wall[c] / wall['resghmc']:10.3f} {per_epoch:12.2f}"
        )
    return parts


def print_tables(args, per_step, med, ratios, full, extrapolated):
    """Prints ms per step of every configuration (median, min, max per clock), the ratios of the
    medians against their targets, and the full pass with the VR ratios extrapolated from it."""
    print()
    print(
        f"{'configuration':<40s} {'wall ms/step: median':>21s} {'min':>7s} {'max':>7s}"
        f" {'cpu ms/step: median':>20s} {'min':>7s} {'max':>7s}"
    )
    for c in args.configs:
        row = f"{CONFIGS[c]:<40s}"
        for clock, width in (("wall", 21), ("cpu", 20)):
            v = per_step[clock][c]
            row += f" {med[clock][c] * 1e3:{width}.1f} {min(v) * 1e3:7.1f} {max(v) * 1e3:7.1f}"
        print(row)
    print()
    print(f"{'ratio (of medians)':<40s} {'wall':>7s} {'cpu':>7s} {'target':>8s} {'paper':>6s}")
    for name, (_, _, target, paper) in RATIOS.items():
        if name not in ratios["wall"]:
            continue
        w, c = ratios["wall"][name], ratios["cpu"][name]
        verdict = (
            ""
            if target is None
            else "   "
            + ", ".join(f"{clock} {'ok' if ratios[clock][name] <= target else 'ABOVE TARGET'}" for clock in CLOCKS)
        )
        print(
            f"{name:<40s} {w:7.3f} {c:7.3f} {f'<= {target:.2f}' if target else '':>8s} "
            f"{f'{paper:.2f}' if paper else '':>6s}{verdict}"
        )
    if full is not None:
        print()
        print(
            f"full pass (2 nets x {args.data_size} images, inference, batch {args.ref_batch}): "
            f"wall {full['wall']:.3f} s, cpu {full['cpu']:.3f} s; amortised over m={args.m}: "
            f"wall {full['wall'] / args.m * 1e3:.2f} ms/step"
        )
        for name in extrapolated["wall"]:
            label = f"{name} at N={args.paper_data_size}, m={args.paper_m}"
            print(
                f"{label:<40s} {extrapolated['wall'][name]:7.3f} {extrapolated['cpu'][name]:7.3f}"
                f"   (estimate: measured full-pass cost scaled to "
                f"{args.paper_data_size / args.paper_m:.1f} images/step/chain)"
            )


def results_table(args, med, parts):
    """The page's table: wall ms per step, the ratio to reSGHMC (wall, cpu), each part of a step
    (ms) and the accepted swaps per epoch (parts only when the 2-chain and reSGHMC steps ran)."""
    rows, parts = [], parts or {}
    for c in args.configs:
        ratio = [med[k][c] / med[k]["resghmc"] for k in CLOCKS] if "resghmc" in med["wall"] else None
        p = parts.get(c)
        cells = (
            [p[k] * 1e3 for k in ("chains", "swap", "energies", "full_pass")] + [p["swaps_per_epoch"]]
            if p
            else [1e3 * med["wall"][c] if c == "indep" else None] + [None] * 4
        )
        rows.append([LABELS[c], 1e3 * med["wall"][c], None if c in ("sghmc", "indep") else ratio, *cells])
    return results.table(
        [
            "configuration",
            "wall ms/step",
            "/ reSGHMC (wall, cpu)",
            "chains",
            "swap",
            "swap energies",
            "full pass",
            "swaps / epoch",
        ],
        ["{}", "{:.1f}", "{:.2f}, {:.2f}", "{:.1f}", "{:.1f}", "{:.1f}", "{:.1f}", "{:.1f}"],
        rows,
        keys=args.configs,
    )
