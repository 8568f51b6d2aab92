"""Runs a benchmark script's command lines in this process, one after the other, as ``python
SCRIPT ARGS`` would (``runpy`` with ``__name__ == "__main__"``), and prints, per command line, a
JSON line: its exit status, what it wrote on stderr, and whether TensorFlow or Keras had been
imported by then.  Used by ``tests/test_benchmark_inputs.py``: a refused flag must end the script
before TensorFlow starts, so one process checks many command lines in about a second.

    python tests/helpers/_bench_cli.py SCRIPT CASES_JSON [--hide MODULE]

``CASES_JSON``: a JSON list of argument lists.  ``--hide sklearn`` makes ``sklearn`` unimportable
(as if it were not installed).
"""

import contextlib
import io
import json
import runpy
import sys


def main():
    script, cases = sys.argv[1], json.loads(sys.argv[2])
    for i, flag in enumerate(sys.argv[3:]):
        if flag == "--hide":
            sys.modules[sys.argv[3 + i + 1]] = None  # import fails, importlib.util.find_spec returns None
    for argv in cases:
        err, out = io.StringIO(), io.StringIO()
        sys.argv = [script, *argv]
        code = 0
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, (int, type(None))):
                    err.write(f"{e.code}\n")
            except Exception as e:  # noqa: BLE001  (a traceback is reported, the next case still runs)
                code = "exception"
                err.write(f"{type(e).__name__}: {e}\n")
        record = {
            "argv": argv,
            "code": code,
            "stderr": err.getvalue(),
            "stdout": out.getvalue(),
            "tensorflow": "tensorflow" in sys.modules,
            "keras": "keras" in sys.modules,
        }
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
