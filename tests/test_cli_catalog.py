"""The catalogue commands as a user runs them: output, exit codes, stderr."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app

runner = CliRunner()


def test_tasks_lists_muon_with_three_workloads() -> None:
    result = runner.invoke(app, ["tasks"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "muon_orthogonalize" in line)
    cells = [cell.strip() for cell in line.split("│") if cell.strip()]
    assert cells[0] == "muon_orthogonalize" and cells[-2] == "3"  # the workloads column, not any "3" on the line
    assert cells[-1] == "L1 L2 L3"


def test_tasks_show_prints_spec_workloads_requirements() -> None:
    result = runner.invoke(app, ["tasks", "show", "muon_orthogonalize"])
    assert result.exit_code == 0, result.output
    for expected in ("bfloat16", "float16", "b32_m4096_n11008", "smoke_b8_m64_n200", "must be 5", "Triton"):
        assert expected in result.stdout


def test_tasks_show_prints_the_workloads_once(tmp_path: Path, task_copy: Path) -> None:
    result = runner.invoke(app, ["tasks", "show", "muon_orthogonalize"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert sum("7168" in line for line in lines) == 1  # one row for B=8 M=7168 N=18432: in the full table
    assert sum(line.strip() == "Workloads" for line in lines) == 1
    assert "inputs.py builds the inputs" in result.stdout  # the description's words around its table stay
    assert result.stdout.index("Workloads") < result.stdout.index("smoke_b8_m64_n200") < result.stdout.index("Correctness")
    description = task_copy / "description.md"  # a description without a table of workloads: the table still shows
    text = description.read_text()
    description.write_text(text[: text.index("## Workloads")] + text[text.index("## Correctness") :])
    plain = runner.invoke(app, ["tasks", "show", "muon_orthogonalize", "--tasks-dir", str(tmp_path / "tasks")])
    assert plain.exit_code == 0, plain.output
    assert sum("7168" in line for line in plain.stdout.splitlines()) == 1 and "Workloads" in plain.stdout


def test_guidance_l1_prints_l1_only() -> None:
    result = runner.invoke(app, ["guidance", "muon_orthogonalize", "--levels", "L1"])
    assert result.exit_code == 0, result.output
    assert "## L1" in result.stdout
    assert "## L2" not in result.stdout and "## L3" not in result.stdout


def test_guidance_default_is_all_levels_and_none_is_empty() -> None:
    full = runner.invoke(app, ["guidance", "muon_orthogonalize"])
    assert all(f"## L{n}" in full.stdout for n in (1, 2, 3))
    empty = runner.invoke(app, ["guidance", "muon_orthogonalize", "--levels", "none"])
    assert empty.exit_code == 0 and empty.stdout == ""


def test_bad_levels_exit_2_with_message_on_stderr() -> None:
    result = runner.invoke(app, ["guidance", "muon_orthogonalize", "--levels", "L3"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "unknown guidance configuration" in result.stderr


def test_unknown_task_exit_2() -> None:
    result = runner.invoke(app, ["tasks", "show", "nope"])
    assert result.exit_code == 2
    assert "no task 'nope'" in result.stderr


def test_tasks_dir_from_environment(tmp_path: Path, task_copy: Path) -> None:
    (task_copy / "task.toml").write_text("broken = [\n")
    result = runner.invoke(app, ["tasks"], env={"D2K_TASKS_DIR": str(tmp_path / "tasks")})
    assert result.exit_code == 2  # the task is listed with its problem, and the exit code says a task is bad
    assert "not valid TOML" in result.stdout and "muon_orthogonalize" in result.stderr


def test_tasks_dir_option(tmp_path: Path) -> None:
    result = runner.invoke(app, ["tasks", "--tasks-dir", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert "tasks folder not found" in result.stderr


def test_one_run_signature_table_serves_the_cli_and_the_workbench() -> None:
    from workbench import paths
    from workbench.catalog import Catalog
    from workbench.catalog.describe import signature_table
    from workbench.tui.screens import tasks

    task = Catalog(paths.tasks_root(), paths.guidance_root()).task("muon_orthogonalize")
    table = signature_table(task)
    assert [str(c.header) for c in table.columns] == ["", "name", "dtype", "shape", "notes"]
    assert table.row_count == len(task.spec.signature.inputs) + len(task.spec.signature.outputs)
    assert tasks.signature_table is signature_table  # the tasks screen shows the same table


def test_tasks_lists_the_good_tasks_beside_a_bad_one_and_exits_2(tmp_path: Path) -> None:
    import shutil

    from workbench import paths

    shutil.copytree(paths.REPO_ROOT / "tasks" / "muon_orthogonalize", tmp_path / "muon_orthogonalize")
    (tmp_path / "broken_task").mkdir()
    (tmp_path / "broken_task" / "task.toml").write_text('id = "broken_task"\n')
    result = runner.invoke(app, ["tasks", "--tasks-dir", str(tmp_path)])
    assert result.exit_code == 2
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") > 2}
    assert "Muon" in rows["muon_orthogonalize"] and "cannot be used" in rows["broken_task"]
    assert "1 task(s) cannot be used: broken_task" in result.stderr


def test_guidance_none_says_so_on_stderr_and_prints_nothing() -> None:
    result = runner.invoke(app, ["guidance", "muon_orthogonalize", "--levels", "none"])
    assert result.exit_code == 0 and result.stdout == ""
    assert "no guidance" in result.stderr


def test_a_negative_idle_exit_is_refused() -> None:
    result = runner.invoke(app, ["session", "run", "whatever", "--idle-exit", "-5"])
    assert result.exit_code == 2 and "greater than or equal to 0" in result.output
