"""Peak rates of known GPUs, for the roofline floor. Datasheet figures (dense, no sparsity).

A measured latency below max(FLOPs / peak rate, bytes / peak bandwidth) is physically impossible, so
the harness treats it as a failure. Datasheet peaks are above what code reaches, which keeps the
floor conservative.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from workbench.catalog.task import Task, Workload


class DevicePeaks(BaseModel):
    name: str
    tflops: dict[str, float]  # by flop_dtype
    bandwidth_tbs: float


PEAKS: tuple[DevicePeaks, ...] = (
    DevicePeaks(
        name="H100",
        tflops={"float16": 989.0, "bfloat16": 989.0, "tf32": 494.0, "float32": 67.0, "float8": 1979.0, "float64": 67.0},
        bandwidth_tbs=3.35,
    ),
    DevicePeaks(
        name="H200",
        tflops={"float16": 989.0, "bfloat16": 989.0, "tf32": 494.0, "float32": 67.0, "float8": 1979.0, "float64": 67.0},
        bandwidth_tbs=4.8,
    ),
    DevicePeaks(
        name="B200",
        tflops={"float16": 2250.0, "bfloat16": 2250.0, "tf32": 1100.0, "float32": 80.0, "float8": 4500.0, "float64": 40.0},
        bandwidth_tbs=8.0,
    ),
)


def peaks_for(device_name: str) -> DevicePeaks | None:
    """Match a CUDA device name such as 'NVIDIA H200' to its peaks; None when unknown."""
    upper = device_name.upper()
    for peaks in PEAKS:
        if peaks.name in upper:
            return peaks
    return None


def floor_ms(peaks: DevicePeaks, flops: float, nbytes: float, flop_dtype: str) -> float:
    compute_s = flops / (peaks.tflops[flop_dtype] * 1e12)
    memory_s = nbytes / (peaks.bandwidth_tbs * 1e12)
    return max(compute_s, memory_s) * 1e3


def expert_floor_ms(peaks: DevicePeaks, task: Task, workload: Workload) -> float:
    """The floor of any honest design: the fewest FLOPs (`min_flops`) and bytes (`bytes`) at peak rates.

    A measured latency below it is impossible; the harness rejects one."""
    roof = task.spec.roofline
    return floor_ms(peaks, task.min_flops(workload), task.bytes_moved(workload), roof.flop_dtype)


def reference_floor_ms(peaks: DevicePeaks, task: Task, workload: Workload) -> float:
    """The floor of the reference's dataflow: its FLOPs (`flops`) and its eager kernels' bytes
    (`reference_bytes`, else `bytes`) at peak rates, in the reference's arithmetic where the task names it."""
    roof = task.spec.roofline
    nbytes = task.reference_bytes(workload)
    dtype = roof.reference_flop_dtype or roof.flop_dtype
    return floor_ms(peaks, task.flops(workload), task.bytes_moved(workload) if nbytes is None else nbytes, dtype)
