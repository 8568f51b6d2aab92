"""The results files of the benchmarks: ``benchmarks/results/<name>.json``, one per benchmark page.

Every benchmark script ends by writing its results file (:func:`write`): the tables its page
shows, as numbers, with the command that produced them, the git commit, the date, the hardware
and the package versions. ``python benchmarks/render_docs.py`` writes the pages' tables and the
README's numbers from these files, and ``tests/test_benchmark_results.py`` fails when a page and
its results file disagree. So a number changes in the docs only by re-running its benchmark.

A table is ``{"columns": [...], "formats": [...], "rows": [[...], ...], "keys": [...]}`` (``keys``:
optional, one name per row, for looking a row up; not shown). A cell is rendered
with its column's format (``str.format``): a list is spread into it (``"{:.3f} +- {:.3f}"``
with ``[0.649, 0.050]``), ``None`` is an empty cell, a string is shown as written (a label,
or ``"-"`` where a method has no such number), and ``{"value": v, "format": f}`` is ``v`` in its
own format ``f`` (a cell without a standard error in a column of ``mean +- se``; bold).

This module needs neither TensorFlow nor Keras (the docs test imports it).
"""

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
PACKAGES = ("tensorflow", "keras", "tensorflow-probability", "numpy")


def path_of(name):
    """``benchmarks/results/<name>.json``."""
    return RESULTS / f"{name}.json"


def table(columns, formats, rows, keys=None):
    """A table of a results file (see the module docstring); checks the shape now, not at rendering."""
    if len(formats) != len(columns) or any(len(row) != len(columns) for row in rows):
        raise ValueError(
            f"table: {len(columns)} columns, {len(formats)} formats, row lengths {sorted({len(row) for row in rows})}"
        )
    if keys is not None and len(keys) != len(rows):
        raise ValueError(f"table: {len(keys)} keys for {len(rows)} rows")
    out = {"columns": list(columns), "formats": list(formats), "rows": [list(row) for row in rows]}
    return out if keys is None else {**out, "keys": list(keys)}


def value(res, table_id, key, column):
    """The number in row ``key`` (its entry of ``keys``), column ``column`` (its heading) of a
    table of the results ``res``; a cell with its own format gives its value."""
    tab = res["tables"][table_id]
    if key not in tab.get("keys", []):
        raise KeyError(f"table {table_id!r} has no row {key!r} (keys: {tab.get('keys')})")
    v = tab["rows"][tab["keys"].index(key)][tab["columns"].index(column)]
    return v["value"] if isinstance(v, dict) else v


def cell(value, fmt):
    """One cell as text (see the module docstring)."""
    if isinstance(value, dict):
        value, fmt = value["value"], value["format"]
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return fmt.format(*value) if isinstance(value, (list, tuple)) else fmt.format(value)


def markdown(tab):
    """The Markdown table of ``tab``."""
    lines = ["| " + " | ".join(tab["columns"]) + " |", "|" + "---|" * len(tab["columns"])]
    for row in tab["rows"]:
        lines.append("| " + " | ".join(cell(v, f) for v, f in zip(row, tab["formats"])) + " |")
    return "\n".join(lines)


def _git(*args):
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def environment(argv=None):
    """The command (as run from the repository), UTC date, git commit (and whether the tree had
    uncommitted changes), hardware and package versions of this run."""
    argv = sys.argv if argv is None else argv
    script = Path(argv[0]).resolve()
    try:
        script = script.relative_to(ROOT)
    except ValueError:
        script = Path(argv[0]).name
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain")
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "command": " ".join(["python", str(script), *argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit,
        "git_dirty": None if status is None else bool(status),
        "hardware": {
            "machine": platform.machine(),
            "processor": platform.processor() or None,
            "cpus": os.cpu_count(),
            "system": platform.system(),
        },
        "versions": versions,
    }


def check_target(path, force):
    """Refuses (before any work) to replace an existing results file unless ``force``."""
    path = Path(path)
    if path.exists() and not force:
        raise SystemExit(
            f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} exists; pass "
            "--force to replace it (its page is re-rendered by `python benchmarks/render_docs.py`)"
        )
    return path


def write(path, tables, **extra):
    """Writes the results file ``path``: :func:`environment`, ``tables`` (``{id: table}``) and any
    ``extra`` keys (settings, raw measurements; ``command`` replaces the command line of this
    process), atomically (a temporary file, then a rename)."""
    path = Path(path)
    results = {**environment(), "tables": tables, **extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(results, indent=1) + "\n")
    os.replace(tmp, path)
    print(f"results: {path}; `python benchmarks/render_docs.py` updates the docs from it")
    return results


def load(name):
    """The results file ``name`` (``benchmarks/results/<name>.json``) as a dict."""
    return json.loads(path_of(name).read_text())


def add_arguments(parser, name):
    """The two flags every benchmark has: ``--results PATH`` and ``--force``."""
    parser.add_argument(
        "--results", default=str(path_of(name)), help=f"results file (default benchmarks/results/{name}.json)"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing results file")
