"""`d2k-workbench bench ...`: reproduce the figures in docs/performance.md."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.table import Table

from workbench.cli.common import EXIT_USAGE, fail, stdout

bench_app = typer.Typer(help="Benchmarks behind docs/performance.md.", no_args_is_help=True)


@bench_app.command("harness")
def bench_harness(
    repeats: Annotated[int, typer.Option("--repeats", min=2, help="Repeats per kernel and timer.")] = 5,
    device: Annotated[str, typer.Option("--device", help="cuda or cuda:N.")] = "cuda",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """Time Triton kernels of about 10 us, 100 us and some ms with the harness and with do_bench (GPU)."""
    import torch

    if not torch.cuda.is_available():
        raise fail("bench harness needs a CUDA GPU (none is available here)", EXIT_USAGE)
    from workbench.harness.bench import run_bench

    rows = run_bench(repeats, device)
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    table = Table(title=f"harness vs do_bench on {torch.cuda.get_device_name(device)}, {repeats} repeats")
    for column in ("kernel", "harness ms", "do_bench ms", "ratio", "harness spread", "do_bench spread", "reps"):
        table.add_column(column)
    for r in rows:
        table.add_row(str(r["kernel"]), f"{r['harness_ms']:.4f}", f"{r['do_bench_ms']:.4f}", f"{r['ratio']:.3f}",
                      f"{r['harness_spread']:.2%}", f"{r['do_bench_spread']:.2%}", f"{r['harness_reps']:.0f}")
    stdout().print(table)
