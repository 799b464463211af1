"""Peak rates of known GPUs, for the roofline floor. Datasheet figures (dense, no sparsity).

A measured latency below max(FLOPs / peak rate, bytes / peak bandwidth) is physically impossible, so
the harness treats it as a failure. Datasheet peaks are above what code reaches, which keeps the
floor conservative.
"""

from __future__ import annotations

from pydantic import BaseModel


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
