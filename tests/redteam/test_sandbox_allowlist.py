"""Issue 26, findings 5 and 8: the solution process sees only what the sandbox binds, and every evaluation
has a Triton cache of its own.

Finding 5 (TestSandboxIsAnAllowList): the sandbox was a deny-list. It hid this checkout's tasks, guidance
and sessions, but another copy of the project on the machine stayed readable (a solution imported its
expert.py and passed), so did every folder nobody named, and /proc/1/cmdline (bwrap's own command line)
listed every hidden path.
Finding 8 (TestTritonCachePerEvaluation): the Triton cache was the fixed /tmp/triton-cache; without
bubblewrap a solution planted files there that the next evaluation read.

Each probe raises at import with what it found (JSON after "PROBE "), so an evaluation takes seconds.
"""

from __future__ import annotations

import json
import shutil
import site
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pooled_evaluate import evaluate

from workbench.catalog import Catalog
from workbench.harness.host import sandbox
from workbench.harness.protocol.report import EvalReport

pytestmark = pytest.mark.slow  # whole evaluations (a few seconds each on a 2-core CPU)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
# Folders that hold user data on a usual machine, and files of /etc the process has no need for
HOST_PATHS = ["/home", "/root", "/srv", "/mnt", "/media", "/opt", "/var", "/run", "/etc/hostname", "/etc/hosts"]

needs_sandbox = pytest.mark.skipif(
    sandbox.status("cpu").kind != "bubblewrap", reason=f"bubblewrap cannot start here: {sandbox.status('cpu').detail}"
)


def probe_report(report: EvalReport) -> dict[str, Any]:
    """The JSON a probe raised with at import."""
    assert report.status == "compile_error", f"{report.status}: {report.message}"
    assert "PROBE " in report.message, report.message
    text = report.message.split("PROBE ", 1)[1]
    found: dict[str, Any] = json.JSONDecoder().raw_decode(text)[0]
    return found


def evaluate_probe(name: str, tiny_tasks: Path, dest: Path, **fields: object) -> EvalReport:
    path = dest / f"{name}.py"
    path.write_text((HERE / "probes" / f"{name}.py").read_text().format(**fields))
    task = Catalog(tiny_tasks, REPO / "guidance").task("muon_orthogonalize")
    return evaluate(task, path, "cpu", static_policy=False)


def _outside_folder(prefix: str) -> Path:
    """A new folder that no hidden or bound path names, on the host's disk (not /tmp, which the sandbox
    replaces anyway): beside this checkout where that can be written (where other checkouts live), else
    /var/tmp."""
    for base in (REPO.parent, Path("/var/tmp")):
        try:
            return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        except OSError:
            continue
    pytest.skip("no writable folder outside /tmp")


