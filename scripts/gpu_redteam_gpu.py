"""The red team of issue 32's tasks on the GPU: each task's honest naive solution and its cheats (naive solution plus
the cheat's `run`, as tests/redteam/naive_cheats.py assembles them) through `d2k-workbench eval --no-timing` on one
registered workload each. Prints one row per evaluation: task, workload, solution, status, seconds, message.

Run on the GPU machine from the repository root: ``python3 scripts/gpu_redteam_gpu.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path.cwd()
CASES = {
    "gemm_swiglu": ("m8192_k7168_i2048", ("swapped_halves", "k_tail_dropped")),
    "moe_permute": ("t4096_k8_e256_h7168", ("unstable_order", "shifted_weights")),
    "multi_lora": ("decode_t256_a64_r64", ("segment_adapter_zero", "no_adapter_as_zero")),
    "fused_moe_forward": ("qwen3_decode_t32_e128_k8", ("weights_not_renormalised", "silu_on_up_half")),
    "moe_grouped_gemm_bwd": ("olmoe_t8192_e64_k8", ("boundary_off_by_one", "dx_first_slot_only")),
}


def assemble(task: str, cheat: str, folder: Path) -> Path:
    honest = (REPO / "tests/solutions" / f"{task}_naive.py").read_text().replace("\ndef run(", "\ndef honest_run(")
    path = folder / f"{task}_{cheat}.py"
    path.write_text(honest + "\n\n" + (REPO / "tests/redteam" / f"{task}_cheats" / f"{cheat}.py").read_text())
    return path


def evaluate(task: str, path: Path, workload: str) -> tuple[str, str]:
    command = [sys.executable, "-m", "workbench", "eval", task, str(path), "--device", "cuda", "--workload", workload]
    out = subprocess.run([*command, "--no-timing", "--json", "--timeout", "120"], check=False, capture_output=True, text=True)
    try:
        report = json.loads(out.stdout)
    except json.JSONDecodeError:
        return f"rc {out.returncode}", out.stderr[-200:]
    return report["status"], report.get("message", "")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for task, (workload, cheats) in CASES.items():
            for name in ("naive", *cheats):
                path = REPO / "tests/solutions" / f"{task}_naive.py" if name == "naive" else assemble(task, name, Path(tmp))
                started = time.time()
                status, message = evaluate(task, path, workload)
                row = (task, workload, name, status, f"{time.time() - started:.1f}s", message[:110].replace("\n", " "))
                print(*row, sep=" | ", flush=True)


if __name__ == "__main__":
    main()
