"""The importer's parts that run no peer code: source rewrites, task.yml reading, pack discovery, the peer's
tolerance, the commit of a checkout, the import record and how the catalogue treats imported tasks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.catalog.imported import ImportRecord, load_record, record_toml
from workbench.harness.protocol.peer_source import DEVICE_NAME, free_sizes, with_sizes
from workbench.importer import analyze
from workbench.importer.errors import PackError
from workbench.importer.packs import gpumode_problems, kernelbench_problems, repo_commit
from workbench.importer.render import string_literal
from workbench.importer.yamlish import loads

PACKS = Path(__file__).parent / "fixtures" / "peer_packs"

SOURCE = """import torch
N = 2048 * 2
height = width = 64
h2, w2 = 8, 16
kernel = 3
flag = True
dim = N * 2
M = 5
M += 1
def get_inputs():
    K = 7
    return [torch.rand(N, dim, device="cuda").cuda()]
def get_init_inputs():
    return [height]
"""


def test_free_sizes_are_names_bound_only_by_integer_literals() -> None:
    sizes = free_sizes(ast.parse(SOURCE))
    assert sizes == {"N": 4096, "height": 64, "width": 64, "h2": 8, "w2": 16, "kernel": 3}  # not flag, dim, M or K


def test_with_sizes_sets_sizes_and_moves_cuda_to_the_harness_device() -> None:
    tree = with_sizes(SOURCE, {"N": 8, "height": 4}, "problem.py")
    namespace: dict[str, object] = {DEVICE_NAME: "meta"}
    exec(compile(tree, "problem.py", "exec"), namespace)
    assert (namespace["N"], namespace["dim"], namespace["height"], namespace["width"]) == (8, 16, 4, 64)
    text = ast.unparse(tree)
    assert '"cuda"' not in text and ".cuda()" not in text and f".to({DEVICE_NAME})" in text
    with pytest.raises(ValueError, match="not free sizes"):
        with_sizes(SOURCE, {"dim": 3}, "problem.py")


def test_builder_sizes_follow_derived_names_and_smoke_candidates_shrink_the_large_ones() -> None:
    tree = ast.parse(SOURCE)
    assert analyze.builder_sizes(tree) == {"N": 4096, "height": 64}  # dim is derived from N
    candidates = analyze.smoke_candidates({"N": 4096, "kernel": 3, "height": 64})
    assert candidates[0] == {"N": 2048, "height": 32}  # kernel (< 16) keeps its value
    assert all(c["N"] >= 1 for c in candidates) and candidates[-1]["height"] == 1


def test_yamlish_reads_the_task_yml_subset() -> None:
    text = (PACKS / "gpumode" / "problems" / "practice" / "row_sum" / "task.yml").read_text()
    data = loads(text)
    assert data["tests"] == [{"rows": 17, "cols": 300, "seed": 5}, {"rows": 64, "cols": 1000, "seed": 6}]
    assert data["description"] == "Sum each row of a float32 matrix.\n"
    assert loads('a: {"x": 1, y: 2.5, z: "s"}  # c\nb:\n  - [1, 2]\nc: |\n  one\n  two\n') == {
        "a": {"x": 1, "y": 2.5, "z": "s"},
        "b": [[1, 2]],
        "c": "one\ntwo\n",
    }
    with pytest.raises(ValueError, match="line 2"):
        loads("a: 1\n  b: 2\n")


def test_kernelbench_discovery_levels_globs_and_ids() -> None:
    found = kernelbench_problems(PACKS / "kernelbench")
    assert len(found) == 40 and {p.level for p in found} == {1, 2, 3}
    assert found[0].task_id == "kb_l1_1_square_matmul" and found[0].name == "level1/1_Square_matmul.py"
    assert [p.name for p in kernelbench_problems(PACKS / "kernelbench", level=2, pattern="*Noise*")] == [
        "level2/5_Linear_Noise.py"
    ]
    with pytest.raises(PackError, match="no level7"):
        kernelbench_problems(PACKS / "kernelbench", level=7)


def test_a_pack_of_the_wrong_format_or_a_bad_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PackError, match=r"no KernelBench level folders.*import gpumode"):
        kernelbench_problems(PACKS / "gpumode")
    with pytest.raises(PackError, match=r"no GPU MODE problems.*import kernelbench"):
        gpumode_problems(PACKS / "kernelbench")
    with pytest.raises(PackError, match="no such folder"):
        kernelbench_problems(tmp_path / "missing")
    (tmp_path / "file.py").write_text("x = 1\n")
    with pytest.raises(PackError, match="not a folder"):
        gpumode_problems(tmp_path / "file.py")


def test_gpumode_discovery_reads_task_yml_and_the_files_it_names() -> None:
    found = {p.name: p for p in gpumode_problems(PACKS / "gpumode")}
    assert len(found) == 9
    vectoradd = found["practice/vectoradd"]
    assert vectoradd.task_id == "gm_practice_vectoradd" and set(vectoradd.sources) == {"reference", "task", "utils"}
    assert vectoradd.manifest["benchmarks"] == [{"size": 2048, "seed": 21}, {"size": 8192, "seed": 22}]


@pytest.mark.parametrize(
    ("problem", "expected"),
    [
        ("vectoradd", (1e-8, 1e-5)),  # make_match_reference's default, read from utils.py
        ("matmul", (1e-2, 2e-2)),
        ("row_sum", (1e-3, 1e-4)),  # a helper called with rtol/atol
        ("histogram", (0.0, 0.0)),  # an exact comparison
    ],
)
def test_the_peers_tolerance_is_read_from_check_implementation(problem: str, expected: tuple[float, float]) -> None:
    (found,) = gpumode_problems(PACKS / "gpumode", pattern=problem)
    atol, rtol, _ = analyze.gpumode_tolerance(found.sources)
    assert (atol, rtol) == expected


def test_a_property_checker_cannot_be_expressed() -> None:
    (found,) = gpumode_problems(PACKS / "gpumode", pattern="sort_check")
    with pytest.raises(analyze.Unsupported) as caught:
        analyze.gpumode_tolerance(found.sources)
    assert caught.value.reason == "unsupported_checker"


def test_repo_commit_reads_head_loose_and_packed_refs(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    sha = "a" * 40
    (git / "refs" / "heads" / "main").write_text(sha + "\n")
    (tmp_path / "sub").mkdir()
    assert repo_commit(tmp_path / "sub") == sha
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs\n{'b' * 40} refs/heads/main\n")
    assert repo_commit(tmp_path) == "b" * 40
    assert repo_commit(Path("/")) is None or len(repo_commit(Path("/")) or "") == 40


def test_string_literal_round_trips_awkward_text() -> None:
    for text in ["plain\n", "a '''quote''' \\ back\\slash\n", "ends with '", "tab\tand \x01 control", ""]:
        assert ast.literal_eval(string_literal(text)) == text


def test_the_import_record_and_an_imported_task_never_takes_guidance(tmp_path: Path) -> None:
    record = ImportRecord(pack="kernelbench", source="KernelBench/level1/4_ReLU.py", problem="level1/4_ReLU.py", commit="c" * 40)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "import.toml").write_text(record_toml(record))
    assert load_record(tmp_path / "t") == record
    assert record.origin() == "KernelBench level1/4_ReLU.py @ cccccccccccc"
    guidance = tmp_path / "guidance" / "t"
    guidance.mkdir(parents=True)
    (guidance / "guidance.toml").write_text('task = "t"\n')
    assert Catalog(tmp_path, tmp_path / "guidance").guidance("t") is None
