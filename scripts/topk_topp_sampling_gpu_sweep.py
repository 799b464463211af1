"""topk_topp_sampling on a GPU: the expert's launch configurations against the reference (do_bench, L2 flushed),
and where the time goes (rows all k = 50 or k = V, p = 1 or 0.9). Run from the repository root on the GPU machine:
`python3 scripts/topk_topp_sampling_gpu_sweep.py`.

The expert picks its configuration by batch size; the sweep sets the module's FEW_ROWS and MANY_ROWS to each
candidate in turn.
"""

from __future__ import annotations

from pathlib import Path

import torch
from triton.testing import do_bench

from workbench.harness.protocol.task_files import import_file

TASK = Path("tasks/topk_topp_sampling")
V = 151936
CONFIGS = ((4096, 8), (4096, 16), (8192, 16))


def main() -> None:
    reference = import_file(TASK / "reference.py", "sweep_reference")
    inputs = import_file(TASK / "inputs.py", "sweep_inputs")
    expert = import_file(TASK / "expert.py", "sweep_expert")
    print(f"{'B':>5} {'BLOCK':>6} {'warps':>5} {'expert ms':>10} {'ref ms':>8} {'speedup':>8} {'GB/s(4BV)':>10}")
    for B in (64, 256, 1024):
        made = inputs.make_inputs({"B": B, "V": V}, 1, "cuda")
        ref = do_bench(lambda made=made: reference.reference(**made), warmup=50, rep=300)
        for block, warps in CONFIGS:
            expert.FEW_ROWS = expert.MANY_ROWS = (block, warps)
            t = do_bench(lambda made=made: expert.run(**made), warmup=50, rep=300)
            print(f"{B:>5} {block:>6} {warps:>5} {t:>10.4f} {ref:>8.4f} {ref / t:>8.2f} {4 * B * V / t / 1e6:>10.1f}", flush=True)
    made = inputs.make_inputs({"B": 256, "V": V}, 2, "cuda")
    expert.FEW_ROWS = expert.MANY_ROWS = (4096, 16)
    for label, k, p in (("k=50,p=1", 50, 1.0), ("k=V,p=1", V, 1.0), ("k=50,p=.9", 50, None), ("k=V,p=.9", V, None)):
        case = dict(made)
        case["top_k"] = torch.full_like(made["top_k"], k)
        if p is None:  # p = 0.9 moved to the middle of its keep-the-same-set interval, as the generator does
            case["top_p"] = inputs.snap_top_p(case["logits"], case["top_k"], torch.full_like(made["top_p"], 0.9))
        else:
            case["top_p"] = torch.full_like(made["top_p"], p)
        t = do_bench(lambda case=case: expert.run(**case), warmup=20, rep=200)
        print(f"B256 {label:>10}: {t:.4f} ms")


if __name__ == "__main__":
    main()
