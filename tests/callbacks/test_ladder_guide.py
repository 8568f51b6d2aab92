"""The Python examples of docs/guides/ladder.md run, in order, and print what the page says they print."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "guides", "ladder.md")


def test_ladder_guide_examples_run(capsys, tmp_path, monkeypatch, recwarn):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", open(PAGE).read(), flags=re.S)
    assert len(blocks) == 3
    namespace = {"__name__": "__docs__"}
    for block in blocks:
        exec(compile(block, PAGE, "exec"), namespace)
    out = capsys.readouterr().out
    assert "chains; rejection per pair" in out and "ladder before: [1.0, 1.5, 2.0, 2.5] after: [1.0," in out
    assert out.count("\n") >= 4 and "Lambda" in out and "round" in out  # the table
    assert "2.0 0.3\n" in out  # the swap-rate target
    assert os.path.getsize(os.path.join(namespace["run"], "barrier.png")) > 10_000
    hist = namespace["history"].history
    assert hist["temperature_0"][-1] == 1.0 and hist["temperature_3"][-1] == 2.5
    assert hist["temperature_1"][-1] == hist["temperature_1"][-5]  # fixed after the tuning phase
    assert not [w for w in recwarn if "LadderTuner" in str(w.message)]  # 4 chains are enough here
