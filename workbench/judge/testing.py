"""A scripted judge for tests, demos and the shipped example: a `Provider` that answers from a script, and
helpers that build replies whose citations are exact (or deliberately not).

    text = solution source
    loop = cite(text, line_of(source, "for a, b, c in COEFFS:"), 5, "L1.c.square_side")   # 5 lines from that line, quoted exactly
    reply = judge_reply(L1=level(5, "keeps the stepwise recurrence", missing=[...], citations=[loop]), L2=..., L3=...)
    provider = ScriptedJudge([reply_with_a_paraphrase, reply])   # answer N is the script's step N

The answer to a call is the script's step N, N being the number of assistant turns already in the
conversation (the first call is step 0, the first re-ask step 1, ...). A step is the reply's text, a
`ProviderError` to raise, or a function of the conversation returning either. `python -m workbench.judge.testing
example DEST` records the shipped judged example (see docs/judge.md).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench import paths
from workbench.catalog import Catalog
from workbench.judge.sessions import judge_session, record_review
from workbench.judge.shown import shown_candidate
from workbench.llm import AssistantTurn, Conversation, ModelReply, ProviderError
from workbench.llm.usage import Usage
from workbench.session.config import load_config, write_config
from workbench.session.export import check_target
from workbench.session.layout import BUNDLE_NAME
from workbench.session.store import SessionStore

Step = str | ProviderError | Callable[[Conversation], "str | ProviderError"]
DEFAULT_USAGE = Usage(uncached_input=9000, output=900)


class ScriptedJudge:
    """A Provider answering from a script (see the module's docstring). `conversations` keeps what each call saw."""

    name = "scripted"

    def __init__(self, script: Sequence[Step], *, model: str = "scripted-judge", usage: Usage = DEFAULT_USAGE) -> None:
        self.script = list(script)
        self.model = model
        self.usage = usage
        self.conversations: list[Conversation] = []

    def complete(self, conversation: Conversation) -> ModelReply:
        self.conversations.append(conversation.model_copy(deep=True))
        step = sum(1 for m in conversation.messages if isinstance(m, AssistantTurn))
        if step >= len(self.script):
            raise ProviderError(f"scripted judge: no answer {step + 1} in the script", retryable=False)
        answer = self.script[step]
        if callable(answer):
            answer = answer(conversation)
        if isinstance(answer, ProviderError):
            raise answer
        return ModelReply(
            turn=AssistantTurn(text=answer, provider=self.name), usage=self.usage, model=self.model, stop_reason="end_turn"
        )


# --- replies ----------------------------------------------------------------------------------------------


def line_of(text: str, starts_with: str, after: int = 0) -> int:
    """The 1-based number of the first line after line `after` whose stripped text starts with `starts_with`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if number > after and line.strip().startswith(starts_with):
            return number
    raise ValueError(f"no line starting with {starts_with!r} (after line {after})")


def cite(
    text: str, starts_with: str | int, lines: int, criterion: str, *, file: str = "solution.py", quote: str | None = None
) -> dict[str, Any]:
    """A citation of `lines` lines of `text` from the line starting with `starts_with` (or that line number),
    quoting them exactly unless `quote` is given."""
    start = starts_with if isinstance(starts_with, int) else line_of(text, starts_with)
    end = start + lines - 1
    exact = "\n".join(text.splitlines()[start - 1 : end])
    return {
        "file": file,
        "start_line": start,
        "end_line": end,
        "quote": exact if quote is None else quote,
        "criterion": criterion,
    }


def level(
    score: float,
    rationale: str,
    *,
    realized: Sequence[str] = (),
    partial: Sequence[str] = (),
    missing: Sequence[str] = (),
    citations: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    return {
        "score": score,
        "rationale": rationale,
        "realized": list(realized),
        "partial": list(partial),
        "missing": list(missing),
        "citations": list(citations),
    }


def judge_reply(**levels: dict[str, Any]) -> str:
    """The reply's JSON text: `judge_reply(L1=level(...), L2=..., L3=...)`."""
    return json.dumps({"levels": levels}, indent=2, ensure_ascii=False)


# --- the shipped judged example ---------------------------------------------------------------------------

SOURCE_EXAMPLE = "20261130-053407-muon_orthogonalize-eab7"
EXAMPLE_ID = "20261130-053408-muon_orthogonalize-3c1d"
EXAMPLE_CREATED = datetime(2026, 11, 30, 5, 34, 8, tzinfo=UTC)  # its source's creation, a second later
EXAMPLE_REVIEWER = "example-reviewer"

L1_CRITERIA = ("L1.c.square_side", "L1.c.fixed_restart", "L1.c.final_boundary")


def example_replies(source: str) -> list[str]:
    """The scripted judge's two answers on the honest naive solution (`source`, as stored; the judge is shown it
    as `shown.shown_candidate` makes it, without a launch record, and quotes that): the first cites the lines of a docstring
    (blank as shown) for L2 and paraphrases a line for L3 (both re-asked), the second corrects them."""
    text = shown_candidate(source).text
    loop = cite(text, line_of(source, "for a, b, c in COEFFS:"), 5, "L1.c.square_side")
    l1 = level(
        5,
        "The candidate keeps the reference's stepwise recurrence: each of the five steps builds A = X X^T, forms "
        "Bm = cA^2 + bA and updates the rectangular X <- Bm X + aX (three GEMM launches per step, the cited loop). "
        "Nothing is composed on the square side (L1.c.square_side missing), there is no restart segment "
        "(L1.c.fixed_restart missing) and no single final apply (L1.c.final_boundary missing). The few points credit "
        "the exact normalised starting point computed in one pass.",
        missing=L1_CRITERIA,
        citations=[loop],
    )
    epilogue = cite(text, line_of(source, "out = acc * alpha"), 6, "L2.c.symmetric_gemm_add")
    grid = cite(text, line_of(source, "grid = (triton.cdiv(M, _BM), tiles_n, nb)"), 1, "L2.c.parallel_sequential")
    buffers = cite(text, line_of(source, "X = torch.empty((Bsz, M, N)"), 5, "L2.c.square_state_dataflow")
    rationale_l2 = (
        "Every launch covers the whole batch with the matrix index in the grid and the steps run in a fixed order "
        "(L2.c.parallel_sequential realised). The combinations live in the GEMM epilogue on the fp32 accumulator "
        "(alpha * PQ + beta * D, one fp16 rounding), but every product is dense, so L2.c.symmetric_gemm_add is partial. "
        "X is the carried state, re-read and rewritten at every step; no square state exists "
        "(L2.c.square_state_dataflow missing), although the buffers are allocated once per call."
    )
    docstring = cite(text, line_of(source, "of one batched GEMM kernel"), 2, "L2.c.symmetric_gemm_add")
    l2_first = level(
        30,
        rationale_l2,
        realized=["L2.c.parallel_sequential"],
        partial=["L2.c.symmetric_gemm_add"],
        missing=["L2.c.square_state_dataflow"],
        citations=[docstring, grid, buffers],
    )
    l2 = level(
        30,
        rationale_l2,
        realized=["L2.c.parallel_sequential"],
        partial=["L2.c.symmetric_gemm_add"],
        missing=["L2.c.square_state_dataflow"],
        citations=[epilogue, grid, buffers],
    )
    k_loop = cite(text, line_of(source, "for k0 in range(0, K, BK):"), 5, "L3.c.tensor_core_k_tail")
    paraphrase = dict(k_loop, quote=k_loop["quote"].replace("acc = tl.dot(p, q, acc)", "acc += tl.dot(p, q)"))
    dense = cite(text, line_of(source, "grid = (triton.cdiv(M, _BM), tiles_n, nb)"), 1, "L3.c.triangle_mirrored_diagonal")
    schedule = cite(text, line_of(source, "_bmm(X, X.mT, A, 1.0)"), 3, "L3.c.boundary_schedule")
    rationale_l3 = (
        "The products use fp16 tiles in tl.dot with an fp32 accumulator, but the K loop masks every iteration and "
        "runs with few stages (L3.c.tensor_core_k_tail partial). The Gram build and A A use the dense tile grid, "
        "computing both triangles (L3.c.triangle_mirrored_diagonal missing), and rectangular kernels run at every "
        "step (L3.c.boundary_schedule missing)."
    )
    l3_criteria = {
        "partial": ["L3.c.tensor_core_k_tail"],
        "missing": ["L3.c.triangle_mirrored_diagonal", "L3.c.boundary_schedule"],
    }
    l3_first = level(20, rationale_l3, **l3_criteria, citations=[paraphrase, dense, schedule])
    l3 = level(20, rationale_l3, **l3_criteria, citations=[k_loop, dense, schedule])
    return [judge_reply(L1=l1, L2=l2_first, L3=l3_first), judge_reply(L1=l1, L2=l2, L3=l3)]


def record_example(dest: Path, source: Path | None = None) -> Path:
    """Record the judged and reviewed example into `dest` (an absent or empty folder): a copy of the shipped
    example `SOURCE_EXAMPLE` under the id `EXAMPLE_ID`, then through the real code path (judge_session and
    record_review on a copy in a scratch sessions root) a zero verdict on its failing revision 2, the scripted
    judge's verdict on its submission (one re-ask) and two reviews."""
    source = source or paths.REPO_ROOT / "sessions" / "examples" / SOURCE_EXAMPLE
    check_target(dest)
    with tempfile.TemporaryDirectory(prefix="d2k-judge-example-") as scratch:
        root = Path(scratch) / "sessions"
        session_dir = root / EXAMPLE_ID
        session_dir.mkdir(parents=True)
        for name in ("events.jsonl", BUNDLE_NAME):
            shutil.copy2(source / name, session_dir / name)
        config = load_config(source).model_copy(update={"id": EXAMPLE_ID, "created": EXAMPLE_CREATED})
        write_config(session_dir, config)
        store = SessionStore(root, examples=None)
        ref = store.resolve(EXAMPLE_ID)
        catalog = Catalog(paths.REPO_ROOT / "tasks", paths.REPO_ROOT / "guidance")
        view = store.load(ref)
        submitted = view.state.submission.rev if view.state.submission else None
        if submitted is None:
            raise ValueError(f"{source} has no passing submission to judge")
        text = store.workspace(ref).read_text(view.state.revisions[submitted].sha, view.config.solution) or ""
        failed = [r.rev for r in view.state.ordered() if r.eval_state == "finished" and not r.passed]
        if failed:
            judge_session(store, ref, catalog, ScriptedJudge([]), rev=failed[-1])
        judge_session(store, ref, catalog, ScriptedJudge(example_replies(text)), rev=submitted)
        record_review(
            store,
            ref,
            "L1",
            reason="Confirmed: the stepwise recurrence is plain in the cited loop; the few points for the exact "
            "normalisation are fair.",
            author=EXAMPLE_REVIEWER,
        )
        record_review(
            store,
            ref,
            "L3",
            score=15,
            reason="tl.dot with fp32 accumulation is the only L3 property realised, with masks in every K iteration "
            "and one stage on the interpreter path: 15, not 20.",
            author=EXAMPLE_REVIEWER,
        )
        dest.mkdir(parents=True, exist_ok=True)
        for name in ("session.toml", "events.jsonl", BUNDLE_NAME):
            shutil.copy2(session_dir / name, dest / name)
    return dest


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2 or argv[0] != "example":
        sys.stderr.write("usage: python -m workbench.judge.testing example DEST\n")
        return 2
    dest = record_example(Path(argv[1]))
    sys.stdout.write(f"recorded {EXAMPLE_ID} in {dest}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
