"""What a compiled Triton kernel asks of a Hopper multiprocessor, found on a machine without a GPU.

Triton's wheel carries NVIDIA's `ptxas`, so a kernel lowered to PTX for sm_90 (TTGIR -> LLVM IR -> PTX, the
backend's own passes) can be assembled here exactly as on the GPU machine: `ptxas -v` reports the registers
a thread uses, the bytes spilled to local memory and the static shared memory. From those and the launch's
warps and Triton's dynamic shared memory, `resident_programs` gives how many programs an H100 or H200
multiprocessor holds at once, the way the CUDA occupancy calculator counts (registers allotted per warp in
units of 256, 64 K registers, 228 KB of shared memory less 1 KB reserved per program, 2,048 threads and 32
programs at most). `compile_reports` hooks the harness's interpreter compile check (which lowers every
launched kernel for sm_90 before the interpreter runs it) so that each launch under TRITON_INTERPRET=1 also
yields such a report. The register figures of docs/notes/performance-notebook.md came from it (tests/test_sm90_resources.py).

The Triton here may be newer than the GPU machine's (3.6 there): counts can differ by a few registers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256  # registers allotted per warp in units of 256 (8 per thread)
SHARED_PER_SM = 228 * 1024
SHARED_RESERVED_PER_PROGRAM = 1024
THREADS_PER_SM = 2048
PROGRAMS_PER_SM = 32


class Resources(NamedTuple):
    registers: int  # per thread
    spill_stores: int  # bytes per thread
    spill_loads: int
    static_shared: int  # bytes, besides Triton's dynamic shared memory


def ptxas_path() -> Path:
    """The ptxas Triton's NVIDIA backend itself uses for sm_90 (shipped in the wheel: no CUDA toolkit needed).
    Newer wheels carry two and pick `ptxas-blackwell` (the newer CUDA) from sm_90 on: the PTX they emit names a
    version the older one refuses."""
    import triton

    try:
        from triton.backends.nvidia.compiler import get_ptxas

        return Path(get_ptxas(90).path)
    except (ImportError, TypeError, AttributeError):
        pass
    folder = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    for name in ("ptxas-blackwell", "ptxas"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"no ptxas in {folder}: this Triton wheel has no NVIDIA backend")


def assemble(ptx: str, arch: str = "sm_90a") -> Resources:
    """`ptxas -v` on one kernel's PTX; the registers, spills and static shared memory it reports."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        done = subprocess.run(
            [str(ptxas_path()), "-v", f"--gpu-name={arch}", str(source), "-o", str(Path(folder) / "kernel.cubin")],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"ptxas failed: {done.stderr.strip()[-400:]}")
    log = done.stderr

    def number(pattern: str) -> int:
        found = re.search(pattern, log)
        return int(found.group(1)) if found else 0

    return Resources(
        registers=number(r"Used (\d+) registers"),
        spill_stores=number(r"(\d+) bytes spill stores"),
        spill_loads=number(r"(\d+) bytes spill loads"),
        static_shared=number(r"(\d+) bytes smem"),
    )


def resident_programs(registers: int, num_warps: int, shared_bytes: int) -> tuple[int, str]:
    """How many programs of `num_warps` warps, `registers` a thread and `shared_bytes` of shared memory a Hopper
    multiprocessor holds at once, and which limit sets it."""
    per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    limits = {
        "registers": (REGISTERS_PER_SM // per_warp) // num_warps,
        "shared memory": SHARED_PER_SM // (shared_bytes + SHARED_RESERVED_PER_PROGRAM),
        "threads": THREADS_PER_SM // (num_warps * 32),
        "programs": PROGRAMS_PER_SM,
    }
    which = min(limits, key=lambda name: limits[name])
    return limits[which], which


class KernelReport(NamedTuple):
    kernel: str
    num_warps: int
    num_stages: int
    loops: int  # scf.for in the TTGIR
    async_copies: int  # global -> shared copies the pipeliner issued
    waits: int  # waits on them
    plain_loads: int
    shared: int  # bytes: Triton's dynamic shared memory plus ptxas's static
    registers: int
    spilled: int  # bytes spilled and reloaded a thread
    programs: int  # resident on one SM
    limit: str

    def row(self) -> str:
        return (
            f"{self.kernel:22s} {self.num_warps:5d} {self.num_stages:6d} {self.loops:5d} {self.async_copies:6d} "
            f"{self.waits:5d} {self.plain_loads:5d} {self.shared / 1024:9.1f} {self.registers:9d} {self.spilled:6d} "
            f"{self.programs:4d} ({self.limit})"
        )


HEADER = "kernel                 warps stages loops copies waits loads shared KB registers spills programs an SM"


def compile_reports() -> list[KernelReport]:
    """From now on in this process (under TRITON_INTERPRET=1): every kernel launched is compiled for sm_90 and
    assembled before the interpreter runs it, once per specialisation, and its report appended to the list
    returned. Installs the harness's interpreter fixes (bfloat16 dots, bounds checks) as the harness does."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("the compile report runs kernels under the interpreter: set TRITON_INTERPRET=1")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from workbench.harness.solution import interpreter_compile, interpreter_fix

    compiler = interpreter_compile.KernelCompiler()
    backend = compiler.backend
    lower = backend.make_ttgir
    reports: list[KernelReport] = []

    def make_ttgir(module: Any, metadata: dict[str, Any], options: Any, capability: int) -> Any:
        ttgir = lower(module, metadata, options, capability)
        text = str(ttgir)
        name = text.split("tt.func public @", 1)[1].split("(", 1)[0]
        ops = ("scf.for", "ttg.async_copy_global_to_local", "ttg.async_wait", "= tt.load")
        loops, copies, waits, loads = (text.count(op) for op in ops)
        llir = backend.make_llir(ttgir, metadata, options, capability)
        used = assemble(backend.make_ptx(llir, metadata, options, capability))
        shared = metadata.get("shared", 0) + used.static_shared
        programs, limit = resident_programs(used.registers, options.num_warps, shared)
        spilled = used.spill_stores + used.spill_loads
        reports.append(
            KernelReport(name, options.num_warps, options.num_stages, loops, copies, waits, loads, shared,
                         used.registers, spilled, programs, limit)
        )  # fmt: skip
        return ttgir

    backend.make_ttgir = make_ttgir
    interpreter_compile._compiler = compiler  # the interpreter's compile check goes through this one
    interpreter_fix.install()
    return reports
