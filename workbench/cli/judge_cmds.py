"""`judge SESSION`, `judge agreement SESSIONS...` and `review SESSION`: the LLM judge and its reviewers.

Registered by the root app as `app.add_typer(judge_app, name="judge")` and `app.command("review")(review_cmd)`.
`python -m workbench.cli.judge_cmds ...` runs `judge_app` alone (the workbench's review screen starts the
judge that way, in a subprocess).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from workbench.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    GuidanceDir,
    SessionsDir,
    TasksDir,
    catalog,
    fail,
    session_store,
    stdout,
    user_errors,
    write_stdout,
)

if TYPE_CHECKING:
    from workbench.judge.verdict import VerdictRecord
    from workbench.llm import Provider


class _DefaultCommandGroup(TyperGroup):
    """A group whose first argument, when it names no subcommand, goes to the `run` command: `judge SESSION
    ...` is `judge run SESSION ...`, while `judge agreement ...` stays a subcommand."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: typer's click Context
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


judge_app = typer.Typer(
    cls=_DefaultCommandGroup,
    help="The LLM judge: score a session's code (JS_impl) or design (JS_design) at L1-L3 with verified citations. "
    "`judge SESSION ...` is `judge run SESSION ...`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ProviderOpt = Annotated[str, typer.Option("--provider", help="openai (Chat Completions), openai-responses or anthropic.")]
ModelOpt = Annotated[str, typer.Option("--model", help="The judging model's name at the provider.")]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="An OpenAI- or Anthropic-compatible server instead (vLLM, SGLang, llama.cpp, ...)."),
]
RevisionOpt = Annotated[int | None, typer.Option("--revision", "-r", min=1, help="The revision (default: see the help).")]


