"""``diagnose``'s verdict: "not mixing" when R-hat / ESS / swaps / round trips say so, with the
numbers that say so and what to try; "mixing" only when every summary passes."""

from tf_vrre.diagnostics import report


def _diag(rhat, ess, flow=None, chains=2, draws=200):
    return {
        "summaries": {"weight_norm": {"chains": chains, "draws": draws, "rhat": rhat, "ess": ess}},
        "replica_flow": [flow],
        "runs": ["runs/a"],
    }


def _flow(swaps, trips, attempts=100):
    return {"attempts": attempts, "swaps": swaps, "round_trips": trips, "steps": 1000}


def test_the_issue_numbers_are_not_mixing():
    v = report.verdict(_diag(2.02, 2.7, chains=2, draws=12))
    assert v["status"] == report.NOT_MIXING
    assert v["reasons"][0].startswith("R-hat 2.02 > 1.05") and v["reasons"][1].startswith("ESS 2.7 < 100")
    text = report.format_verdict(v)
    assert text.startswith("verdict: NOT MIXING: R-hat 2.02 > 1.05") and "\n  try: run longer" in text


def test_thresholds():
    assert report.verdict(_diag(1.005, 900.0, _flow(30, 2)))["status"] == report.MIXING
    assert report.verdict(_diag(1.03, 900.0, _flow(30, 2)))["status"] == report.NOT_YET
    assert report.verdict(_diag(1.005, 250.0, _flow(30, 2)))["status"] == report.NOT_YET
    assert report.verdict(_diag(1.06, 900.0, _flow(30, 2)))["status"] == report.NOT_MIXING
    assert report.verdict(_diag(1.005, 99.0, _flow(30, 2)))["status"] == report.NOT_MIXING


def test_no_accepted_swap_or_no_round_trip_is_not_mixing_whatever_the_chains_say():
    v = report.verdict(_diag(1.0, 1000.0, _flow(0, 0)))
    assert v["status"] == report.NOT_MIXING and v["reasons"] == ["0 of 100 swaps accepted"]
    assert "lower F" in v["advice"][0]
    v = report.verdict(_diag(1.0, 1000.0, _flow(12, 0)))
    assert v["status"] == report.NOT_MIXING
    assert v["reasons"] == ["12 swaps but 0 round trips cold -> hottest -> cold in 1000 steps"]


def test_each_chain_at_its_own_constant_is_not_mixing():
    v = report.verdict(_diag(None, None))
    assert v["status"] == report.NOT_MIXING and v["reasons"][0].startswith("R-hat infinite (weight_norm")
