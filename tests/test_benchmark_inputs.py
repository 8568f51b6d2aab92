"""The benchmark scripts check their input before any work, as ``tf-vrre`` does.

A bad flag, a damaged input file (results, reference, data ``.npz``, a study to convert), a missing
scikit-learn: exit status 2 and one line on stderr naming the flag or the file, before TensorFlow
is imported, and nothing written.  Each script's refusals run in one process
(``tests/helpers/_bench_cli.py``: ``runpy`` per command line, TensorFlow's absence checked after
each), so the whole table costs about a second per script.

The readers of damaged files are tested directly in ``tests/test_benchmark_files.py``.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
HELPER = os.path.join(ROOT, "tests", "helpers", "_bench_cli.py")
STUDY = os.path.join(ROOT, "tests", "fixtures", "mixture_study")
sys.path.insert(0, BENCHMARKS)


# (script, argv, what the one line must say): every script refuses bad flags before TensorFlow starts.
CASES = [
    ("callback_overhead.py", ["--steps", "0"], "--steps: must be > 0"),
    ("callback_overhead.py", ["--repeats", "1e3"], "--repeats: expected an int"),
    ("callback_overhead.py", ["--results", "."], "--results: '.' is a directory"),
    ("callback_overhead.py", [], "benchmarks/results/callback-overhead.json exists; pass --force"),
    ("cifar10_cpu.py", ["--seeds", "1,1"], "--seeds: must be distinct"),
    ("cifar10_cpu.py", ["--methods", "sghmc,nope"], "--methods: 'nope': unknown"),
    ("cifar10_cpu.py", ["--out", "afile"], "--out: 'afile' is a file"),
    ("cifar10_cpu.py", ["--batch-size", "0"], "--batch-size: must be > 0"),
    ("cifar10_cpu.py", ["--data-dir", "nowhere", "--results", "r.json"], "--data-dir: 'nowhere' has no cifar10/"),
    (
        "cifar10_cpu.py",
        ["--data-dir", "data", "--set", "training.bogus=1", "--results", "r.json"],
        "config key training.bogus is unknown",
    ),
    ("cifar10_cpu.py", ["--set", "epochs"], "--set: expected section.key=value"),
    ("export_latency.py", ["--ks", "0,8"], "--ks: '0': must be >= 1"),
    ("export_latency.py", ["--batches", "1,1"], "--batches: must be distinct"),
    ("export_latency.py", ["--train-size", "10"], "--train-size: must be >= 64"),
    ("export_latency.py", ["--out", "afile"], "--out: 'afile' is a file"),
    ("export_latency.py", ["--results", "r.json"], "cifar10_train_part1of2.npz: not a readable .npz file"),
    ("kill_sweep.py", ["--points", "torn,nope"], "--points: 'nope': unknown"),
    ("kill_sweep.py", ["--occurrences", "0"], "--occurrences: '0': must be >= 1"),
    ("kill_sweep.py", ["--occurrences", "2,2"], "--occurrences: must be distinct"),
    ("is_it_done.py", ["--seeds", "1"], "--seeds: must be >= 2, got 1"),
    ("is_it_done.py", ["--lr", "nan"], "--lr: must be a finite number"),
    ("is_it_done.py", ["--short-epochs", "2000"], "--short-epochs: must be < --epochs (1600), got 2000"),
    ("is_it_done.py", ["--spe", "5"], "--spe: must divide --every (16), got 5"),
    ("is_it_done.py", ["--train-seeds", "0"], "--train-seeds: needs --work"),
    ("is_it_done.py", ["--work", "w", "--train-seeds", "9"], "--train-seeds: seeds in [0, 3] (--seeds), got 9"),
    ("is_it_done.py", [], "benchmarks/results/is-it-done.json exists; pass --force"),
    ("ladder_proposal.py", ["--target", "1.5"], "--target: a rejection rate in (0, 1), got 1.5"),
    ("ladder_proposal.py", ["--hand", "1,2,3"], "--hand: 4 increasing temperatures (--chains), got 1.0,2.0,3.0"),
    ("ladder_proposal.py", ["--networks", "mlp,nope"], "--networks: 'nope': unknown"),
    ("ladder_proposal.py", ["--spe", "7", "--results", "r.json"], "--spe: must divide --tune (4000)"),
    ("ladder_proposal.py", ["--data-dir", "nowhere", "--results", "r.json"], "--data-dir: 'nowhere': no such"),
    ("ladder_proposal.py", [], "benchmarks/results/ladder_proposal.json exists; pass --force"),
    ("ladder_exact.py", ["--steps", "100"], "--steps: must be >= 500"),
    ("ladder_exact.py", ["--lrs", "1e-3,1e-3"], "--lrs: must be distinct"),
    ("ladder_exact.py", ["--lrs", "-1"], "--lrs: '-1': must be > 0"),
    ("ladder_exact.py", ["--data-size", "0"], "--data-size: must be > 0"),
    ("ladder_tuning.py", ["--chains", "4,4"], "--chains: must be distinct"),
    ("ladder_tuning.py", ["--chains", "2", "--out", "r.json"], "--chains: a tuned ladder needs K >= 3"),
    ("ladder_tuning.py", ["--targets", "gauss"], "--targets: 'gauss': unknown"),
    ("ladder_tuning.py", ["--fixed", "100"], "--fixed: must be >= 1000"),
    ("ladder_tuning.py", ["--out", "."], "--out: '.' is a directory"),
    ("ladder_tuning.py", ["--tables-only", "--out", "bad.json"], "--out: bad.json: not valid JSON"),
    ("ladder_tuning.py", [], "benchmarks/results/ladder_tuning.json exists; pass --force"),
    ("mixture.py", ["--run", "nowhere"], "--run: 'nowhere': no such directory"),
    ("mixture.py", ["--run", "study_badjson", "--results", "r.json"], "study_badjson/summary.json: not valid JSON"),
    (
        "mixture.py",
        ["--run", "study_nan", "--results", "r.json", "--figure", "f.png"],
        "study_nan/summary.json: methods.vr-resgld.left_mode_weight is nan",
    ),
    (
        "mixture.py",
        ["--run", "study_notraces", "--results", "r.json", "--figure", "f.png"],
        "study_notraces/traces.npz: no array 'vr-resgld/seed1/beta'",
    ),
    (
        "mixture.py",
        ["--run", "study_running", "--results", "r.json", "--figure", "f.png"],
        "the study is 'running', not complete",
    ),
    ("mixture.py", ["--figure", "."], "--figure: '.' is a directory"),
    ("mixture_nll_tfp.py", ["--steps", "0"], "--steps: must be > 0"),
    ("mixture_nll_tfp.py", ["--repeats", "x"], "--repeats: expected an int"),
    ("multiworker.py", ["--epochs", "1"], "--epochs: must be >= 2"),
    ("multiworker.py", ["--rounds", "0"], "--rounds: must be > 0"),
    ("multiworker.py", ["--data-dir", "nowhere", "--results", "r.json"], "--data-dir: 'nowhere' has no cifar10/"),
    ("multiworker.py", ["--data-dir", "data", "--results", "r.json"], "--data-dir: 'data' has no cifar10/"),
    ("multiworker.py", ["--traffic-from", "bad.json", "--results", "r.json"], "--traffic-from: bad.json: not valid"),
    ("multiworker.py", ["--traffic-from", "none.json"], "--traffic-from: 'none.json': no such file"),
    ("multiworker.py", [], "benchmarks/results/multiworker.json exists; pass --force"),
    ("placement.py", ["--steps", "1"], "--steps: must be >= 2"),
    ("placement.py", ["--figure", "."], "--figure: '.' is a directory"),
    ("placement.py", ["--repeats", "0"], "--repeats: must be > 0"),
    ("posterior_fidelity.py", ["run", "--seeds", "1,1"], "--seeds: must be distinct"),
    ("posterior_fidelity.py", ["run", "--methods", "sgld,nope"], "--methods: 'nope': unknown"),
    ("posterior_fidelity.py", ["run", "--budget", "nan"], "--budget: must be a finite number"),
    ("posterior_fidelity.py", ["run", "--burn-in", "1"], "--burn-in: must be in [0, 1)"),
    ("posterior_fidelity.py", ["run", "--records", "1"], "--records: must be >= 2"),
    ("posterior_fidelity.py", ["run", "--out", "."], "--out: '.' is a directory"),
    ("posterior_fidelity.py", ["run", "--reference", "nowhere"], "--reference: 'nowhere': no such directory"),
    ("posterior_fidelity.py", ["reference", "--out", "afile"], "--out: 'afile' is a file"),
    ("posterior_fidelity.py", ["figure", "--results", "bad.json", "--figure", "f.png"], "bad.json: not valid JSON"),
    (  # scikit-learn is hidden in this script's process (see HIDE)
        "posterior_fidelity.py",
        ["run", "--out", "r.json", "--figure", "f.png"],
        'run: scikit-learn is not installed (the digits and diabetes data sets come with it); pip install -e ".[benchmarks]"',
    ),
    ("posterior_fidelity.py", ["reference", "--out", "ref"], "reference: scikit-learn is not installed"),
    ("regimes.py", ["--seeds", "0"], "--seeds: '0': must be >= 1"),
    ("regimes.py", ["--families", "mixture,nope"], "--families: 'nope': unknown"),
    ("regimes.py", ["--budget", "10"], "--budget: must be >= 1e4"),
    ("regimes.py", ["--problems", "sine-N1000-t1", "--families", "mixture"], "--problems: 'sine-N1000-t1' is not of"),
    ("regimes.py", ["--checks-from", "nofile"], "--checks-from: 'nofile': no such file"),
    ("regimes.py", ["--checks-from", "bad.json"], "--checks-from: bad.json holds no advisor's checks (JSONDecodeE"),
    ("regimes.py", ["--checks-from", "afile"], "--checks-from: afile holds no advisor's checks"),
    ("regimes.py", ["--report-only", "--results", "r.json"], "--report-only: no results file r.json"),
    ("regimes.py", ["--readvise", "."], "--readvise: re-derives the advice of an existing results file"),
    ("regimes.py", ["--report-only", "--readvise", "nodir"], "--readvise: 'nodir'"),
    ("replica_flow.py", ["--chains", "1"], "--chains: must be >= 2"),
    ("replica_flow.py", ["--steps", "10"], "--steps: must be >= 200"),
    ("replica_flow.py", ["--out", "afile"], "--out: 'afile' is a file"),
    ("small_run.py", ["--data-dir", "nowhere"], "--data-dir: 'nowhere' has no cifar10/"),
    ("small_run.py", ["--work", "afile"], "--work: 'afile' is a file"),
    ("small_run.py", ["--data-dir", "data", "--work", "w"], "--work: w/runs/small exists"),
    ("step_cost.py", ["--depth", "9", "--results", "r.json"], "--depth: must be 6n + 2"),
    ("step_cost.py", ["--steps", "50", "--results", "r.json"], "--steps: must be a multiple of --m (98)"),
    ("step_cost.py", ["--configs", "vr,vr"], "--configs: must be distinct"),
    ("step_cost.py", ["--batch", "1000", "--results", "r.json"], "--batch: must be <= --data-size (640)"),
    ("step_cost.py", ["--data", "bad.npz", "--results", "r.json"], "--data: bad.npz: not a readable .npz file"),
    ("step_cost.py", ["--data", "small.npz", "--results", "r.json"], "--data-size: small.npz holds 10 images"),
    ("step_cost.py", ["--data", "nokey.npz", "--results", "r.json"], "--data: nokey.npz: no array 'y'"),
    ("swap_bias.py", ["--seeds", "1"], "--seeds: must be >= 2"),
    ("swap_bias.py", ["--tau", "100", "10"], "--tau: the cold temperature must be below the hot one"),
    ("swap_bias.py", ["--burn-in", "1.5"], "--burn-in: must be in [0, 1)"),
    ("swap_bias.py", ["--configs", "vr-batch,vr-batch"], "--configs: must be distinct"),
    ("swap_bias.py", ["--sigma", "0"], "--sigma: must be > 0"),
    ("swap_bias.py", ["--out", "rows_bad.jsonl", "--results", "r.json"], "rows_bad.jsonl, line 2: not valid JSON"),
    ("swap_bias.py", ["--out", "rows_nan.jsonl", "--results", "r.json"], "rows_nan.jsonl, line 1: left is nan"),
    ("swap_bias.py", ["--table", "--out", "none.jsonl"], "--out: none.jsonl: no such file"),
    ("swap_bias.py", ["--out", "link.jsonl", "--results", "r.json"], "--out: link.jsonl is a symbolic link"),
    ("swap_energies.py", ["--temperatures", "0.05", "0.01", "--data", "small.npz"], "--temperatures: the cold one"),
    ("swap_energies.py", ["--configs", "vr_inf,nope", "--data", "small.npz"], "--configs: 'nope': unknown"),
    ("swap_energies.py", ["--json", ".", "--data", "small.npz"], "--json: '.' is a directory"),
    ("swap_energies.py", ["--data", "bad.npz", "--results", "r.json"], "--data: bad.npz: not a readable .npz file"),
    ("swap_energies.py", ["--data", "missing.npz"], "--data: 'missing.npz': no such file"),
    ("swap_target.py", ["--targets", "0.3,1.0"], "--targets: '1.0': must be in [0, 1)"),
    ("swap_target.py", ["--targets", "0.5,0.5"], "--targets: must be distinct"),
    ("swap_target.py", ["--chains", "2"], "--chains: must be >= 3"),
    ("swap_target.py", ["--tables-only", "--out", "bad.json"], "--out: bad.json: not valid JSON"),
    ("xla_speed.py", ["--repeats", "0"], "--repeats: must be > 0"),
    ("xla_speed.py", ["--data", "bad.npz", "--results", "r.json"], "--data: bad.npz: not a readable .npz file"),
    ("render_docs.py", ["--bogus"], "--bogus: unrecognized argument"),
]
HIDE = {"posterior_fidelity.py": ["--hide", "sklearn"]}


def _inputs(root):
    """The damaged and awkward inputs the cases name, in the scripts' working directory."""
    (root / "afile").write_text("a file, not a directory\n")
    (root / "bad.json").write_text('{"results": [{"config"')
    real = np.load(os.path.join(STUDY, "traces.npz"))
    np.savez(root / "good.npz", **{k: real[k] for k in real.files})
    (root / "bad.npz").write_bytes((root / "good.npz").read_bytes()[:300])  # truncated
    images = np.zeros((10, 32, 32, 3), np.uint8)
    np.savez(root / "small.npz", x=images, y=np.zeros(10, np.int64))
    np.savez(root / "nokey.npz", x=images)
    (root / "good.npz").unlink()
    row = {"config": "vr-batch", "seed": 0, "steps": 1000, "left": 0.5, "swaps": 3}
    (root / "rows_bad.jsonl").write_text(json.dumps(row) + '\n{"config": "vr-b')  # a torn last line
    (root / "rows_nan.jsonl").write_text(json.dumps({**row, "left": float("nan")}) + "\n")
    (root / "victim.jsonl").write_text("")
    os.symlink("victim.jsonl", root / "link.jsonl")
    for folder in ("data/cifar10", "data/cifar100", "w/runs/small"):
        (root / folder).mkdir(parents=True)
    xdata = root / "xdata" / "cifar10"
    xdata.mkdir(parents=True)
    (xdata / "cifar10_train_part1of2.npz").write_bytes(b"PK\x03\x04 truncated")
    summary = json.loads(open(os.path.join(STUDY, "summary.json")).read())
    for name, edit in (
        ("study_badjson", None),
        ("study_nan", ("methods", "vr-resgld", "left_mode_weight")),
        ("study_notraces", None),
        ("study_running", ("status",)),
    ):
        (root / name).mkdir()
        shutil.copy(os.path.join(STUDY, "traces.npz"), root / name / "traces.npz")
        doc = json.loads(json.dumps(summary))
        if edit and edit[0] == "status":
            doc["status"] = "running"
        elif edit:
            doc["methods"]["vr-resgld"]["left_mode_weight"] = float("nan")
        text = json.dumps(doc)
        (root / name / "summary.json").write_text(text[: len(text) // 2] if name == "study_badjson" else text)
    z = np.load(os.path.join(STUDY, "traces.npz"))
    np.savez(root / "study_notraces" / "traces.npz", **{k: z[k] for k in z.files if k != "vr-resgld/seed1/beta"})


def _listing(root):
    return sorted(
        (os.path.relpath(os.path.join(d, f), root), os.path.getsize(os.path.join(d, f)))
        for d, dirs, files in os.walk(root)
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]
    )


@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """``refusals(script)``: (outcome per argv, the working directory's listing before and after)."""
    done = {}

    def run(script):
        if script not in done:
            root = tmp_path_factory.mktemp(script.replace(".", "_"))
            _inputs(root)
            before = _listing(root)
            cases = [argv for s, argv, _ in CASES if s == script]
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
                "TF_VRRE_DATA_DIR": str(root / "xdata"),
            }
            proc = subprocess.run(
                [sys.executable, HELPER, os.path.join(BENCHMARKS, script), json.dumps(cases), *HIDE.get(script, [])],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            records = [json.loads(line) for line in proc.stdout.splitlines()]
            done[script] = ({tuple(r["argv"]): r for r in records}, before, _listing(root))
        return done[script]

    return run


@pytest.mark.parametrize(("script", "argv", "said"), CASES, ids=[f"{s}:{' '.join(a)}" for s, a, _ in CASES])
def test_refused_in_one_line_before_tensorflow(refusals, script, argv, said):
    record = refusals(script)[0][tuple(argv)]
    assert record["code"] == 2, record
    assert record["stderr"].count("\n") == 1 and record["stderr"].startswith(f"{script}: error: "), record["stderr"]
    assert said in record["stderr"], record["stderr"]
    assert record["stdout"] == "", record["stdout"]
    assert not record["tensorflow"] and not record["keras"], f"{script} imported TensorFlow before refusing {argv}"


@pytest.mark.parametrize("script", sorted({s for s, _, _ in CASES}))
def test_a_refused_command_writes_nothing(refusals, script):
    _, before, after = refusals(script)
    assert after == before


def test_every_benchmark_script_has_refusal_cases():
    scripts = {n for n in os.listdir(BENCHMARKS) if n.endswith(".py")}
    helpers = {
        "arguments.py",
        "results.py",
        "docs_claims.py",
        "docs_values.py",
        "posterior_fidelity_methods.py",
        "posterior_fidelity_reference.py",
        "posterior_fidelity_report.py",
        "regimes_methods.py",
        "regimes_problems.py",
        "regimes_report.py",
        "step_cost_data.py",
        "step_cost_report.py",
    }
    assert scripts - helpers == {s for s, _, _ in CASES}


def test_the_real_command_line_exits_2():
    # the same as runpy: the interpreter's own exit status and stderr
    proc = subprocess.run(
        [sys.executable, os.path.join(BENCHMARKS, "ladder_exact.py"), "--steps", "0"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr == "ladder_exact.py: error: --steps: must be >= 500, got 0\n"
