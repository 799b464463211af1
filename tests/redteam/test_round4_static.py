"""Integrity, round four, the static layer: solution code the host runs after the timed window, and tensor
values read as text, refused by the policy before anything runs (no evaluation).

Each cheat is round4_cheats/_static_core.py (imports, a token Triton launch, the answer in eager torch)
followed by its own round4_cheats/static_*.py: together a complete small solution that the policy of round
three accepted. The runtime guard is the layer that must hold on its own (round4_cheats/ without the
prefix); this is defence in depth, with line-precise reasons.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.harness.policy.checker import check_source

HERE = Path(__file__).resolve().parent
CHEATS = HERE / "round4_cheats"

EXPECTED: dict[str, str] = {
    # class A: the host reads what run returns and formats what it raises
    "static_list_len_computes": "host_callback",  # list subclass, __len__ computes
    "static_tuple_iter_computes": "host_callback",  # tuple subclass, __iter__ computes
    "static_list_getitem_computes": "host_callback",  # list subclass, __getitem__ computes
    "static_exception_repr_computes": "host_callback",  # RuntimeError subclass, __repr__ computes
    "static_namedtuple_len_computes": "host_callback",  # NamedTuple with __len__
    "static_dunder_assigned_in_body": "host_callback",  # __len__ = f in the class body
    "static_mixin_len_computes": "host_callback",  # list subclass inherits __len__ from a plain mixin
    # class B: tensor values read as text through torch's formatter
    "static_fstring_int_view": "python_compute",  # f"{t.view(torch.int32)}"
    "static_str_tensor": "python_compute",  # str(t)
    "static_repr_tensor": "python_compute",  # repr(t)
    "static_format_builtin": "python_compute",  # format(t, "")
    "static_print_to_sink": "python_compute",  # print(t, file=own_sink)
    "static_percent_format": "python_compute",  # "%s" % (t,)
    "static_str_format_method": "python_compute",  # "{}".format(t)
    "static_fstring_repr_conversion": "python_compute",  # f"{t!r}"
    "static_fstring_in_comprehension": "python_compute",  # [f"{row}" for row in t]
    "static_map_str": "python_compute",  # map(str, t)
}


def solution_text(cheat: str) -> str:
    """The whole solution: the shared core, then the cheat's own part."""
    return (CHEATS / "_static_core.py").read_text() + "\n\n" + (CHEATS / f"{cheat}.py").read_text()


def test_the_shared_core_alone_is_accepted() -> None:
    """What the cheats share is refused by nothing: each refusal comes from the cheat's own part."""
    core = (CHEATS / "_static_core.py").read_text() + "\n\ndef run(G, steps):\n    return _token_launch(G)\n"
    assert check_source(core, "core.py") == []


@pytest.mark.parametrize("cheat", sorted(EXPECTED))
def test_policy_refuses_round4_static_cheat(cheat: str) -> None:
    path = CHEATS / f"{cheat}.py"
    violations = check_source(solution_text(cheat), str(path))
    # the new rule is what refuses each of them: nothing else in the file is refused
    assert {v.rule for v in violations} == {EXPECTED[cheat]}, violations
    assert all(v.line for v in violations), violations


def test_every_static_cheat_file_has_a_case() -> None:
    assert {p.stem for p in CHEATS.glob("static_*.py")} == set(EXPECTED)
