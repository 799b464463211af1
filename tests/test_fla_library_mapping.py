"""The flash-linear-attention library baselines (chunked_gla, gated_deltanet, mamba2_ssd): fla-core runs on the GPU
only, so on the CPU each task's `library` is driven through the same contract fla documents (``[B, T, H, D]``
inputs, ``g`` ``[B, T, H]`` log decays, the state ``[B, H, K, V]``), written here as plain float64 recurrences:
the layout changes, scale, group expansion and state transposes must give the task's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from workbench.catalog import Catalog
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
CATALOG = Catalog(REPO / "tasks", REPO / "guidance")


def simple_gla(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, scale: float, **_: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """fla's chunk_simple_gla contract: S_t = exp(g_t) S_{t-1} + k_t^T v_t, o_t = scale q_t S_t."""
    B, T, H, K = q.shape
    state = torch.zeros(B, H, K, v.shape[-1], dtype=torch.float64)
    out = []
    for t in range(T):
        state = state * g[:, t].double().exp()[..., None, None] + k[:, t].double()[..., :, None] * v[:, t].double()[..., None, :]
        out.append(scale * torch.einsum("bhk,bhkv->bhv", q[:, t].double(), state))
    return torch.stack(out, dim=1).to(v.dtype), state.float()


def gated_delta(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, scale: float, **kw: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """fla's chunk_gated_delta_rule contract (l2-normalised q and k in the kernel): S_t = a S + b k (v - (a S)^T k)^T."""
    assert kw["use_qk_l2norm_in_kernel"] and kw["output_final_state"]

    def norm(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + 1e-6)

    qn, kn = norm(q.double()), norm(k.double())
    B, T, H, K = q.shape
    state = torch.zeros(B, H, K, v.shape[-1], dtype=torch.float64)
    out = []
    for t in range(T):
        state = state * g[:, t].double().exp()[..., None, None]
        kt, bt = kn[:, t], beta[:, t].double()[..., None]
        error = v[:, t].double() - torch.einsum("bhk,bhkv->bhv", kt, state)
        state = state + kt[..., :, None] * (bt * error)[..., None, :]
        out.append(scale * torch.einsum("bhk,bhkv->bhv", qn[:, t], state))
    return torch.stack(out, dim=1).to(v.dtype), state.float()


OPS = {"chunked_gla": simple_gla, "gated_deltanet": gated_delta, "mamba2_ssd": simple_gla}


@pytest.mark.parametrize("task_id", sorted(OPS))
def test_the_library_call_through_fla_s_contract_gives_the_tasks_result(task_id: str) -> None:
    task = CATALOG.task(task_id)
    assert task.spec.library is not None and not task.spec.library.cpu and "fla" in task.spec.library.call
    reference = import_file(task.file("reference.py"), f"_fla_{task_id}_reference")
    inputs_module = import_file(task.file("inputs.py"), f"_fla_{task_id}_inputs")
    for seed, workload in enumerate(task.spec.smoke_workloads[:2], start=5):
        inputs = inputs_module.make_inputs(workload.axes, seed, "cpu")
        got = reference.library(**inputs, op=OPS[task_id])
        want = reference.exact(**inputs)
        for name, g, w in zip(("output", "final state"), got, want, strict=True):
            assert g.shape == w.shape, (workload.name, name)
            rel = ((g.double() - w.double()).norm() / w.double().norm()).item()
            assert rel < 1e-2, f"{workload.name}: {name} rel err {rel:.2e}"


def test_a_wrong_layout_is_caught_by_the_mapping_test() -> None:
    """The check above can fail: the same op fed the task's own [B, H, T, D] layout (no transposes) is far off."""
    task = CATALOG.task("chunked_gla")
    reference = import_file(task.file("reference.py"), "_fla_wrong_reference")
    inputs_module = import_file(task.file("inputs.py"), "_fla_wrong_inputs")
    inputs = inputs_module.make_inputs(task.spec.smoke_workloads[0].axes, 3, "cpu")
    q, k, v, g = (inputs[n] for n in ("q", "k", "v", "g"))
    o, _ = simple_gla(q, k, v, g, scale=q.shape[-1] ** -0.5)  # [B, H, T, D] read as [B, T, H, D]
    want, _ = reference.exact(**inputs)
    assert ((o.double() - want).norm() / want.norm()).item() > 0.1
