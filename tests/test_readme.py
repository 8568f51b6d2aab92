"""Every ```python block in README.md runs as written and prints the output shown under it.

The blocks build on each other, like a notebook; a ```text block right after a block is its
output (``tests/helpers/_examples.py``: the same text, numbers to 1e-3). The longer examples
live in docs/ and run in tests/test_docs.py.
"""

import os
import re

import _examples

README = os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")


def test_readme_python_blocks_run_and_print_what_they_show(capsys):
    text = open(README).read()
    blocks = _examples.examples(text)
    assert len(blocks) >= 2 and all(shown for _, shown in blocks), "every README example shows its output"
    wrong = _examples.run_page(text, "README.md", {"__name__": "__readme__"})
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
