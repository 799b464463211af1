"""The LLM judge: scores a candidate's code (JS_impl) or an independent design proposal (JS_design) at L1, L2
and L3 against the task's rubric, every score citing exact source that is verified by code; reviewers confirm
or change a level's score with a record. docs/judge.md describes the prompt, the reply's schema, the
verification rules and the events.

    from workbench.judge import judge_session, make_judge_provider, record_review, effective_scores
    provider = make_judge_provider("openai", "gpt-4.1")
    outcome = judge_session(store, ref, catalog, provider)        # appends a judge_verdict event
    record_review(store, ref, "L3", score=80, reason="...")       # appends a review event
    effective_scores(store.load(ref))                              # {rev: {"L1": 62.0, "L2": 70.0, "L3": 80.0}}

Modules: verdict (the dict shapes, pydantic), prompt (templates in prompts/, their hash), verify (citations),
judge (one verdict with re-asks), providers (structured output per API), evidence (the expert's functions a
criterion names), scores (effective scores, agreement), sessions (what is judged, the events), testing
(a scripted judge). Over `llm` and `session`; never imports the agent, scoring, the TUI or the CLI.
"""

from workbench.judge.evidence import EvidenceSpan, criterion_evidence
from workbench.judge.judge import MAX_REASKS, MalformedReply, js_of, parse_levels, run_judge, zero_verdict
from workbench.judge.prompt import JudgeInput, build_input, canonical_design, prompt_hash
from workbench.judge.providers import make_judge_provider
from workbench.judge.scores import (
    Agreement,
    Judgement,
    Judgements,
    Pair,
    agreement,
    effective_scores,
    judgements,
    review_pairs,
    spearman,
)
from workbench.judge.sessions import (
    JudgeOutcome,
    NothingToJudge,
    ReviewMaterial,
    TaskMaterial,
    judge_session,
    load_material,
    record_review,
    resolve_target,
    session_kind,
)
from workbench.judge.verdict import (
    Citation,
    JudgeReply,
    LevelReply,
    LevelVerdict,
    ReviewRecord,
    VerdictKind,
    VerdictRecord,
    parse_review,
    parse_verdict,
)
from workbench.judge.verify import CitedText, check_level, executable_lines

__all__ = [
    "MAX_REASKS",
    "Agreement",
    "Citation",
    "CitedText",
    "EvidenceSpan",
    "JudgeInput",
    "JudgeOutcome",
    "JudgeReply",
    "Judgement",
    "Judgements",
    "LevelReply",
    "LevelVerdict",
    "MalformedReply",
    "NothingToJudge",
    "Pair",
    "ReviewMaterial",
    "ReviewRecord",
    "TaskMaterial",
    "VerdictKind",
    "VerdictRecord",
    "agreement",
    "build_input",
    "canonical_design",
    "check_level",
    "criterion_evidence",
    "effective_scores",
    "executable_lines",
    "js_of",
    "judge_session",
    "judgements",
    "load_material",
    "make_judge_provider",
    "parse_levels",
    "parse_review",
    "parse_verdict",
    "prompt_hash",
    "record_review",
    "resolve_target",
    "review_pairs",
    "run_judge",
    "session_kind",
    "spearman",
    "zero_verdict",
]
