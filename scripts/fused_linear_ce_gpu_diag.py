"""fused_linear_ce on a GPU: is the expert wrong on some inputs, or only when called as the timed loop calls it?

(a) three fresh seeds one call each (synchronised), (b) two seeds' calls back to back without synchronising,
(c) one call on buffers refilled in place, each compared with the float64 oracle at llama3_8b_bt8192; (d) whether
make_inputs gives the same bytes twice in one process, on a side stream and in another process (the solution
process makes a timed call's inputs itself; the checker makes them again to check it). Run from the repository
root on the GPU machine: `python3 scripts/fused_linear_ce_gpu_diag.py` (`... digest SEED` prints one digest).
"""

import hashlib
import subprocess
import sys
from pathlib import Path

import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

TASK = Catalog(Path("tasks"), Path("guidance")).task("fused_linear_ce")
inp = import_file(TASK.file("inputs.py"), "i")
AXES = {w.name: w.axes for w in TASK.spec.workloads}["llama3_8b_bt8192"]


def digest(made: dict[str, torch.Tensor]) -> str:
    """A short hash of each made tensor's bytes."""
    parts = []
    for name, value in made.items():
        raw = value.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()
        parts.append(f"{name}:{hashlib.sha256(raw).hexdigest()[:12]}")
    return " ".join(parts)


def errs(rule, out, want) -> str:
    return " ".join(f"{n} {compare(o, w, rule.rule_for(n)).rel_err:.2e}" for n, o, w in zip(("loss", "dh", "dW"), out, want))


def main() -> None:
    ref = import_file(TASK.file("reference.py"), "r")
    ex = import_file(TASK.file("expert.py"), "e")
    rule = TASK.spec.tolerance
    for seed in (5, 6, 7):  # (a)
        d = inp.make_inputs(AXES, seed, "cuda")
        want = ref.exact(**d)
        out = ex.run(**d)
        torch.cuda.synchronize()
        print(f"seed {seed} single: {errs(rule, out, want)}", flush=True)
        del want, out
    made = [inp.make_inputs(AXES, s, "cuda") for s in (8, 9)]  # (b)
    outs = [ex.run(**d) for d in made for _ in range(2)]
    torch.cuda.synchronize()
    for i, d in enumerate(made):
        want = ref.exact(**d)
        for j in range(2):
            print(f"seed {8 + i} back-to-back call {j}: {errs(rule, outs[2 * i + j], want)}", flush=True)
        del want
    del made, outs
    d = inp.make_inputs(AXES, 10, "cuda")  # (c)
    fresh = inp.make_inputs(AXES, 11, "cuda")
    ex.run(**d)
    for k in d:
        d[k].copy_(fresh[k])
    out1 = ex.run(**d)
    torch.cuda.synchronize()
    print(f"refilled: {errs(rule, out1, ref.exact(**fresh))}", flush=True)
    del d, fresh, out1
    here = [digest(inp.make_inputs(AXES, 12, "cuda")) for _ in range(2)]  # (d)
    with torch.cuda.stream(torch.cuda.Stream()):
        side = digest(inp.make_inputs(AXES, 12, "cuda"))
    child = subprocess.run([sys.executable, __file__, "digest", "12"], capture_output=True, text=True, check=False)
    other = child.stdout.strip().splitlines()[-1:] or [child.stderr[-300:]]
    print(f"inputs: same twice {here[0] == here[1]}, side stream {side == here[0]}, other process {other[0] == here[0]}")
    print("  ", here[0], "|", side, "|", other[0])


if __name__ == "__main__":
    if sys.argv[1:2] == ["digest"]:
        print(digest(inp.make_inputs(AXES, int(sys.argv[2]), "cuda")))
    else:
        main()
