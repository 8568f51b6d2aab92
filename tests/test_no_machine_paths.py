"""Nothing a user reads names a path of one machine or speaks of how the work was organised.

Scans every tracked text file (``git ls-files``; the file list of the source tree when git is
not there): code, tests, docs, notebooks, benchmarks, configs, the README.
"""

import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS = os.path.relpath(os.path.abspath(__file__), ROOT)

# absolute paths of a particular machine (home and work folders, mounts, macOS users)
MACHINE_PATH = re.compile(r"(?<![\w.:/-])/(?:work|home|root|mnt|Users)/")
# words about the process that produced the code, not about the library
PROCESS = [
    re.compile(r"\b(?<!keras )issues? \d+\b", re.I),  # "issue 10" (an upstream keras issue is fine)
    re.compile(r"\bthe lead\b", re.I),
    re.compile(r"\bhelper('s)? branch(es)?\b", re.I),
    re.compile(r"\bshared (2-core|cpu|cores|machine)\b", re.I),
    re.compile(r"\bother engineers\b", re.I),
    re.compile(r"\bother TensorFlow jobs\b", re.I),
    re.compile(r"\banother test run\b", re.I),
    re.compile(r"\bworktree\b", re.I),
    re.compile(r"(?<![\w\"'])session\b(?!\")", re.I),  # not tf/Keras' clear_session, pytest's scope="session"
]
BINARY = (".png", ".npz", ".keras", ".h5", ".jpg", ".gz", ".zip", ".pb")


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs]
    return [
        f
        for f in files
        if not f.endswith(BINARY)
        and f != THIS
        and not f.startswith((".git/", "docs/_build/"))
        and os.path.isfile(os.path.join(ROOT, f))
    ]


def offending_lines(pattern_list):
    found = []
    for name in tracked_files():
        try:
            text = open(os.path.join(ROOT, name), encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in pattern_list):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    return found


def test_no_absolute_machine_paths():
    found = offending_lines([MACHINE_PATH])
    assert not found, "absolute machine paths (use a flag, $TF_VRRE_DATA_DIR or a relative path):\n" + "\n".join(found)


def test_no_process_vocabulary():
    found = offending_lines(PROCESS)
    assert not found, "words about how the work was organised:\n" + "\n".join(found)


def test_the_patterns_catch_what_they_should():
    assert MACHINE_PATH.search('DATA = "/work/shared/data"') and MACHINE_PATH.search("see /home/me/x")
    assert not MACHINE_PATH.search("runs/work/x") and not MACHINE_PATH.search("https://example.org/Users/x")
    assert any(p.search("fixed in issue 10") for p in PROCESS)
    assert any(p.search("measured on the shared 2-core CPU") for p in PROCESS)
    assert not any(
        p.search(s)
        for p in PROCESS
        for s in (
            "keras.backend.clear_session()",
            '@pytest.fixture(scope="session")',
            "keras-team/keras issue 19246",
            "over several Colab sessions",
        )
    )
