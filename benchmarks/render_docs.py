"""Writes the docs' benchmark tables and the numbers the README and docs quote from the results
files in ``benchmarks/results/`` (see ``benchmarks/results.py``).

    python benchmarks/render_docs.py           # rewrite every table and quoted number
    python benchmarks/render_docs.py --check   # list what differs from the results files; exit 1 if any

Two things are generated, both edited here, never by hand in the Markdown:

- **Tables**, between markers in a page::

      <!-- results: swap-bias main -->
      (the table of benchmarks/results/swap-bias.json, "tables" -> "main")
      <!-- /results -->

  ``<!-- results: NAME source -->`` renders where the numbers come from (command, date, commit).
- **Quoted numbers** in prose (``CLAIMS`` of ``benchmarks/docs_claims.py``): a sentence with
  ``{name.key:format}`` fields;
  the sentence is found in its file (line breaks may fall anywhere) and its numbers replaced by
  ``VALUES[name](results)[key]`` (``benchmarks/docs_values.py``). Rewording such a sentence means
  editing its template there.

``tests/test_benchmark_results.py`` runs ``--check``: a page that disagrees with its results file
fails the test suite.

A results file that cannot be used (missing, not valid JSON, a table of the wrong shape, a NaN or
an infinity anywhere, a cell its format cannot show, a quoted number that cannot be computed from
it) is reported in one line naming the page, the results file and the key, and then no page is
written: a NaN never reaches a page, and a refused run changes nothing.  Pages are written
through :mod:`tf_vrre.runs.atomic`.
"""

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arguments
import results
from docs_claims import CLAIMS  # the sentences that quote them, (page, template)
from docs_values import VALUES  # the numbers quoted in prose, one function per results file

from tf_vrre.runs import atomic

PROBLEMS = (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError, StopIteration)
"""What reading a results file of the wrong shape raises (a missing key, a string for a number ...)."""

ROOT = results.ROOT
PAGES = [
    "README.md",
    "docs/index.md",
    "docs/getting-started.md",
    "docs/algorithm.md",
    "docs/guides/tuning.md",
    "docs/guides/image-workflow.md",
    "docs/guides/ladder.md",
    "docs/guides/scale.md",
    "docs/guides/is-it-done.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "benchmarks").glob("*.md")),
]
REGION = re.compile(
    r"(<!-- results: (?P<name>[\w-]+) (?P<part>[\w-]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.DOTALL
)
FIELD = re.compile(r"\{(?P<name>[\w-]+)\.(?P<key>\w+)(?::(?P<fmt>[^{}]*))?\}")
NUMBER = r"([-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)"


def _claim_regex(template, values):
    """The regex of a claim: its text literally (any whitespace run matching any other), a number
    for each numeric field, the shortest text up to the words that follow for a text field."""
    parts, pos = [], 0
    for m, value in zip(FIELD.finditer(template), values):
        parts.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", template[pos : m.start()])))
        parts.append(r"(.+?)" if isinstance(value, str) else NUMBER)
        pos = m.end()
    parts.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", template[pos:])))
    return re.compile("".join(parts), re.DOTALL)


def _problem(err):
    """One line of what an exception raised while reading a results file says."""
    if isinstance(err, KeyError):
        return f"no key {err.args[0]!r}" if err.args else "a missing key"
    if isinstance(err, StopIteration):
        return "a row it refers to is missing"
    return f"{type(err).__name__}: {err}"


def _field_value(m, cache):
    """The value of the claim field ``m`` (``{name.key:format}``); :class:`arguments.FileError`
    naming the results file if it cannot be computed or is not a finite number."""
    name, key = m["name"], m["key"]
    where = results.shown(results.path_of(name))
    if name not in cache:
        res = results.load(name)
        try:
            cache[name] = VALUES[name](res) if name in VALUES else res.get("values", {})
        except PROBLEMS as err:
            raise arguments.FileError(
                f"{where}: the quoted numbers cannot be computed from it ({_problem(err)})"
            ) from None
    if key not in cache[name]:
        raise arguments.FileError(f"{where}: no quoted number {key!r}")
    value = cache[name][key]
    if isinstance(value, float) and not math.isfinite(value):
        raise arguments.FileError(f"{where}: the quoted number {name}.{key} is {value}; it is not rendered")
    return value


def render_claims(text, path, cache, problems):
    for file, template in CLAIMS:
        if file != path:
            continue
        fields = list(FIELD.finditer(template))
        try:
            values = [_field_value(f, cache) for f in fields]
            shown = [format(v, f["fmt"] or "") for v, f in zip(values, fields)]
        except arguments.FileError as err:
            problems.append(f"{path}: {err}")
            continue
        except PROBLEMS as err:
            problems.append(f"{path}: the sentence {template!r}: a quoted number cannot be shown ({_problem(err)})")
            continue
        if fields and fields[0].start() == 0 and isinstance(values[0], str):
            problems.append(f"{path}: the sentence {template!r} starts with a text field; start it with words")
            continue
        found = list(_claim_regex(template, values).finditer(text))
        if len(found) != 1:
            problems.append(
                f"{path}: the sentence {template!r} occurs {len(found)} times (expected once); "
                "edit the page or the template in benchmarks/docs_claims.py"
            )
            continue
        m = found[0]
        for i in reversed(range(len(values))):  # from the end: earlier offsets stay valid
            text = text[: m.start(i + 1)] + shown[i] + text[m.end(i + 1) :]
    return text


