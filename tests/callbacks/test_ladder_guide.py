"""The Python examples of docs/guides/ladder.md run, in order, and print what the page shows under
them (``tests/helpers/_examples.py``: the same text, numbers to 1e-3)."""

import os

import _examples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "guides", "ladder.md")


def test_ladder_guide_examples_run(capsys, tmp_path, monkeypatch, recwarn):
    monkeypatch.chdir(tmp_path)
    text = open(PAGE).read()
    blocks = _examples.examples(text)
    assert len(blocks) == 3 and all(shown for _, shown in blocks), "every example of the guide shows its output"
    namespace = {"__name__": "__docs__"}
    wrong = _examples.run_page(text, "docs/guides/ladder.md", namespace)
    assert not wrong, "the ladder guide's output differs from what it shows:\n" + "\n".join(
        f"shown:\n{shown}printed:\n{printed}" for shown, printed in wrong
    )
    out = capsys.readouterr().out
    assert "chains; rejection per pair" in out and "ladder before: [1.0, 1.5, 2.0, 2.5]\nladder after:  [1.0," in out
    assert "Lambda" in out and "round" in out  # the table
    assert "2.0 0.3\n" in out  # the swap-rate target
    assert os.path.getsize(os.path.join(namespace["run"], "barrier.png")) > 10_000
    hist = namespace["history"].history
    assert hist["temperature_0"][-1] == 1.0 and hist["temperature_3"][-1] == 2.5
    assert hist["temperature_1"][-1] == hist["temperature_1"][-5]  # fixed after the tuning phase
    assert not [w for w in recwarn if "LadderTuner" in str(w.message)]  # 4 chains are enough here
