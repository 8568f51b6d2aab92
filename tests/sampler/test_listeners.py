"""The sampler's divergence and checkpoint-commit listeners (no module registry, no circle)."""

import enum

from tf_vrre.sampler import invariants
from tf_vrre.sampler.listeners import SamplerListeners


def test_listeners_are_keyed_replaced_and_cleared():
    seen = []
    ls = SamplerListeners()
    ls.add("a", on_divergence=lambda err: seen.append(("old", err)))
    ls.add("a", on_divergence=lambda err: seen.append(("a", err)), on_checkpoint_committed=lambda: seen.append("c"))
    ls.add("b", on_checkpoint_committed=lambda: seen.append("b"))
    ls.divergence("boom")
    ls.checkpoint_committed(12)
    assert seen == [("a", "boom"), "c", "b"] and ls.committed_step == 12
    ls.remove("b")
    ls.checkpoint_committed(16)
    assert seen[-1] == "c" and ls.committed_step == 16
    ls.clear()
    ls.divergence("again")
    ls.checkpoint_committed(20)
    assert len(seen) == 4 and ls.committed_step == 20  # the committed step describes the checkpoint on disk


def test_fault_codes_are_an_int_enum_in_check_order():
    assert issubclass(invariants.Fault, enum.IntEnum)
    assert sorted(int(f) for f in invariants.Fault) == list(range(1, 10))
    assert set(invariants.KINDS) == set(invariants.Fault)
    assert [f.name for f in invariants.Fault] == [
        "LEARNING_RATE",
        "TEMPERATURE",
        "TEMPERATURE_ORDER",
        "NLL_LENGTH",
        "INPUT",
        "ENERGY",
        "GRADIENT",
        "CORRECTION",
        "WEIGHTS",
    ]
    assert set(invariants.DIVERGENCE) == {invariants.Fault.ENERGY, invariants.Fault.GRADIENT, invariants.Fault.WEIGHTS}
