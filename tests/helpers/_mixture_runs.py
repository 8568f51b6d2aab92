"""The flags of a ``tf-vrre mixture`` study small enough for the test suite (seconds, not minutes)."""

TINY = [
    "--steps", "400", "--data-size", "300", "--seeds", "1", "--variance-m", "40", "--variance-steps", "200",
    "--sens-ratios", "0.5", "--sens-lrs", "1e-4", "--sens-seeds", "1", "--sens-steps", "20",
]  # fmt: skip
"""``tf-vrre mixture`` flags: one seed, 400 iterations on 300 data, the variance and sensitivity
figures at their smallest."""
