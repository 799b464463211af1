"""Citations are verified by code: the range exists, holds executable source (not only comments, docstrings or
blank lines), the quote is exactly those lines (only line endings and trailing spaces normalised) and names a
criterion of its level; a level names each of its criteria once and cites 1-4 passages."""

from __future__ import annotations

from workbench.judge.testing import cite, line_of
from workbench.judge.verdict import Citation, LevelReply
from workbench.judge.verify import CitedText, check_level, content_lines, executable_lines

from .helpers import L3, SOLUTION, good_levels

CITED = CitedText("solution.py", SOLUTION)


def check(citation: dict[str, object], level: str = "L3") -> list[str]:
    criteria = {"L1": ["L1.c.square_side"], "L2": ["L2.c.symmetric_gemm_add"], "L3": L3}[level]
    return CITED.check(Citation.model_validate(citation), criteria, level, 1).errors  # type: ignore[arg-type]


def test_executable_lines_leave_out_comments_docstrings_and_blank_lines() -> None:
    lines = executable_lines(SOLUTION)
    text = SOLUTION.splitlines()
    for n in range(1, 5):  # the module docstring
        assert n not in lines, text[n - 1]
    assert line_of(SOLUTION, "# a comment") not in lines
    assert line_of(SOLUTION, '"""One tile') not in lines
    assert line_of(SOLUTION, "import triton") in lines
    assert line_of(SOLUTION, "@triton.jit") in lines
    assert line_of(SOLUTION, "acc = tl.dot") in lines
    assert all(text[n - 1].strip() for n in lines)  # never a blank line
    source = 'x = """not a\ndocstring"""  # but data\n"""a bare string"""\n'
    assert executable_lines(source) == {1, 2}


def test_an_exact_quote_verifies_with_other_line_endings_and_trailing_spaces() -> None:
    good = cite(SOLUTION, "for k0 in range(0, K, BK):", 2, "L3.c.tensor_core_k_tail")
    assert check(good) == []
    assert check({**good, "quote": good["quote"].replace("\n", "\r\n") + "   \n"}) == []
    assert check({**good, "quote": good["quote"].replace(":\n", ":   \n")}) == []


def test_a_paraphrase_a_reindented_or_a_partial_quote_fails() -> None:
    good = cite(SOLUTION, "for k0 in range(0, K, BK):", 2, "L3.c.tensor_core_k_tail")
    [error] = check({**good, "quote": good["quote"].replace("acc = tl.dot(p, q, acc)", "acc += tl.dot(p, q)")})
    n = line_of(SOLUTION, "acc = tl.dot")
    assert f"line {n} is '        acc = tl.dot(p, q, acc)', the quote has '        acc += tl.dot(p, q)'" in error
    assert error.startswith(f"L3 citation 1 (solution.py {n - 1}-{n}): the quote is not the text of the cited lines")
    [error] = check({**good, "quote": "\n".join(line.strip() for line in good["quote"].splitlines())})
    assert "the quote is not the text" in error  # indentation is not normalised
    [error] = check({**good, "quote": good["quote"].splitlines()[0]})
    assert "the quote has 1 line(s) but lines" in error
    numbered = "\n".join(f"{n - 1 + i} | {line}" for i, line in enumerate(good["quote"].splitlines()))
    [error] = check({**good, "quote": numbered})
    assert "without the listing's `NUMBER | ` prefix" in error


def test_comment_docstring_and_blank_ranges_hold_no_executable_source() -> None:
    for starts in ("# a comment on its own line", '"""One tile of C = P @ Q."""', "More of the docstring."):
        citation = cite(SOLUTION, starts, 1, "L3.c.tensor_core_k_tail")
        [error] = check(citation)
        assert "hold no executable source (only comments, docstrings or blank lines)" in error
    blank = line_of(SOLUTION, "# a comment") + 1
    assert "hold no executable source" in check(cite(SOLUTION, blank, 2, "L3.c.tensor_core_k_tail"))[0]
    # a range that also holds code is fine
    assert check(cite(SOLUTION, "# a comment on its own line", 4, "L3.c.tensor_core_k_tail")) == []


def test_out_of_range_wrong_file_and_unknown_criterion() -> None:
    count = len(SOLUTION.splitlines())
    [error] = check({"file": "solution.py", "start_line": count, "end_line": count + 2, "quote": "", "criterion": L3[0]})
    assert f"lines {count}-{count + 2} do not exist in solution.py at this revision (it has lines 1-{count}" in error
    assert "do not exist" in check({"file": "solution.py", "start_line": 5, "end_line": 4, "quote": "", "criterion": L3[0]})[0]
    assert "do not exist" in check({"file": "solution.py", "start_line": 0, "end_line": 1, "quote": "", "criterion": L3[0]})[0]
    good = cite(SOLUTION, "acc = tl.dot", 1, "L3.c.tensor_core_k_tail")
    [error] = check({**good, "file": "kernel.py"})
    assert "file 'kernel.py' is not the judged file; cite 'solution.py'" in error
    [error] = check({**good, "criterion": "L1.c.square_side"})
    assert "criterion 'L1.c.square_side' is not a L3 criterion of the rubric" in error


def test_level_rules_criteria_named_once_and_one_to_four_citations() -> None:
    base = good_levels()["L3"]
    checks, errors = check_level(LevelReply.model_validate(base), CITED, L3, "L3")
    assert errors == [] and [c.ok for c in checks] == [True]
    _, errors = check_level(LevelReply.model_validate({**base, "citations": []}), CITED, L3, "L3")
    assert errors == ["L3: a score above 0 needs 1 to 4 citations; none was given"]
    _, errors = check_level(LevelReply.model_validate({**base, "score": 0, "citations": []}), CITED, L3, "L3")
    assert errors == []  # nothing realised, nothing to cite
    _, errors = check_level(LevelReply.model_validate({**base, "missing": [L3[0]]}), CITED, L3, "L3")
    assert errors == ["L3: name every L3 criterion once in realized, partial or missing; not named: L3.c.boundary_schedule"]
    twice = {**base, "realized": ["L3.c.tensor_core_k_tail"], "missing": [*base["missing"], "L3.c.nope"]}
    _, errors = check_level(LevelReply.model_validate(twice), CITED, L3, "L3")
    assert errors[0] == "L3: 'L3.c.nope' not L3 criteria of the rubric (" + ", ".join(L3) + ")"
    assert "'L3.c.tensor_core_k_tail' (realized and partial)" in errors[1]


def test_design_ranges_must_hold_keys_or_values() -> None:
    text = '{\n  "a": [\n    1\n  ],\n  "b": {}\n}\n'
    assert content_lines(text) == {2, 3, 5}
    cited = CitedText("model_design.json", text, python=False)
    citation = Citation(file="model_design.json", start_line=4, end_line=4, quote="  ],", criterion="L1.x")
    assert "hold no design content (only brackets, commas or blank lines)" in cited.check(citation, ["L1.x"], "L1", 1).errors[0]
    citation = Citation(file="model_design.json", start_line=2, end_line=3, quote='  "a": [\n    1', criterion="L1.x")
    assert cited.check(citation, ["L1.x"], "L1", 1).ok
