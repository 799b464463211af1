"""The shipped judged and reviewed example: readable with no API key, its citations verify against its own
bundle, its reviews apply, and recording it again through the real code path gives the same judgement."""

from __future__ import annotations

from pathlib import Path

from workbench import paths
from workbench.judge import effective_scores, judgements
from workbench.judge.shown import shown_candidate
from workbench.judge.testing import EXAMPLE_ID, EXAMPLE_REVIEWER, record_example
from workbench.judge.verdict import Citation
from workbench.judge.verify import CitedText
from workbench.session.events import JudgeVerdict, Review
from workbench.session.store import SessionStore

EXAMPLE = paths.REPO_ROOT / "sessions" / "examples" / EXAMPLE_ID


def load(folder: Path):  # type: ignore[no-untyped-def]
    store = SessionStore(folder.parent / "no-sessions", examples=folder.parent)
    ref = store.resolve(folder.name)
    return store, ref, store.load(ref)


def test_the_example_is_judged_reviewed_and_its_citations_verify() -> None:
    store, ref, view = load(EXAMPLE)
    assert ref.read_only and view.bad_lines == [] and not view.state.seq_problems
    found = judgements(view)
    zero, judged = found[("impl", 2)], found[("impl", 4)]
    assert zero.verdict is not None and not zero.verdict.model_called and zero.js == 0.0
    verdict = judged.verdict
    assert verdict is not None and verdict.complete and len(verdict.reasks) == 1
    assert {r.level for _, r in judged.reviews} == {"L1", "L3"} and all(r.author == EXAMPLE_REVIEWER for _, r in judged.reviews)
    assert effective_scores(view)[4] == {"L1": 5.0, "L2": 30.0, "L3": 15.0}
    text = store.workspace(ref).read_text(view.state.revisions[4].sha, "solution.py") or ""
    cited = CitedText("solution.py", shown_candidate(text).text)  # the judge quotes the code as it was shown it
    for level, found_level in verdict.levels.items():
        for number, citation in enumerate(found_level.citations, start=1):
            check = cited.check(Citation.model_validate(citation.model_dump()), [citation.criterion], level, number)
            assert check.ok, check.errors


def test_recording_the_example_again_gives_the_same_judgement(tmp_path: Path) -> None:
    dest = record_example(tmp_path / EXAMPLE_ID)
    _, _, fresh = load(dest)
    _, _, shipped = load(EXAMPLE)

    varying = ("time", "calls", "input_hash")  # clocks, latencies, and the task files the prompt quotes

    def judged(view):  # type: ignore[no-untyped-def]
        return [
            (e.rev, {k: v for k, v in (e.verdict if isinstance(e, JudgeVerdict) else e.review).items() if k not in varying})
            for e in view.events
            if isinstance(e, JudgeVerdict | Review)
        ]

    assert judged(fresh) == judged(shipped)
    assert (dest / "session.toml").read_text() == (EXAMPLE / "session.toml").read_text()