@pytest.fixture(scope="class")
def allowlist_findings(tiny_tasks: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One evaluation of the allow-list probe, with another checkout and an unnamed folder on disk."""
    other = _outside_folder("d2k-other-checkout-")
    unnamed = _outside_folder("d2k-unnamed-folder-")
    try:
        expert = other / "tasks" / "muon_orthogonalize" / "expert.py"
        expert.parent.mkdir(parents=True)
        expert.write_text(f"SECRET = 'expert of another checkout {uuid.uuid4().hex}'\n")
        (other / "workbench").mkdir()
        (other / "workbench" / "__init__.py").write_text("")
        (unnamed / "notes.txt").write_text("user data")
        secrets = [str(tiny_tasks), str(REPO / "tasks"), str(REPO / "guidance"), str(REPO / "sessions"), "d2k-eval-"]
        report = evaluate_probe(
            "allowlist_attempts",
            tiny_tasks,
            tmp_path_factory.mktemp("allowlist"),
            other_checkout=other,
            unnamed=unnamed,
            host_paths=HOST_PATHS,
            secrets=secrets,
        )
        assert report.sandbox.startswith("bubblewrap"), report.sandbox
        yield {**probe_report(report), "warm_start": "warm start" in report.sandbox}
    finally:
        shutil.rmtree(other, ignore_errors=True)
        shutil.rmtree(unnamed, ignore_errors=True)


@needs_sandbox
class TestSandboxIsAnAllowList:
    def test_another_checkout_of_the_project_is_invisible(self, allowlist_findings: dict[str, Any]) -> None:
        assert allowlist_findings["other_checkout"] is False
        assert allowlist_findings["other_expert_read"] == "FileNotFoundError"
        assert allowlist_findings["other_expert_imported"] is False

    def test_a_folder_nobody_named_is_invisible(self, allowlist_findings: dict[str, Any]) -> None:
        assert allowlist_findings["unnamed"] is False

    def test_user_folders_and_etc_are_invisible(self, allowlist_findings: dict[str, Any]) -> None:
        # a folder above what the interpreter needs exists inside (e.g. /root holding only ~/.pyenv's
        # interpreter), with nothing else in it; every other one is absent
        bound = [Path(p) for p in (sys.prefix, sys.base_prefix, *site.getsitepackages())]
        allowed = {p for p in HOST_PATHS if any(b.is_relative_to(p) or REPO.is_relative_to(p) for b in bound)}
        assert set(allowlist_findings["host_paths"]) <= allowed, allowlist_findings["host_paths"]
        assert allowlist_findings["passwd_lines"] <= 1  # the process's own user only, not the host's accounts

    def test_the_init_process_names_nothing(self, allowlist_findings: dict[str, Any]) -> None:
        """pid 1 shows no hidden path. Under a plain start it is bwrap's init: its own arguments are read
        from a pipe, and what is left of its command line is `bwrap --args N --` and the solution process's
        own command line. Under the warm start it is the evaluation's init, forked from the zygote like the
        process itself: the same command line and nothing before it, its environment unreadable."""
        assert allowlist_findings["init_names"] == []
        argv = allowlist_findings["init_argv"]
        if allowlist_findings["warm_start"]:
            assert allowlist_findings["init_argc"] == 0, argv
            assert allowlist_findings["init_environ"] == []
            return
        assert allowlist_findings["init_argc"] == 4, argv
        assert argv[0] == "bwrap" and argv[1] == "--args" and argv[2].isdigit() and argv[3] == "--", argv
        assert allowlist_findings["init_environ"] == ["PATH"]


class TestTritonCachePerEvaluation:
    def _twice(self, tiny_tasks: Path, tmp_path: Path) -> list[dict[str, Any]]:
        marker = f"d2k-planted-{uuid.uuid4().hex}"
        found: list[dict[str, Any]] = []
        try:
            for round_ in range(2):
                dest = tmp_path / str(round_)
                dest.mkdir()
                found.append(probe_report(evaluate_probe("triton_cache_marker", tiny_tasks, dest, marker=marker)))
        finally:
            for item in found:  # on the old code the marker stayed in the shared cache: take it away
                if item["cache"] and Path(item["cache"]).is_dir():
                    (Path(item["cache"]) / marker).unlink(missing_ok=True)
        return found

    def test_unsandboxed_evaluations_do_not_share_a_cache_and_leave_no_folder(
        self, tiny_tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("D2K_SANDBOX", "off")
        first, second = self._twice(tiny_tasks, tmp_path)
        assert first["planted"] is True, first
        assert second["seen"] is False, "the second evaluation found the marker the first planted"
        assert first["cache"] != second["cache"]
        for found in (first, second):  # its cache, HOME and TMPDIR are its own and gone afterwards
            for name in ("cache", "home", "tmp"):
                folder = Path(found[name])
                assert folder.is_absolute() and folder != Path("/tmp"), found
                assert not folder.exists(), f"{name} {folder} outlived its evaluation"

    @needs_sandbox
    def test_sandboxed_evaluations_do_not_share_a_cache(self, tiny_tasks: Path, tmp_path: Path) -> None:
        first, second = self._twice(tiny_tasks, tmp_path)
        assert first["planted"] is True, first
        assert second["seen"] is False
