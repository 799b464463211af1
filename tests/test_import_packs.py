"""Importing the hand-written packs (tests/fixtures/peer_packs: KernelBench's and GPU MODE's formats) through the
sandboxed probe: what is imported, what is skipped and why, and that every imported task's reference and
inputs run on its smoke workloads, as the harness will call them."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from workbench.catalog import Catalog
from workbench.catalog.imported import load_record
from workbench.catalog.task import ScalarArg, Task, TensorArg
from workbench.cli import app
from workbench.importer.packs import gpumode_problems, kernelbench_problems
from workbench.importer.run import ImportOptions, ImportSummary, import_pack

PACKS = Path(__file__).parent / "fixtures" / "peer_packs"
SOLUTIONS = PACKS / "solutions"
DTYPES = {"float32": torch.float32, "float16": torch.float16, "int64": torch.int64, "uint8": torch.uint8}
KB_PICK = (
    "4_ReLU.py",
    "8_Argmax_dim.py",
    "11_Conv2d_standard.py",
    "15_MSE_loss.py",
    "17_Dropout_train.py",
    "18_Numpy_inputs.py",
    "19_Mean_as_float.py",
    "2_Conv2d_BatchNorm_Tanh.py",
    "6_Counting_scale.py",
    "4_Causal_self_attention.py",
    "5_Fixed_random_projection.py",
)


def _import_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _outcomes(summary: ImportSummary) -> dict[str, str]:
    return {o.problem: ("imported" if o.imported else str(o.reason)) for o in summary.outcomes}


@pytest.fixture(scope="module")
def kernelbench(tmp_path_factory: pytest.TempPathFactory) -> ImportSummary:
    into = tmp_path_factory.mktemp("kb")
    problems = [p for p in kernelbench_problems(PACKS / "kernelbench") if p.name.split("/")[1] in KB_PICK]
    problems = [p for p in problems if not (p.level == 3 and p.name.endswith("4_ReLU.py"))]
    # two probes at once (`--jobs 2`): the outcomes still come back in the problems' order
    return import_pack("kernelbench", PACKS / "kernelbench", problems, ImportOptions(into=into, timeout_s=60, jobs=2))


@pytest.fixture(scope="module")
def gpumode(tmp_path_factory: pytest.TempPathFactory) -> ImportSummary:
    into = tmp_path_factory.mktemp("gm")
    return import_pack("gpumode", PACKS / "gpumode", gpumode_problems(PACKS / "gpumode"), ImportOptions(into=into, timeout_s=60))


def test_a_small_import_from_the_command_line(tmp_path: Path) -> None:
    into = tmp_path / "kb"
    result = CliRunner().invoke(
        app,
        [
            "import",
            "kernelbench",
            str(PACKS / "kernelbench"),
            "--level",
            "1",
            "--problems",
            "1[89]_*.py",
            "--into",
            str(into),
            "--report",
            str(tmp_path / "report.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "imported 0, skipped 2 (1 inputs from an unseeded global generator, 1 outputs that are not tensors)" in result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["problems"] == 2 and report["skipped"] == {
        "inputs from an unseeded global generator": 1,
        "outputs that are not tensors": 1,
    }
    assert [o["reason"] for o in report["outcomes"]] == ["unseeded_generator", "non_tensor_output"]
    bad = CliRunner().invoke(app, ["import", "gpumode", str(PACKS / "kernelbench"), "--into", str(into)])
    assert bad.exit_code == 2 and "no GPU MODE problems" in bad.output


@pytest.mark.slow
def test_kernelbench_pack_imports_and_skips_with_reasons(kernelbench: ImportSummary) -> None:
    names = [o.problem for o in kernelbench.outcomes]
    assert names == sorted(names, key=lambda n: (n.split("/")[0], int(n.split("/")[1].split("_")[0])))
    assert _outcomes(kernelbench) == {
        "level1/4_ReLU.py": "imported",
        "level1/8_Argmax_dim.py": "imported",
        "level1/11_Conv2d_standard.py": "imported",
        "level1/15_MSE_loss.py": "imported",
        "level1/17_Dropout_train.py": "random_or_stateful",
        "level1/18_Numpy_inputs.py": "unseeded_generator",
        "level1/19_Mean_as_float.py": "non_tensor_output",
        "level2/2_Conv2d_BatchNorm_Tanh.py": "imported",
        "level2/6_Counting_scale.py": "random_or_stateful",
        "level3/4_Causal_self_attention.py": "imported",
        "level3/5_Fixed_random_projection.py": "hidden_tensors",
    }
    assert kernelbench.sandbox.startswith(("bubblewrap", "none"))
    cat = Catalog(kernelbench.into, kernelbench.into / "no-guidance")
    conv = cat.task("kb_l1_11_conv2d_standard")
    shapes = {a.name: a.shape for a in conv.spec.signature.inputs if isinstance(a, TensorArg)}
    assert shapes == {"x": ["batch_size", "in_channels", "height", "width"], "conv_weight": ["out_channels", "in_channels", 3, 3],
                      "conv_bias": ["out_channels"]}  # fmt: skip
    assert conv.spec.signature.outputs[0].shape == ["batch_size", "out_channels", "out_d2", "out_d3"]
    assert conv.spec.workloads[0].axes["out_d2"] == 126  # the peer's 128 - 3 + 1
    assert conv.spec.tolerance.atol == conv.spec.tolerance.rtol == 1e-4
    # batch norm's running statistics, which the forward updates, stay in the reference; its mask buffer is an input
    bn = cat.task("kb_l2_2_conv2d_batchnorm_tanh")
    assert [a.name for a in bn.spec.signature.inputs] == ["x", "conv_weight", "conv_bias", "bn_weight", "bn_bias"]
    attention = cat.task("kb_l3_4_causal_self_attention")
    assert "mask" in [a.name for a in attention.spec.signature.inputs]
    record = load_record(attention.dir)
    assert record is not None and record.pack == "kernelbench" and record.level == 3
    assert record.source == "KernelBench/level3/4_Causal_self_attention.py"


@pytest.mark.slow
def test_gpumode_pack_imports_and_skips_with_reasons(gpumode: ImportSummary) -> None:
    assert _outcomes(gpumode) == {
        "practice/all_gather": "multi_rank",
        "practice/histogram": "imported",
        "practice/matmul": "imported",
        "practice/numpy_noise": "unseeded_generator",
        "practice/prefix_sum": "imported",
        "practice/row_sum": "imported",
        "practice/scaled_stats": "non_tensor_output",
        "practice/sort_check": "unsupported_checker",
        "practice/vectoradd": "imported",
    }
    cat = Catalog(gpumode.into, gpumode.into / "no-guidance")
    histogram = cat.task("gm_practice_histogram")
    counts = next(a for a in histogram.spec.signature.inputs if a.name == "counts")
    assert isinstance(counts, TensorArg) and counts.state and counts.shape == [256]  # the buffer written in place
    contention = next(a for a in histogram.spec.signature.inputs if a.name == "contention")
    assert isinstance(contention, ScalarArg) and contention.axis == "contention"  # a parameter no shape shows
    assert not histogram.spec.signature.outputs and histogram.spec.tolerance.atol == 0.0
    assert [w.name for w in histogram.spec.workloads] == ["bench_contention10_size1048576", "bench_contention50_size4194304"]
    matmul = cat.task("gm_practice_matmul")
    assert matmul.spec.signature.outputs[0].shape == ["m", "n"] and matmul.spec.tolerance.rtol == 2e-2


def _check_task_runs(task: Task) -> None:
    """make_inputs and reference at each smoke workload, as the checker calls them: shapes and dtypes as
    declared, the same inputs for one seed and other ones for another."""
    inputs = _import_module(task.file("inputs.py"), f"_t_inputs_{task.id}")
    reference = _import_module(task.file("reference.py"), f"_t_reference_{task.id}")
    for workload in task.spec.smoke_workloads:
        made = inputs.make_inputs(workload.axes, 12345, "cpu")
        again = inputs.make_inputs(workload.axes, 12345, "cpu")
        other = inputs.make_inputs(workload.axes, 999, "cpu")
        tensors = [a for a in task.spec.signature.inputs if isinstance(a, TensorArg)]
        for arg in tensors:
            value = made[arg.name]
            assert tuple(value.shape) == task.shape(arg.shape, workload) and value.dtype == DTYPES[arg.dtype], arg.name
            assert torch.equal(value.nan_to_num(), again[arg.name].nan_to_num())
        assert any(not torch.equal(made[a.name].nan_to_num(), other[a.name].nan_to_num()) for a in tensors)
        args: dict[str, Any] = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in made.items()}
        result = reference.reference(**args)
        outputs = task.spec.signature.outputs
        values = [] if not outputs else [result] if len(outputs) == 1 else list(result)
        for spec, value in zip(outputs, values, strict=True):
            assert tuple(value.shape) == task.shape(spec.shape, workload) and value.dtype == DTYPES[spec.dtype]
        for arg in tensors:
            if arg.state:  # the buffer written in place holds no poison after the reference's call
                assert not args[arg.name].double().isnan().any()
                assert args[arg.name].max().item() < math.inf


@pytest.mark.slow
def test_every_imported_reference_runs_on_its_smoke_workloads(kernelbench: ImportSummary, gpumode: ImportSummary) -> None:
    for summary in (kernelbench, gpumode):
        cat = Catalog(summary.into, summary.into / "no-guidance")
        for task in cat.tasks():
            _check_task_runs(task)


@pytest.mark.slow  # a whole CPU evaluation (sandbox, solution process): 4-8 s
def test_the_catalogue_shows_imported_tasks(tmp_path: Path) -> None:
    into = tmp_path / "kb"
    done = CliRunner().invoke(
        app, ["import", "kernelbench", str(PACKS / "kernelbench"), "--level", "1", "--problems", "4_ReLU.py", "--into", str(into)]
    )
    assert done.exit_code == 0, done.output
    listing = CliRunner().invoke(app, ["tasks", "--tasks-dir", str(into)], env={"COLUMNS": "200"})
    assert listing.exit_code == 0 and "imported, no guidance" in listing.output
    shown = CliRunner().invoke(app, ["tasks", "show", "kb_l1_4_relu", "--tasks-dir", str(into)], env={"COLUMNS": "200"})
    assert "origin: KernelBench level1/4_ReLU.py" in shown.output and "def get_inputs" in shown.output
    _check_task_runs(Catalog(into, tmp_path / "guidance").task("kb_l1_4_relu"))


@pytest.mark.slow
def test_imported_tasks_are_evaluated_by_the_harness(kernelbench: ImportSummary, gpumode: ImportSummary) -> None:
    """Honest Triton solutions pass through the sandboxed harness, the ReLU with its inputs made in the
    solution process from the task's inputs.py text (the GPU's path); a solution of the wrong task fails."""
    from workbench.harness.host.evaluate import evaluate

    relu = Catalog(kernelbench.into, kernelbench.into / "g").task("kb_l1_4_relu")
    report = evaluate(relu, SOLUTIONS / "relu_triton.py", "cpu", seeded_inputs=True)
    assert report.status == "passed", report.message
    assert report.workloads[0].inputs_made_there
    vectoradd = Catalog(gpumode.into, gpumode.into / "g").task("gm_practice_vectoradd")
    assert evaluate(vectoradd, SOLUTIONS / "vectoradd_triton.py", "cpu").status == "passed"
    wrong = evaluate(vectoradd, SOLUTIONS / "relu_triton.py", "cpu")
    assert wrong.status == "runtime_error"
