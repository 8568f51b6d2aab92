"""Hand-written swap logs (``swaps.csv``, ``refresh.csv``, ``epochs.csv``) in the layout
:class:`tf_vrre.SwapLogger` writes, for the diagnostics tests."""

import os


def write_log(directory, rows, refresh=None, epochs=None):
    os.makedirs(directory, exist_ok=True)
    head = "step,epoch,pair,temperature_lo,temperature_hi,energy_lo,energy_hi,log_ratio,accept_prob,accepted,sigma2,correction"
    with open(os.path.join(directory, "swaps.csv"), "w") as f:
        f.write(head + "\n" + "".join(r + "\n" for r in rows))
    if refresh is not None:
        with open(os.path.join(directory, "refresh.csv"), "w") as f:
            f.write(
                "step,epoch,sigma2_updated,snapshot_refreshed,sigma2_0,c_0,c_1,correction\n"
                + "".join(r + "\n" for r in refresh)
            )
    if epochs is not None:
        with open(os.path.join(directory, "epochs.csv"), "w") as f:
            f.write(
                "epoch,steps,attempts,swaps,accept_rate,total_attempts,total_swaps\n"
                + "".join(r + "\n" for r in epochs)
            )
