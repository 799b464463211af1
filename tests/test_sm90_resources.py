"""scripts/sm90_resources.py: the registers and occupancy a kernel's PTX gives on a Hopper SM, found without a
GPU (the register and occupancy figures of docs/notes/performance-notebook.md's mamba2_ssd section rest on it)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from workbench import paths


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sm90_resources", paths.REPO_ROOT / "scripts" / "sm90_resources.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sm90 = load()


@pytest.mark.parametrize(
    ("registers", "warps", "shared", "want"),
    [
        (255, 4, 56 * 1024, (2, "registers")),  # 256 a thread allotted: 32 K registers a program
        (168, 4, 56 * 1024, (3, "registers")),
        (128, 4, 28 * 1024, (4, "registers")),
        (179, 8, 56 * 1024, (1, "registers")),
        (64, 4, 162 * 1024 + 512, (1, "shared memory")),  # with the 1 KB reserved a program
        (24, 4, 0, (16, "threads")),
        (16, 1, 0, (32, "programs")),
    ],
)
def test_resident_programs_follow_the_hopper_limits(registers: int, warps: int, shared: int, want: tuple[int, str]) -> None:
    assert sm90.resident_programs(registers, warps, shared) == want


PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry add_one(.param .u64 out, .param .u32 n)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd2, %rd2, %rd3;
    ld.global.f32 %f1, [%rd2];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd2], %f2;
    ret;
}
"""


def test_ptxas_reports_registers_and_no_spills_for_a_small_kernel() -> None:
    try:
        sm90.ptxas_path()
    except FileNotFoundError:
        pytest.skip("this Triton wheel carries no ptxas")
    used = sm90.assemble(PTX)
    assert 1 <= used.registers <= 16 and used.spill_stores == used.spill_loads == 0


def test_ptx_that_does_not_assemble_is_an_error_with_ptxas_message() -> None:
    try:
        sm90.ptxas_path()
    except FileNotFoundError:
        pytest.skip("this Triton wheel carries no ptxas")
    with pytest.raises(RuntimeError, match="ptxas failed"):
        sm90.assemble(PTX.replace("add.f32", "add.nonsense"))
