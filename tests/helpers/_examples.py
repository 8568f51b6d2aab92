"""The ```python examples of a Markdown page, run in order, and the output each one shows.

A ```text block that follows a ```python block with nothing but blank lines between them is that
example's printed output. :func:`run_page` runs the examples in one namespace (they build on each
other, like a notebook) and checks each shown output against what the example printed: the same
text, and the same numbers to 1e-3 (relative or absolute), so that a float's last digit may move
with the TensorFlow version while a changed result fails.
"""

import contextlib
import io
import math
import re
import sys

FENCE = re.compile(r"^```(\w+)\n(.*?)^```\n", re.S | re.M)
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def examples(text):
    """``[(code, shown output or None)]`` of the ```python blocks of ``text``, in order."""
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(text)]
    out = []
    for i, (lang, body, _, end) in enumerate(blocks):
        if lang != "python":
            continue
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        shown = nxt[1] if nxt and nxt[0] == "text" and not text[end : nxt[2]].strip() else None
        out.append((body, shown))
    return out


def same_output(shown, printed):
    """Whether ``printed`` is ``shown`` (text equal once numbers are set aside; numbers equal to
    1e-3 relative or absolute)."""
    if NUMBER.sub("#", shown.strip()) != NUMBER.sub("#", printed.strip()):
        return False
    pairs = zip(NUMBER.findall(shown.strip()), NUMBER.findall(printed.strip()))
    return all(math.isclose(float(a), float(b), rel_tol=1e-3, abs_tol=1e-3) for a, b in pairs)


def run_page(text, name, namespace):
    """Runs every example of ``text`` in ``namespace``; each one's printed output also goes to
    ``sys.stdout``. Returns ``[(shown, printed)]`` of the examples whose output differs from what
    the page shows."""
    wrong = []
    for code, shown in examples(text):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(code, name, "exec"), namespace)
        sys.stdout.write(buffer.getvalue())
        if shown is not None and not same_output(shown, buffer.getvalue()):
            wrong.append((shown, buffer.getvalue()))
    return wrong
