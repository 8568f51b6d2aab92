"""Every ```python block in README.md runs as written and prints the output shown under it.

The blocks build on each other, like a notebook; a ```text block right after a block is its
output (``tests/helpers/_examples.py``: the same text, numbers to 1e-3). The longer examples
live in docs/ and run in tests/test_docs.py.
"""

import os
import re
import warnings

import _examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
GETTING_STARTED = os.path.join(ROOT, "docs", "getting-started.md")
QUICK_COMMAND = 'pip install -e ".[test]" && python -m pytest -q --quick'


def test_readme_python_blocks_run_and_print_what_they_show(capsys):
    text = open(README).read()
    blocks = _examples.examples(text)
    assert len(blocks) >= 2 and all(shown for _, shown in blocks), "every README example shows its output"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrong = _examples.run_page(text, "README.md", {"__name__": "__readme__"})
    ours = {w.category.__name__ for w in caught if w.category.__module__.startswith("tf_vrre")}
    assert all(f"`{name}`" in text for name in ours), f"README examples raise {ours}: say why beside them"
    assert not wrong, "README output differs from what it shows:\n" + "\n".join(
        f"shown:   {shown.strip()}\nprinted: {printed.strip()}" for shown, printed in wrong
    )
    out = capsys.readouterr().out
    assert re.search(r"^\d+ samples; BMA probabilities \[\[", out, flags=re.M), out


def test_shown_output_comparison():
    # numbers may move in the last digits (another TensorFlow), text and counts may not
    assert _examples.same_output("{'loss': 0.0614, 'swaps': 3.0}", "{'loss': 0.06141, 'swaps': 3.0}\n")
    assert not _examples.same_output("{'loss': 0.0614, 'swaps': 3.0}", "{'loss': 0.0614, 'swaps': 4.0}")
    assert not _examples.same_output("{'loss': 0.0614}", "{'accuracy': 0.0614}")
    assert not _examples.same_output("2 samples", "2 samples; 3 more")


def bash_commands(text):
    """The commands of the ```bash blocks of ``text``: continued lines joined, spaces collapsed,
    comments dropped."""
    commands = []
    for body in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", body)
        commands += [" ".join(line.split("#")[0].split()) for line in joined.splitlines() if line.split("#")[0].strip()]
    return commands


def ci_test_command():
    """The test command CI runs (``.ci/run``, in a fresh virtualenv)."""
    lines = [line.strip() for line in open(os.path.join(ROOT, ".ci", "run")) if line.startswith("pip install")]
    assert len(lines) == 1 and lines[0].endswith("python -m pytest -q"), lines
    return " ".join(lines[0].split())


def test_the_test_commands_shown_are_the_ones_that_run(pytestconfig):
    """The README and getting-started show the full test command as CI runs it, and the quick one
    beside it, whose ``--quick`` is this suite's option (tests/conftest.py)."""
    full = ci_test_command().replace(" --quiet", "")
    for page in (README, GETTING_STARTED):
        commands = [c.replace(" --quiet", "") for c in bash_commands(open(page).read())]
        assert full in commands, f"{os.path.basename(page)} does not show CI's test command: {full}"
        assert QUICK_COMMAND in commands, f"{os.path.basename(page)} does not show the quick tests"
        text = " ".join(open(page).read().split())
        assert text.index(QUICK_COMMAND) < text.index("&& mypy && lint-imports && python -m pytest -q")
    assert pytestconfig.getoption("quick") in (True, False)  # --quick exists


def test_bash_commands_are_read_as_run():
    text = "```bash\npip install -e . \\\n    && tf-vrre mixture   # the main job\n```\n"
    assert bash_commands(text) == ["pip install -e . && tf-vrre mixture"]
