"""fused_linear_ce on a GPU: is the expert wrong on some inputs, or only when called as the timed loop calls it?

Three fresh seeds one call each (synchronised), two seeds' calls back to back without synchronising, and one call
on buffers refilled in place, each compared with the float64 oracle at llama3_8b_bt8192. Run from the repository
root on the GPU machine: `python3 scripts/fused_linear_ce_gpu_diag.py`.
"""

from pathlib import Path

import torch

from workbench.catalog import Catalog
from workbench.harness.checker.compare import compare
from workbench.harness.protocol.task_files import import_file

TASK = Catalog(Path("tasks"), Path("guidance")).task("fused_linear_ce")
ref = import_file(TASK.file("reference.py"), "r")
inp = import_file(TASK.file("inputs.py"), "i")
ex = import_file(TASK.file("expert.py"), "e")
rule = TASK.spec.tolerance
axes = {w.name: w.axes for w in TASK.spec.workloads}["llama3_8b_bt8192"]


def errs(out, want):
    return " ".join(f"{n} {compare(o, w, rule.rule_for(n)).rel_err:.2e}" for n, o, w in zip(("loss", "dh", "dW"), out, want))


# (a) one call per fresh seed, synchronised
for seed in (5, 6, 7):
    d = inp.make_inputs(axes, seed, "cuda")
    want = ref.exact(**d)
    out = ex.run(**d)
    torch.cuda.synchronize()
    print(f"seed {seed} single: {errs(out, want)}", flush=True)
    del want, out
# (b) back to back: inputs for 4 seeds made first, 4 calls without synchronising, then checked
made = [inp.make_inputs(axes, s, "cuda") for s in (8, 9)]
outs = [ex.run(**d) for d in made for _ in range(2)]
torch.cuda.synchronize()
for i, d in enumerate(made):
    want = ref.exact(**d)
    for j in range(2):
        print(f"seed {8 + i} back-to-back call {j}: {errs(outs[2 * i + j], want)}", flush=True)
    del want
# (c) same buffers refilled in place between calls (as the timed loop does)
d = inp.make_inputs(axes, 10, "cuda")
fresh = inp.make_inputs(axes, 11, "cuda")
out0 = ex.run(**d)
for k in d:
    d[k].copy_(fresh[k])
out1 = ex.run(**d)
torch.cuda.synchronize()
print(f"refilled: {errs(out1, ref.exact(**fresh))}", flush=True)