def _progress(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _score(value: float | None) -> str:
    return "invalid" if value is None else f"{value:g}"


def verdict_lines(verdict: VerdictRecord) -> list[str]:
    """The verdict for people: one line per level, JS, the cost."""
    lines = []
    for level, found in verdict.levels.items():
        if found.valid:
            cited = ", ".join(f"{c.file} {c.start_line}-{c.end_line}" for c in found.citations) or "no citation"
            lines.append(f"{level}  {_score(found.score):>7}  {cited}")
        else:
            lines.append(f"{level}  {'invalid':>7}  {found.errors[0] if found.errors else ''}")
            lines += [f"{'':>11}{error}" for error in found.errors[1:]]
    js = f"{verdict.js:.1f}" if verdict.js is not None else "n/a (a level is invalid)"
    lines.append(f"JS_{verdict.kind} {js}")
    if not verdict.model_called and verdict.note:
        lines.append(verdict.note)
    if verdict.model_called:
        cost = f"${verdict.cost_usd:.4f}" if verdict.cost_usd is not None else "cost n/a (model not in the price table)"
        tokens = verdict.usage.input_tokens
        calls = f"{len(verdict.calls)} call(s), {len(verdict.reasks)} re-ask(s)"
        lines.append(f"{calls}, {tokens} tokens in / {verdict.usage.output} out, {cost}")
    return lines


@judge_app.command("run")
def judge_cmd(
    session_id: Annotated[str, typer.Argument(metavar="SESSION", help="Session id (or a unique prefix or suffix).")],
    provider: ProviderOpt,
    models: Annotated[
        list[str], typer.Option("--model", help="The judging model's name at the provider; repeat it to ask several judges.")
    ],
    revision: RevisionOpt = None,
    base_url: BaseUrlOpt = None,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Sampling temperature (default: the provider's; not sent).")
    ] = None,
    samples: Annotated[
        int,
        typer.Option("--samples", min=1, max=20, help="Verdicts per model (default 1); the judgement's score is their mean."),
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the recorded verdict(s) as JSON.")] = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Judge one revision of a session and record the verdict (a judge_verdict event in its log).

    Code sessions: by default the submission; a revision that did not pass the harness scores 0 at every level
    with no model call, and so does a session that ended with no passing revision (a failed attempt: its
    verdict is recorded on its latest evaluated revision). Design sessions (agent_mode design): the latest
    model_design.json, in its canonical form (a session that ended without one scores 0, no model call).
    Each level gets a score 0-100, a rationale and 1-4 citations that are verified against the revision;
    failures are sent back to the model (at most two re-asks), and a level still failing is recorded invalid.
    With --samples N and/or several --model, every verdict is recorded as one group: the judgement's score per
    level is the mean of the group's valid scores, and the spread per level is printed (`judge agreement`
    compares the models). Progress goes to stderr. A session being run is refused; shipped examples are
    read-only.

    Exit code 0 when every level verified (a failed attempt's 0 included), 1 when a level is invalid or there is
    nothing to judge (a session not ended yet, a revision never evaluated), 2 for bad
    usage (unknown session or provider, missing key, a running session, a model that failed for good).
    Keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.
    """
    from workbench.judge.providers import make_judge_provider
    from workbench.judge.sessions import NothingToJudge, judge_samples
    from workbench.llm import PROVIDER_NAMES

    with user_errors():
        if provider not in PROVIDER_NAMES:
            raise fail(f"--provider must be one of: {', '.join(PROVIDER_NAMES)} (got {provider!r})")
        if len(set(models)) != len(models):
            raise fail(f"--model names a model twice ({', '.join(models)}); use --samples for several verdicts of one")
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)

        def factory(model: str) -> Callable[[], Provider]:
            return lambda: make_judge_provider(provider, model, base_url, temperature=temperature)

        try:
            outcome = judge_samples(
                store,
                ref,
                catalog(tasks_dir, guidance_dir),
                [factory(model) for model in models],
                samples=samples,
                rev=revision,
                temperature=temperature,
                progress=_progress,
            )
        except NothingToJudge as exc:
            raise fail(exc.message, EXIT_FAILED) from None
    group = outcome.group or ((outcome.verdict, outcome.event),)
    if as_json:
        dumped = [{"session": ref.id, "seq": event.seq, **verdict.model_dump(mode="json")} for verdict, event in group]
        write_stdout(json.dumps(dumped[0] if len(dumped) == 1 else dumped, indent=2) + "\n")
    else:
        for verdict, event in group:
            label = f"sample {verdict.sample} of {verdict.judge}" if len(group) > 1 else "verdict"
            write_stdout(f"session {ref.id} revision {verdict.rev} ({verdict.kind}): {label} recorded (event {event.seq})\n")
            write_stdout("".join(line + "\n" for line in verdict_lines(verdict)))
        if len(group) > 1:
            write_stdout("".join(line + "\n" for line in spread_lines([verdict for verdict, _ in group])))
    raise typer.Exit(EXIT_OK if all(verdict.complete for verdict, _ in group) else EXIT_FAILED)


def spread_lines(group: list[VerdictRecord]) -> list[str]:
    """Per level, the group's mean and spread over its valid scores."""
    lines = [f"{len(group)} verdicts: per level the mean, lowest-highest and standard deviation of the valid scores"]
    for level in ("L1", "L2", "L3"):
        scores = [s for v in group if (s := v.levels[level].usable_score) is not None]
        if not scores:
            lines.append(f"{level}  no valid score")
            continue
        mean = sum(scores) / len(scores)
        sd = (sum((s - mean) ** 2 for s in scores) / (len(scores) - 1)) ** 0.5 if len(scores) > 1 else 0.0
        lines.append(f"{level}  {mean:5.1f}  {min(scores):g}-{max(scores):g}  sd {sd:.1f}  ({len(scores)} valid)")
    return lines


@judge_app.command("queue")
def queue_cmd(
    sessions: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[SESSIONS]...",
            help="Session ids, session folders or folders of sessions (default: every session of the sessions root).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    sessions_dir: SessionsDir = None,
) -> None:
    """The review queue: every level of a judge's verdict that no reviewer has looked at since it was given,
    across sessions (the shipped examples, which cannot be reviewed, left out).

    Each row names the session, the verdict's kind and revision, the level and the judge's score, with the
    `review` command that settles it. Exit code 0 (an empty queue included), 2 for a session that cannot be
    found or read.
    """
    from workbench.judge.scores import review_queue
    from workbench.scoring.collect import find_sessions
    from workbench.session.layout import SessionRef

    with user_errors():
        store = session_store(sessions_dir)
        if sessions:
            folders = find_sessions(sessions, store)
        else:
            folders = [ref.dir for ref in store.list() if not ref.read_only]
        examples = store.examples.resolve() if store.examples is not None else None
        named = len(folders)
        folders = [f for f in folders if examples is None or f.resolve().parent != examples]  # read-only: never reviewed
        left_out = f" ({named - len(folders)} shipped example(s) left out: read-only)" if named > len(folders) else ""
        pending = []
        for folder in folders:
            pending += review_queue(folder.name, store.load(SessionRef(folder.name, folder)))
    if as_json:
        rows = [{"session": p.session, "kind": p.kind, "rev": p.rev, "level": p.level, "judge": p.judge} for p in pending]
        write_stdout(json.dumps({"sessions": len(folders), "pending": rows}, indent=2) + "\n")
        return
    if not pending:
        write_stdout(f"nothing to review in {len(folders)} session(s){left_out}\n")
        return
    from rich.table import Table

    table = Table(title=f"{len(pending)} level(s) to review in {len(folders)} session(s)", title_justify="left")
    for column in ("session", "kind", "rev", "level", "judge", "settle with"):
        table.add_column(column, overflow="fold", no_wrap=column == "session")
    for p in pending:
        score = "invalid" if p.judge is None else f"{p.judge:g}"
        settle = f"review {p.session} --revision {p.rev} --level {p.level} (--confirm | --score N) --reason ..."
        table.add_row(p.session, p.kind, str(p.rev), p.level, score, settle)
    stdout().print(table)


@judge_app.command("agreement")
def agreement_cmd(
    session_ids: Annotated[
        list[str],
        typer.Argument(
            metavar="SESSIONS...",
            help="Session ids (or unique prefixes or suffixes), session folders, or folders of sessions.",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    examples: Annotated[
        bool, typer.Option("--examples", help="Count the shipped example sessions too (left out otherwise, as in `report`).")
    ] = False,
    sessions_dir: SessionsDir = None,
) -> None:
    """Agreement between the judge and its reviewers, and between judges, over these sessions.

    The shipped example sessions are left out, as `report` leaves them out, unless --examples is given or
    they are named themselves (their folder, or one of them).

    Judge vs reviewers: a pair is one reviewed level, the judge's score it reviewed and the latest review's score
    (a review of an invalid level makes no pair). Judge vs judge: a pair is one level of a revision that two
    models scored in one sample group (`judge run --model A --model B`), each the mean of its samples. Shown per
    level: the number of pairs, the mean absolute difference and Spearman's rank correlation (n/a under 5
    pairs, where a rank correlation says nothing, or with no spread). Samples: per level, how far one model's
    scores of one revision spread (`--samples N`): the mean and the largest standard deviation.
    """
    from workbench.judge.scores import agreement, judge_agreement, judge_pairs, review_pairs, sample_spreads
    from workbench.scoring.collect import find_sessions, without_examples
    from workbench.session.layout import SessionRef

    with user_errors():
        store = session_store(sessions_dir)
        folders, left_out = without_examples(find_sessions(session_ids, store), session_ids, store, examples)
        pairs, between, spreads = [], [], []
        for folder in folders:
            view = store.load(SessionRef(folder.name, folder))
            pairs += review_pairs(folder.name, view)
            between += judge_pairs(folder.name, view)
            spreads += sample_spreads(folder.name, view)
    rows = agreement(pairs)
    judges = judge_agreement(between)
    if as_json:
        data: dict[str, Any] = {
            "sessions": len(folders),
            "examples_left_out": left_out,
            "levels": [
                {"level": r.level, "count": r.count, "mean_abs_diff": r.mean_abs_diff, "spearman": r.spearman} for r in rows
            ],
            "pairs": [p.__dict__ for p in pairs],
            "judges": [j.__dict__ for j in judges],
            "judge_pairs": [p.__dict__ for p in between],
            "samples": [{**s.__dict__, "scores": list(s.scores), "stdev": s.stdev} for s in spreads],
        }
        write_stdout(json.dumps(data, indent=2) + "\n")
        return
    from rich.table import Table

    shipped = f" ({left_out} shipped example(s) left out; --examples counts them)" if left_out else ""
    table = Table(title=f"judge vs reviewers over {len(folders)} session(s){shipped}")
    for column in ("level", "pairs", "mean |judge - reviewer|", "Spearman"):
        table.add_column(column, justify="left" if column == "level" else "right")
    for r in rows:
        mad = f"{r.mean_abs_diff:.2f}" if r.mean_abs_diff is not None else "n/a"
        rho = f"{r.spearman:.3f}" if r.spearman is not None else ("n/a (under 5 pairs)" if r.count < 5 else "n/a")
        table.add_row(str(r.level), str(r.count), mad, rho)
    stdout().print(table)
    if judges:
        between_table = Table(title="judge vs judge (each model's mean over its samples)")
        for column in ("models", "level", "pairs", "mean |difference|", "Spearman"):
            between_table.add_column(column, justify="left" if column in ("models", "level") else "right")
        for j in judges:
            rho = f"{j.spearman:.3f}" if j.spearman is not None else ("n/a (under 5 pairs)" if j.count < 5 else "n/a")
            between_table.add_row(f"{j.first} / {j.second}", str(j.level), str(j.count), f"{j.mean_abs_diff:.2f}", rho)
        stdout().print(between_table)
    if spreads:
        spread_table = Table(title="samples: spread of one model's scores of one revision")
        for column in ("level", "sampled", "mean sd", "largest sd"):
            spread_table.add_column(column, justify="left" if column == "level" else "right")
        for level in ("L1", "L2", "L3"):
            mine = [s.stdev for s in spreads if s.level == level]
            if mine:
                spread_table.add_row(level, str(len(mine)), f"{sum(mine) / len(mine):.2f}", f"{max(mine):.2f}")
        stdout().print(spread_table)


def review_cmd(
    session_id: Annotated[str, typer.Argument(metavar="SESSION", help="Session id (or a unique prefix or suffix).")],
    level: Annotated[str, typer.Option("--level", help="L1, L2 or L3.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept with the review).")],
    score: Annotated[float | None, typer.Option("--score", min=0, max=100, help="The level's score from now on (0-100).")] = None,
    confirm: Annotated[bool, typer.Option("--confirm", help="Keep the judge's score (instead of --score).")] = False,
    author: Annotated[str | None, typer.Option("--author", help="Who reviews (default: the OS user).")] = None,
    revision: RevisionOpt = None,
    sessions_dir: SessionsDir = None,
) -> None:
    """Confirm or change one level's judge score, with a reason (a review event in the session's log).

    The review keeps the judge's score, the new score, the author and the time; the effective score of a level
    is its latest review, else the judge's. Default revision: the one with the latest verdict. Give --score N,
    or --confirm to keep the judge's score.
    """
    from workbench.judge.sessions import record_review
    from workbench.judge.verdict import LEVELS

    with user_errors():
        chosen = level.strip().upper()
        if chosen not in LEVELS:
            raise fail(f"--level must be one of {', '.join(LEVELS)} (got {level!r})")
        if (score is None) != confirm:
            raise fail("give either --score N or --confirm")
        if not reason.strip():
            raise fail("--reason must say why")
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        review = record_review(store, ref, chosen, reason=reason, score=score, author=author, rev=revision)
    judged = _score(review.original_score)
    write_stdout(
        f"review recorded: session {ref.id} {review.level} {review.action} {review.score:g} (judge {judged}) by {review.author}\n"
    )


if __name__ == "__main__":
    judge_app(prog_name="d2k-workbench judge")

__all__ = ["agreement_cmd", "judge_app", "judge_cmd", "queue_cmd", "review_cmd", "verdict_lines"]
