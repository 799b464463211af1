"""`python -m workbench.cli.scripted_import SOLUTION ARGS...`: the d2k-workbench CLI with every agent session run in
this process answered by a short scripted session that hands in the file SOLUTION: list the workspace, read the
task's description, write SOLUTION's text as solution.py, run the tests, submit. For an agent session on an
imported task (which ships no expert) without an API key: the GPU script (.gpu/import.sh) and the tests."""

from __future__ import annotations

import sys
from pathlib import Path

from workbench.agent.testing import ScriptedProvider, Step, call, last_results, turn
from workbench.cli import app
from workbench.cli.common import CliServices
from workbench.llm import AssistantTurn, Conversation, Provider


def import_script(solution: str) -> list[Step]:
    """Five turns that write `solution` and submit it (with a note of whether run_tests passed)."""

    def after_tests(conversation: Conversation) -> AssistantTurn:
        passed = "every workload is within the tolerance" in " ".join(last_results(conversation))
        note = "the Triton solution passed run_tests" if passed else "run_tests failed; submitting what I have"
        return turn(call("submit", note=note), text="Submitting.")

    return [
        turn(call("list_files"), text="Looking at the workspace of the imported task."),
        turn(call("read_file", path="task/description.md"), text="Reading what run(...) must compute."),
        turn(call("write_file", path="solution.py", content=solution), text="Writing a Triton kernel."),
        turn(call("run_tests"), text="Checking correctness."),
        after_tests,
    ]


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.exit("usage: python -m workbench.cli.scripted_import SOLUTION_FILE d2k-workbench-arguments...")
    solution = Path(args.pop(0)).read_text(encoding="utf-8")

    def provider(name: str, model: str, base_url: str | None) -> Provider:
        return ScriptedProvider(import_script(solution), model=model)

    app(args=args, prog_name="d2k-workbench", obj=CliServices(provider_factory=provider))


if __name__ == "__main__":
    main()
