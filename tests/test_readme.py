"""Every ```python block in README.md runs as written.

The image-workflow example reads ``.npz`` files from ``TF_VRRE_DATA_DIR``: the test points it at
synthetic images in the documented layout (``tests/helpers/_synthetic_images.py``), so it needs no data set.
"""

import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(__file__)), "README.md")


def test_readme_python_blocks_run(capsys, tmp_path, monkeypatch):
    from _synthetic_images import write_dataset

    # the example trains on 1,024 images with 128 held out and evaluates on 500 test / OOD images
    monkeypatch.setenv("TF_VRRE_DATA_DIR", write_dataset(tmp_path / "data", train=1280, test=500, ood=500))
    text = open(README).read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    namespace = {"__name__": "__readme__"}  # blocks build on each other, like a notebook
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "swaps" in out
