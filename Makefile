# Local shortcuts; CI runs .ci/run (the README's test command).
.PHONY: docs test quick doctest clean-docs

PYTHON ?= python

# the documentation site, warnings as errors, nothing fetched from the network
docs:
	$(PYTHON) -m sphinx -W --keep-going -b html docs docs/_build/html

test:
	$(PYTHON) -m pytest -q

# the quick subset (tests/conftest.py QUICK): every layer of the package in a few minutes
quick:
	$(PYTHON) -m pytest -q --quick

# the docstring examples only
doctest:
	$(PYTHON) -m pytest -q tests/test_doctests.py

clean-docs:
	rm -rf docs/_build docs/api