# ---------------------------------------------------------------------------------------------
# tables


def source_line(name, res):
    """Where the numbers of ``name`` come from."""
    commit = (res.get("git_commit") or "unknown")[:7]
    date = str(res["date"])[:10]
    where = f"`benchmarks/results/{name}.json`"
    if res.get("transcribed"):
        return f"The numbers above are in {where}: measured {date}, {res['transcribed']}; recorded at commit {commit}."
    return f"The numbers above are in {where}: `{res['command']}`, {date}, commit {commit}."


TUNED = "posterior-fidelity-tuned"
"""The tuned-ladder rows, measured by their own command; shown in the posterior-fidelity tables
right after the hand-ladder row they start from (unless the main results file has them itself)."""


def _posterior_fidelity_table(res, part):
    import posterior_fidelity_report

    rows = list(res["tables"][part])
    if results.path_of(TUNED).exists():
        for row in results.load(TUNED)["tables"][part]:
            if row["method"] != "nuts" and all(r["method"] != row["method"] for r in rows):  # a full run has them
                base = row["method"].removesuffix("-tuned")
                at = next(i for i, r in enumerate(rows) if r["method"] == base)
                rows.insert(at + 1, row)
    return posterior_fidelity_report.format_table(res["problems"][part]["kind"], rows, res["settings"]["budget"])


def _small_run_table(res, part):
    """``commands``: the commands of ``benchmarks/small_run.py`` as a bash block; else a table."""
    if part == "commands":
        return "```bash\n" + "\n".join(res["commands"].values()) + "\n```"
    return results.markdown(res["tables"][part])


TABLES = {"posterior-fidelity": _posterior_fidelity_table, "small-run": _small_run_table}


NBSP = "\u00a0"
LETTER = re.compile(r"[A-Za-z]")
EXPONENT = re.compile(r"(?<=\d)e(?=[-+]?\d)")


def whole_numbers(table):
    """``table`` (Markdown) with the spaces inside each cell of numbers made non-breaking, so a
    rendered page keeps ``0.022 +- 0.001`` or ``0.82 0.84 0.84`` on one line in a narrow column
    (the theme scrolls a wide table sideways); a cell with words wraps as usual."""

    def cell(text):
        body = text.strip()
        if not body or LETTER.search(EXPONENT.sub("", body)):
            return text
        return text.replace(body, body.replace(" ", NBSP))

    return "\n".join(
        "|".join(cell(c) for c in line.split("|")) if line.startswith("|") else line for line in table.split("\n")
    )


def render_region(name, part, cache_results):
    if name not in cache_results:
        cache_results[name] = results.load(name)
    res = cache_results[name]
    if part == "source":
        return source_line(name, res)
    if name in TABLES:
        body = TABLES[name](res, part)
        return body if body.startswith("```") else whole_numbers(body)
    return whole_numbers(results.markdown(res["tables"][part]))


def render(text, path):
    """``text`` of ``path`` (relative to the repository) with every region and claim rendered, and
    the problems found (a missing or damaged results file, table or sentence; one line each)."""
    problems, loaded, cache = [], {}, {}

    def region(m):
        try:
            body = render_region(m["name"], m["part"], loaded)
        except arguments.FileError as err:
            problems.append(f"{path}: {err}")
            return m[0]
        except PROBLEMS as err:
            where = results.shown(results.path_of(m["name"]))
            part = f"table {m['part']!r}" if m["part"] != "source" else "its source line"
            problems.append(f"{path}: {where}: {part} cannot be rendered ({_problem(err)})")
            return m[0]
        return f"{m[1]}\n{body}\n\n{m[5]}"

    text = REGION.sub(region, text)
    text = render_claims(text, path, cache, problems)
    return text, list(dict.fromkeys(problems))  # one line per problem, however many regions meet it


def main(argv=None):
    p = arguments.parser(__file__, __doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page differs from its results")
    args = p.parse_args(argv)
    stale, problems, rendered = [], [], {}
    for rel in PAGES:
        path = ROOT / rel
        if not path.exists():
            continue
        old = path.read_text()
        new, found = render(old, rel)
        problems += found
        if new != old:
            stale.append(rel)
            rendered[path] = new
    for line in problems:
        print(line, file=sys.stderr)
    if args.check:
        for rel in stale:
            print(f"{rel}: differs from its results files; run `python benchmarks/render_docs.py`", file=sys.stderr)
        return 1 if stale or problems else 0
    if problems:
        print(
            f"rendered nothing: {len(problems)} problem(s) above; fix the results files and run again", file=sys.stderr
        )
        return 1
    for path, new in rendered.items():
        atomic.write_text(path, new)
    print(f"rendered {len(stale)} file(s): {', '.join(stale) or 'none changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
