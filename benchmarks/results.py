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

A results file is read back with :func:`read` (:func:`load` by name), which refuses, in one line
naming the file and the key, a file that is not valid JSON, a table of the wrong shape, or a NaN
or an infinity anywhere in it: no such number is rendered into a page.  Every file is written
through :mod:`tf_vrre.runs.atomic` (a fresh temporary file renamed into place: a symbolic link
planted at the name or beside it is never written through).

This module needs neither TensorFlow nor Keras (the docs test imports it).
"""

import argparse
import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

import arguments

from tf_vrre.runs import atomic

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
    """The Markdown table of ``tab``; ``ValueError`` naming the row and column of a cell its
    column's format cannot show."""
    lines = ["| " + " | ".join(tab["columns"]) + " |", "|" + "---|" * len(tab["columns"])]
    for i, row in enumerate(tab["rows"]):
        cells = []
        for column, v, f in zip(tab["columns"], row, tab["formats"]):
            try:
                cells.append(cell(v, f))
            except (ValueError, TypeError, IndexError, KeyError) as err:
                raise ValueError(f"rows[{i}], column {column!r}: {v!r} does not fit the format {f!r} ({err})") from None
        lines.append("| " + " | ".join(cells) + " |")
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


def shown(path):
    """``path`` relative to the repository when inside it (how messages name a file)."""
    path = Path(path)
    absolute = path.resolve()
    return str(absolute.relative_to(ROOT)) if absolute.is_relative_to(ROOT) else str(path)


def check_target(path, force, flag="--results"):
    """Refuses (before any work; exit status 2, one line) to replace an existing results file
    unless ``force``, and a directory or a place where no file can be created in any case."""
    try:
        arguments.output_file(str(path))
    except argparse.ArgumentTypeError as err:
        arguments.die(f"{flag}: {err}")
    path = Path(path)
    if path.exists() and not force:
        arguments.die(
            f"{flag}: {shown(path)} exists; pass --force to replace it (its page is re-rendered by "
            "`python benchmarks/render_docs.py`)"
        )
    return path


def write(path, tables, **extra):
    """Writes the results file ``path``: :func:`environment`, ``tables`` (``{id: table}``) and any
    ``extra`` keys (settings, raw measurements; ``command`` replaces the command line of this
    process), atomically (:func:`tf_vrre.runs.atomic.write_json`: a fresh temporary file, then a
    rename; a symbolic link at ``path`` is replaced, never written through).  A NaN or an infinity
    is kept (nothing measured is lost) and named on stderr: :func:`read` refuses the file, so
    ``render_docs.py`` shows no such number."""
    path = Path(path)
    results = {**environment(), "tables": tables, **extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, results, indent=1, newline=True)
    print(f"results: {path}; `python benchmarks/render_docs.py` updates the docs from it")
    bad = arguments.non_finite(results)
    if bad:
        print(
            f"warning: {shown(path)}: {bad[0]} is {bad[1]}; the docs are not rendered from a file with a "
            "NaN or an infinity (re-measure with settings that give a finite number)",
            file=sys.stderr,
        )
    return results


def _check_tables(path, tables):
    if not isinstance(tables, dict):
        raise arguments.FileError(f"{shown(path)}: tables is a {type(tables).__name__}, not an object")
    for name, tab in tables.items():
        if not isinstance(tab, dict):
            continue  # a table of its own shape (posterior-fidelity: rows of dicts), read by its renderer
        where = f"{shown(path)}: tables.{name}"
        for key in ("columns", "formats", "rows"):
            if not isinstance(tab.get(key), list):
                raise arguments.FileError(f"{where}.{key}: missing or not a list")
        width = len(tab["columns"])
        if len(tab["formats"]) != width:
            raise arguments.FileError(f"{where}.formats: {len(tab['formats'])} formats for {width} columns")
        for i, row in enumerate(tab["rows"]):
            if not isinstance(row, list) or len(row) != width:
                raise arguments.FileError(f"{where}.rows[{i}]: not a row of {width} cells")
        if "keys" in tab and (not isinstance(tab["keys"], list) or len(tab["keys"]) != len(tab["rows"])):
            raise arguments.FileError(f"{where}.keys: not one key per row")


def read(path):
    """The results file ``path`` as a dict; :class:`arguments.FileError` (one line naming the file
    and the key) if it is missing, not valid JSON, has no ``tables`` or a table of the wrong
    shape, or holds a NaN or an infinity."""
    res = arguments.load_json(path, keys=("tables",), name=shown(path))
    _check_tables(path, res["tables"])
    return res


def load(name):
    """The results file ``name`` (``benchmarks/results/<name>.json``), checked by :func:`read`."""
    return read(path_of(name))


def add_arguments(parser, name):
    """The two flags every benchmark has: ``--results PATH`` and ``--force``."""
    parser.add_argument(
        "--results",
        type=arguments.output_file,
        default=str(path_of(name)),
        help=f"results file (default benchmarks/results/{name}.json)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing results file")
