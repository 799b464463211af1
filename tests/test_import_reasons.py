"""Skip reasons that name the real cause, and reduced sizes that keep each problem's own constraints: the parts
that run no peer code (source rewrites, candidates, the reasons' words), then the fixtures imported through the
sandboxed probe (tests/fixtures/peer_packs: a tuple shape, a group-norm constraint, constraints no reduction
keeps, a vendor module, a CUDA-only forward, a multi-rank problem)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from workbench.catalog import Catalog
from workbench.harness.protocol.peer_source import free_sizes, with_sizes
from workbench.importer import analyze, reasons
from workbench.importer.packs import gpumode_problems, kernelbench_problems
from workbench.importer.run import ImportOptions, ImportSummary, import_pack

PACKS = Path(__file__).parent / "fixtures" / "peer_packs"
HINGE = (PACKS / "kernelbench" / "KernelBench" / "level1" / "20_Hinge_tuple_shape.py").read_text()


def test_a_shape_tuple_of_integers_becomes_free_sizes_on_the_same_lines() -> None:
    text, named = analyze.named_tuple_sizes(HINGE)
    assert named == {"input_shape_0": "input_shape"}
    assert len(text.splitlines()) == len(HINGE.splitlines())  # tracebacks still point at the peer's lines
    assert free_sizes(ast.parse(text))["input_shape_0"] == 4096
    assert analyze.builder_sizes(ast.parse(text)) == {"batch_size": 4096, "input_shape_0": 4096}
    namespace: dict[str, object] = {}
    exec(compile(with_sizes(text, {"batch_size": 64, "input_shape_0": 64}, "problem.py"), "problem.py", "exec"), namespace)
    assert namespace["input_shape"] == (64,)  # the tuple follows its named size
    small = "x = (3, 3)\nkernel = [1, 2]\n"
    assert analyze.named_tuple_sizes(small) == (small, {})  # nothing to scale: left as it is


def test_candidates_also_keep_one_size_at_its_own_value() -> None:
    sizes = {"batch_size": 64, "out_channels": 24, "D": 24, "H": 32, "W": 32, "num_groups": 8}
    candidates = analyze.smoke_candidates(sizes)
    assert candidates[0] == {"batch_size": 32, "out_channels": 12, "D": 12, "H": 16, "W": 16}  # uniform first
    kept = [c for c in candidates if c["out_channels"] == 24]
    assert kept and kept[0]["batch_size"] == 32 and all(set(c) == set(candidates[0]) for c in candidates)


def test_quoted_lines_and_refined_reasons() -> None:
    sources = {"problem": "import torch\nfrom vendor_x import k\nx = 1\n", "utils": "y = 2\n"}
    assert reasons.quote_lines("boom (problem.py, line 2: )", sources) == "boom (problem.py, line 2: from vendor_x import k)"
    assert reasons.quote_lines("boom (problem.py, line 9: )", sources) == "boom (problem.py, line 9)"
    reason, detail = reasons.refine(
        "does_not_load", "ModuleNotFoundError: No module named 'vendor_x' (problem.py, line 2: )", sources
    )
    assert reason == "missing_module" and "'vendor_x'" in detail and "line 2: from vendor_x import k" in detail
    assert reasons.refine("does_not_load", "ModuleNotFoundError: No module named 'utils'", sources)[0] == "does_not_load"
    memory = (
        "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 34359738368 bytes. (utils.py, line 1: )"
    )
    reason, detail = reasons.refine("cpu_failure", memory, {**sources, "utils": "y = f(2)\n"})
    assert reason == "too_large" and detail.endswith("(32.0 GiB at once) (utils.py, line 1: y = f(2))")
    assert reasons.text("multi_rank") == "a multi-rank problem (several GPUs at once)"
    assert reasons.text("cpu_failure") == "does not run on the CPU"


def test_a_multi_rank_problem_is_named_as_such() -> None:
    found = {p.name: p for p in gpumode_problems(PACKS / "gpumode")}
    gather = found["practice/all_gather"]
    why = analyze.multi_rank(gather.manifest, ast.parse(gather.sources["reference"]))
    assert why is not None and "multi_gpu: true" in why and "world_size = 8" in why and "rank and world_size" in why
    vectoradd = found["practice/vectoradd"]
    assert analyze.multi_rank(vectoradd.manifest, ast.parse(vectoradd.sources["reference"])) is None


REASON_PICK = (
    "level1/20_Hinge_tuple_shape.py",
    "level1/21_Fixed_total_small.py",
    "level1/22_Fixed_total_large.py",
    "level1/23_Vendor_module.py",
    "level1/26_Needs_cuda.py",
    "level2/7_Conv3d_GroupNorm_Mean.py",
    "level1/27_Outer_product.py",
    "level2/8_Conditional_shortcut.py",
)


@pytest.fixture(scope="module")
def reasons_import(tmp_path_factory: pytest.TempPathFactory) -> ImportSummary:
    into = tmp_path_factory.mktemp("reasons")
    problems = [p for p in kernelbench_problems(PACKS / "kernelbench") if p.name in REASON_PICK]
    problems += gpumode_problems(PACKS / "gpumode", pattern="all_gather")
    return import_pack("kernelbench", PACKS, problems, ImportOptions(into=into, timeout_s=60))


@pytest.mark.slow
def test_reduced_sizes_keep_the_problems_constraints(reasons_import: ImportSummary) -> None:
    outcomes = {o.problem: o for o in reasons_import.outcomes}
    assert all(outcomes[name].imported for name in REASON_PICK[:2] + REASON_PICK[5:]), [o.detail for o in outcomes.values()]
    cat = Catalog(reasons_import.into, reasons_import.into / "g")
    hinge = cat.task("kb_l1_20_hinge_tuple_shape").spec.smoke_workloads[0].axes
    assert hinge["batch_size"] == hinge["input_shape_0"] < 4096  # the tuple's size reduced with the batch
    norm = cat.task("kb_l2_7_conv3d_groupnorm_mean")
    assert norm.spec.smoke_workloads[0].axes["batch_size"] < 64  # reduced, with out_channels kept at 24
    assert [a.shape for a in norm.spec.signature.inputs if a.name == "conv_weight"] == [[24, 3, 3, 3, 3]]
    outer = cat.task("kb_l1_27_outer_product").spec.smoke_workloads[0].axes  # its inputs fit at M = 8192, its output not
    assert outer["M"] ** 2 <= 8 * 131072
    shortcut = cat.task("kb_l2_8_conditional_shortcut")  # a perturbation that makes in == out changes its parameters
    assert "shortcut_weight" in [a.name for a in shortcut.spec.signature.inputs]
    small = cat.task("kb_l1_21_fixed_total_small")  # no reduction keeps rows + cols = 80: its own sizes, said so
    assert small.spec.smoke_workloads[0].axes == {} and "keeps the problem's own sizes" in small.description_text()


@pytest.mark.slow
def test_skip_reasons_name_the_real_cause_and_quote_the_line(reasons_import: ImportSummary) -> None:
    outcomes = {o.problem: o for o in reasons_import.outcomes}
    large = outcomes["level1/22_Fixed_total_large.py"]
    assert large.reason == "reduced_sizes" and "4,194,304 elements of inputs, weights and outputs" in large.detail
    assert 'line 14: raise ValueError("rows + cols must be 3072")' in large.detail
    vendor = outcomes["level1/23_Vendor_module.py"]
    assert vendor.reason == "missing_module" and "'d2k_fixture_vendor_kernels'" in vendor.detail
    cuda = outcomes["level1/26_Needs_cuda.py"]  # fails at its own sizes too: the CPU is the cause
    assert cuda.reason == "cpu_failure" and "line 12: scale = torch.cuda.current_device() + 1" in cuda.detail
    assert outcomes["practice/all_gather"].reason == "multi_rank"
    assert not any(": )" in o.detail for o in reasons_import.outcomes)  # no located reason quotes an empty line
    counted = reasons_import.reasons()
    assert counted["fails at reduced sizes, too large at its own"] == 1 and counted["needs a module that is not installed"] == 1
