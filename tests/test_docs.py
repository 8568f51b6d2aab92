"""The documentation builds with warnings as errors, documents every public name, its Python
examples run and print the output they show, and the code of the first pages fits the page.

The build runs offline: notebooks are rendered from the outputs stored in them (never
executed), external links are not fetched; MyST reports a link to a missing page or heading as
a warning, which ``-W`` turns into a failure.
"""

import os
import re
import subprocess
import sys

import _examples
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
# pages whose ```python blocks build on each other, in this order, like a notebook
EXAMPLE_PAGES = [
    "getting-started.md",
    "algorithm.md",
    "guides/recipes.md",
    "guides/serving.md",
    "guides/diagnostics.md",
    "guides/image-workflow.md",
    "guides/tuning.md",
]
# the pages a new user reads first, and the guides with long examples: no code line longer than
# the page is wide (88 characters in the theme's content column; a longer one scrolls sideways
# in its block, _static/site.css)
FIRST_PAGES = [
    "../README.md",
    "index.md",
    "getting-started.md",
    "guides/tuning.md",
    "guides/ladder.md",
    "guides/scale.md",
    "benchmarks/posterior-fidelity.md",
]
CODE_WIDTH = 88


def _build(out, builder="html"):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder, DOCS, str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _warnings(stderr):
    return "\n".join(line for line in stderr.splitlines() if "WARNING" in line or "ERROR" in line or "CRITICAL" in line)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs_html")
    proc = _build(out)
    assert proc.returncode == 0, f"sphinx-build -W failed:\n{_warnings(proc.stderr) or proc.stderr[-3000:]}"
    return out


def test_docs_build_without_warnings(built):
    for page in [
        "index",
        "getting-started",
        "guides/tuning",
        "algorithm",
        "architecture",
        "guides/recipes",
        "guides/image-workflow",
        "guides/serving",
        "guides/diagnostics",
        "guides/scale",
        "guides/failing-loudly",
        "benchmarks/index",
        "api/index",
        "changelog",
        "notebooks/01_quickstart",
        "notebooks/02_cifar10_vr_resghmc",
        "notebooks/03_serve_the_posterior",
    ]:
        assert (built / f"{page}.html").is_file(), page


def test_api_reference_has_every_public_name(built):
    from sphinx.util.inventory import InventoryFile

    import tf_vrre

    with open(built / "objects.inv", "rb") as f:
        inv = InventoryFile.load(f, "", os.path.join)
    documented = {name for entries in inv.values() for name in entries}
    missing = [f"tf_vrre.{n}" for n in tf_vrre.__all__ if not n.startswith("__") and f"tf_vrre.{n}" not in documented]
    assert not missing, f"public names without an API entry: {missing}"


def test_every_benchmark_page_states_command_and_hardware():
    folder = os.path.join(DOCS, "benchmarks")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".md") and name != "index.md":
            text = open(os.path.join(folder, name)).read()
            assert "```bash\n" in text, f"{name}: no command"
            assert "2-core" in text and "no GPU" in text, f"{name}: hardware not stated"


def test_docs_python_examples_run(capsys, tmp_path, monkeypatch):
    from _synthetic_images import write_dataset

    # the image-workflow example reads .npz files from TF_VRRE_DATA_DIR: synthetic images here
    monkeypatch.setenv("TF_VRRE_DATA_DIR", write_dataset(tmp_path / "data", train=1280, test=500, ood=500))
    namespace = {"__name__": "__docs__"}
    wrong = []
    for page in EXAMPLE_PAGES:
        text = open(os.path.join(DOCS, page)).read()
        assert _examples.examples(text), f"{page} has no python example"
        wrong += [(page, shown, printed) for shown, printed in _examples.run_page(text, page, namespace)]
    assert not wrong, "an example prints other than what its page shows:\n" + "\n".join(
        f"{page}\nshown:   {shown.strip()}\nprinted: {printed.strip()}" for page, shown, printed in wrong
    )
    out = capsys.readouterr().out
    assert "swaps" in out and "BMA accuracy" in out and "members" in out


def test_scale_guide_example_runs_on_two_logical_cpus(tmp_path):
    """The chains-on-devices example of guides/scale.md makes its own logical CPU devices, which
    only a fresh interpreter allows: it runs as a script there and prints what the page shows."""
    [(code, shown)] = _examples.examples(open(os.path.join(DOCS, "guides", "scale.md")).read())
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]), TF_CPP_MIN_LOG_LEVEL="3"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert shown is not None and _examples.same_output(shown, proc.stdout), proc.stdout


MATH_PAGES = ["guides/tuning.md", "guides/ladder.md"]
"""Guides whose formulas are MyST math (``$\\tau_1$``, ``$$ ... $$``), rendered by MathJax."""
FORMULA = re.compile(
    r"\b(?:tau|eta|Lambda|lambda|sigma|delta|beta)(?:_\w+)?\b|\^|\bsqrt\(|\berfinv\(|\blog [A-Za-z0-9(]|\bsum(?:_\w+)? "
)


def code_formulas(text):
    """The inline code spans of ``text``'s prose (outside code blocks and results tables) that
    read as formulas: a Greek letter's name, a power, sqrt, erfinv, log, a sum."""
    prose = re.sub(r"^ *```.*?^ *```\n|<!-- results: .*?<!-- /results -->", "", text, flags=re.S | re.M)
    return [span for span in re.findall(r"`([^`\n]+)`", prose) if FORMULA.search(span)]


def test_guides_write_their_formulas_as_math():
    found = {page: code_formulas(open(os.path.join(DOCS, page)).read()) for page in MATH_PAGES}
    assert not any(found.values()), f"formulas as inline code (write them as $...$ math): {found}"
    assert code_formulas("the barrier `Lambda` over `tau_1 < ... < tau_K` with `bounds=(low, high)`") == [
        "Lambda",
        "tau_1 < ... < tau_K",
    ]


def test_readme_relative_links_resolve():
    # the README links into docs/ by relative paths, so they work on a repository host too
    text = open(os.path.join(ROOT, "README.md")).read()
    links = [link for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if not link.startswith("http")]
    assert links, "README links nothing"
    missing = [link for link in links if not os.path.exists(os.path.join(ROOT, link))]
    assert not missing, f"README links to missing files: {missing}"


def test_first_pages_code_fits_the_page():
    long = []
    for page in FIRST_PAGES:
        text = open(os.path.join(DOCS, page)).read()
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M):
            long += [f"{page}: {line}" for line in body.splitlines() if len(line) > CODE_WIDTH and lang != "bibtex"]
    assert not long, "code lines wider than the page:\n" + "\n".join(long)
