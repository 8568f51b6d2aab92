"""ladder.json read as data, not trusted (tf_vrre.runs.ladder_file): every field checked (types, K or
K - 1 entries, finite numbers, increasing temperatures and steps, 0 <= swaps <= attempts), a run
identity edited by hand detected by its fingerprint, two records in one run refused; each failure a
one-line ValueError naming the file and the field."""

import copy
import json
import re

import pytest
from _ladder_records import identity as _identity
from _ladder_records import record as _record

from tf_vrre.runs import ladder_file, ownership


def _write(path, doc):
    path.write_text(json.dumps(doc))
    return path


def test_a_record_as_the_tuner_writes_it_reads_back(tmp_path):
    doc = _record()
    assert ladder_file.read(_write(tmp_path / "ladder.json", doc)) == doc
    assert [r["round"] for r in ladder_file.measured(doc)] == [1]
    assert [r["round"] for r in ladder_file.completed(doc)] == [0, 1]
    killed = {**doc, "rounds": doc["rounds"][:1]}
    killed["rounds"] = [{k: v for k, v in killed["rounds"][0].items() if k not in ladder_file.END_FIELDS}]
    assert ladder_file.read(_write(tmp_path / "ladder.json", killed)) == killed  # killed in round 0: a normal state


def _set(path, value):
    def edit(doc):
        *keys, last = path
        target = doc
        for k in keys:
            target = target[k]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value

    return edit


@pytest.mark.parametrize(
    "edit,field",
    [
        (_set(["tuning_steps"], "80"), "tuning_steps: must be an integer >= 1"),
        (_set(["rounds"], {"0": 1}), "rounds: must be a list of round records"),
        (_set(["rounds", 1], "round"), r"rounds\[1\]: must be an object"),
        (_set(["rounds", 1, "attempts"], "many"), r"rounds\[1\]\.attempts: must be a list of 3 integers"),
        (_set(["rounds", 1, "attempts"], [8, 8]), r"rounds\[1\]\.attempts: must be a list of 3 integers"),
        (_set(["rounds", 1, "attempts"], [8, 8, 8.5]), r"rounds\[1\]\.attempts: must be a list of 3 integers"),
        (_set(["rounds", 1, "swaps"], [4, 9, 4]), r"rounds\[1\]\.swaps: must be <= attempts per pair"),
        (_set(["rounds", 1, "start_swaps"], [-1, 4, 4]), r"rounds\[1\]\.start_swaps: counts must be >= 0"),
        (
            _set(["rounds", 1, "temperatures"], [1.0, 4.0, 2.0, 8.0]),
            r"rounds\[1\]\.temperatures: .*strictly increasing",
        ),
        (_set(["rounds", 1, "temperatures"], [1.0, 2.0, 4.0]), r"rounds\[1\]\.temperatures: must be a list of 4"),
        (
            _set(["rounds", 1, "temperatures"], [1.0, float("nan"), 4.0, 8.0]),
            r"rounds\[1\]\.temperatures: must be a list of 4 finite",
        ),
        (_set(["rounds", 1, "new_learning_rates"], [1e-3, 0.0, 1e-3, 1e-3]), r"rounds\[1\]\.new_learning_rates: .*> 0"),
        (_set(["rounds", 1, "barrier"], KeyError), r"rounds\[1\]\.barrier: missing in an ended round"),
        (_set(["rounds", 1, "barrier"], float("inf")), r"rounds\[1\]\.barrier: must be a finite number"),
        (_set(["rounds", 1, "recommended_chains"], 4.5), r"rounds\[1\]\.recommended_chains: must be an integer >= 2"),
        (_set(["rounds", 1, "rejection"], [0.5, 1.5, 0.5]), r"rounds\[1\]\.rejection: rates must be in \[0, 1\]"),
        (_set(["rounds", 1, "end_step"], 3), r"rounds\[1\]\.end_step: must be an integer >= 5"),
        (
            _set(["rounds", 2, "start_step"], 10),
            r"rounds\[2\]\.start_step: must be >= the previous round's end_step 12",
        ),
        (_set(["rounds", 2, "round"], 1), r"rounds\[2\]\.round: must be above the previous round's 1"),
        (_set(["rounds", 2, "due_step"], 81), r"rounds\[2\]\.due_step: must be <= tuning_steps 80"),
        (_set(["rounds", 0, "kept"], None), r"rounds\[0\]\.barrier: null in a round that does not say why"),
        (_set(["rounds", 1, "end_step"], KeyError), r"rounds\[1\]\.end_step: missing in a round followed by another"),
        (_set(["initial", "learning_rates"], [1e-3, -1.0, 1e-3, 1e-3]), r"initial\.learning_rates: .*> 0"),
        (_set(["target_acceptance"], 1.0), r"target_acceptance: must be null or a number in \(0, 1\)"),
        (_set(["run", "sampler", "seed"], 7), r"run: the recorded run identity was edited"),
        (_set(["run"], ["not", "an", "identity"]), r"run: the recorded run identity is not a JSON object"),
    ],
)
def test_every_field_is_checked_and_named_in_one_line(edit, field, tmp_path):
    doc = copy.deepcopy(_record())
    edit(doc)
    path = _write(tmp_path / "ladder.json", doc)
    with pytest.raises(ValueError) as err:
        ladder_file.read(tmp_path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert re.search(field, message), message


def test_an_edited_identity_matches_no_run():
    """ownership.difference never trusts a stored fingerprint alone: an identity whose fields were
    changed by hand (fingerprint kept) matches nothing, not even the identity it was copied from."""
    good = _identity()
    assert ownership.difference(good, good) is None and ownership.edited(good) is None
    forged = copy.deepcopy(good)
    forged["sampler"]["seed"] = 7
    assert ownership.difference(forged, good) == (
        "the recorded run identity was edited (its fingerprint does not match its fields)"
    )


def test_two_records_in_one_run_are_refused_naming_both(tmp_path):
    (tmp_path / "ladder").mkdir()
    _write(tmp_path / "ladder.json", _record())
    _write(tmp_path / "ladder" / "ladder.json", _record())
    with pytest.raises(ValueError, match=r"holds two tuning records, .*ladder\.json and .*ladder/ladder\.json"):
        ladder_file.read(tmp_path)
    assert ladder_file.read(tmp_path / "ladder") == _record()  # naming one reads it
