"""Every ```python block in README.md runs as written.

The longer examples live in docs/ and run in tests/test_docs.py.
"""

import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")


def test_readme_python_blocks_run(capsys):
    text = open(README).read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    namespace = {"__name__": "__readme__"}  # blocks build on each other, like a notebook
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "swaps" in out and "sigma2_0" in out
    assert re.search(r"^\d+ samples; BMA probabilities \[\[", out, flags=re.M), out
