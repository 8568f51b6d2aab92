"""The Gaussian-mixture target's exact tempered answers, computed here independently of tf_vrre.

``x_i | beta ~ 0.5 N(beta, s^2) + 0.5 N(phi - beta, s^2)``, prior ``beta ~ N(0, prior_sd^2)``; the
tempered posterior ``exp(-U / tau)`` is one-dimensional, so its mode weights are integrals:
adaptive quadrature (``scipy.integrate.quad``) of the density written out below, not the
library's grid and trapezoid rule.  The sampler tests compare their chains with these numbers.
"""

import numpy as np
from scipy import integrate, optimize


def energy(beta, x, phi=20.0, sigma=5.0, prior_sd=10.0):
    """``U(beta) = -sum_i log p(x_i | beta) - log p(beta)`` (up to a constant) at one ``beta``."""
    x = np.asarray(x, np.float64).reshape(-1)
    near = -0.5 * ((x - beta) / sigma) ** 2
    mirrored = -0.5 * ((x - (phi - beta)) / sigma) ** 2
    return float(-np.logaddexp(near, mirrored).sum() + 0.5 * beta**2 / prior_sd**2)


def _lowest(x, lo, hi, target):
    """``(beta, U)`` of the lowest energy in ``[lo, hi]`` (a coarse scan, then a bounded minimiser)."""
    grid = np.linspace(lo, hi, 2001)
    u = [energy(b, x, *target) for b in grid]
    i = int(np.argmin(u))
    best = optimize.minimize_scalar(
        lambda b: energy(b, x, *target), bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]), method="bounded"
    )
    return (float(best.x), float(best.fun)) if best.fun < u[i] else (float(grid[i]), float(u[i]))


def mode_weights(x, temperature, phi=20.0, sigma=5.0, prior_sd=10.0, reach=80.0):
    """Exact ``(P(beta < phi / 2), P(beta >= phi / 2))`` at ``temperature``.

    Each side is integrated over ``reach`` beyond the split point; the density at the far ends
    is checked to be negligible (< e^-40 of the peak), so nothing is cut off.
    """
    target, split = (phi, sigma, prior_sd), phi / 2.0
    (left_mode, left_u), (right_mode, right_u) = (
        _lowest(x, split - reach, split, target),
        _lowest(x, split, split + reach, target),
    )
    u0 = min(left_u, right_u)

    def density(b):
        return np.exp(-(energy(b, x, *target) - u0) / temperature)

    for end in (split - reach, split + reach):
        assert density(end) < np.exp(-40.0), f"reach {reach} cuts off the density at {end}"
    left = integrate.quad(density, split - reach, split, points=[left_mode], limit=400, epsabs=0, epsrel=1e-10)[0]
    right = integrate.quad(density, split, split + reach, points=[right_mode], limit=400, epsabs=0, epsrel=1e-10)[0]
    return left / (left + right), right / (left + right)


def barrier(x, phi=20.0, sigma=5.0, prior_sd=10.0, reach=80.0):
    """``U(phi / 2) - min U`` in nats (temperature 1): the energy barrier between the modes."""
    target, split = (phi, sigma, prior_sd), phi / 2.0
    low = min(_lowest(x, split - reach, split, target)[1], _lowest(x, split, split + reach, target)[1])
    return energy(split, x, *target) - low
