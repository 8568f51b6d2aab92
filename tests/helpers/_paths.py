"""Paths of the test tree: the repository root, tests/helpers (job scripts) and tests/fixtures."""

import os

HELPERS = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HELPERS)
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(TESTS, "fixtures")
