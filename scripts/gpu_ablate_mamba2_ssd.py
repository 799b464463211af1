"""Where mamba2_ssd's scan spent its time before chunks of one block, and what those gave (2026-12-07): the
earlier expert's scan (chunks of several row blocks, loops over the blocks inside a chunk step) rebuilt with
switches that leave one stage out, each variant timed alone on the same inputs (CUDA events, L2 flushed,
median of 20) after the small kernels have written what the scan reads. A stage's cost is the full kernel's
time minus the time without it (its loads go with it: the compiler drops what nothing uses). One more variant
keeps every stage but reads a constant state in the outputs, cutting the chain from one chunk's state update
to the next chunk's readout: if that one is much faster, the serial chain (latency) bounds the kernel. Then
whole calls with chunks of one block (the candidate then, the expert's kernels now) at 1-3 pipeline stages,
with C B^T in fp32 or rounded to bfloat16, against the earlier whole call.

Run from the repository root on the GPU machine (the timer from scripts/gpu_timing.py):
    python3 scripts/gpu_ablate_mamba2_ssd.py [--registers] [WORKLOAD ...]     (default: every registered workload)
`--registers` times only the one-block call with the scan's registers capped (REGISTER_CAPS) against the expert.
Under TRITON_INTERPRET=1 on a CPU it runs the smoke workloads instead and checks that the earlier scan and the
one-block calls agree with the expert (a check of this script, not a timing); with `--ir` it compiles both
scans for sm_90 there and prints their pipelining and shared memory (ir_report).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import torch
import triton
import triton.language as tl

TASK = Path("tasks/mamba2_ssd")


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"m2_ablate_{name}", TASK / f"{name}.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {TASK / name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = load("expert")
_program_tile = ex._program_tile


class EarlierConfig(NamedTuple):
    """The expert's configuration before chunks of one block: a chunk of several blocks of block_m rows."""

    chunk: int
    block_m: int
    block_p: int
    num_warps: int
    num_stages: int = 2
    segment: int = 0


# The expert's configs before chunks of one block (2026-12-07): what the variants below measure.
EARLIER_CONFIGS = {
    (4, 4096, 64, 64, 1, 128): EarlierConfig(64, 64, 64, 4, 2),
    (1, 32768, 64, 64, 1, 128): EarlierConfig(128, 64, 64, 4, 2, 8192),
    (16, 1024, 64, 64, 1, 128): EarlierConfig(128, 64, 64, 4, 2),
}
EARLIER_CPU = EarlierConfig(32, 16, 16, 4, 1, 64)


@triton.jit
def _old_chunk_state_update(
    x_ptr, B_ptr, cs_ptr, dtt_ptr, head_steps, b, h, g, c0, n_blocks, cs_last, T, H, P, G, N, p, p_ok, n, n_ok,
    BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, N_PAD: tl.constexpr,
):  # fmt: skip
    """What a chunk adds to the state it hands on: sum_s exp(c_last - c_s) dt_s x_s^T B_s ([BLOCK_P, N], fp32)."""
    update = tl.zeros([BLOCK_P, N_PAD], dtype=tl.float32)
    for ki in range(n_blocks):
        t_cols = c0 + ki * BLOCK_M + tl.arange(0, BLOCK_M)
        k_ok = t_cols < T
        scale = tl.exp(cs_last - tl.load(cs_ptr + head_steps + t_cols)) * tl.load(dtt_ptr + head_steps + t_cols)
        x_cols = x_ptr + ((b * T + t_cols[None, :]).to(tl.int64) * H + h) * P + p[:, None]  # [BLOCK_P, BLOCK_M]: x^T
        xt = tl.load(x_cols, mask=k_ok[None, :] & p_ok[:, None], other=0.0)
        b_rows = B_ptr + ((b * T + t_cols[:, None]).to(tl.int64) * G + g) * N + n[None, :]
        bk = tl.load(b_rows, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        update = tl.dot((xt.to(tl.float32) * scale[None, :]).to(tl.bfloat16), bk, update)
    return update


@triton.jit
def _old_segment_state_kernel(
    x_ptr, B_ptr, cs_ptr, dtt_ptr, local_ptr, decay_ptr, T, T_pad, H, P, G, N, NSEG, NPB,
    CHUNK: tl.constexpr, SEG: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, N_PAD: tl.constexpr,
):  # fmt: skip
    """The earlier expert's first pass (chunks of several row blocks): one (segment, block of P, head, batch
    row) folds its segment's chunks into a state from zero (written fp32) and its total log decay."""
    seg, pb, h, b, g, p, p_ok, n, n_ok = _program_tile(H, P, G, N, NPB, BLOCK_P, N_PAD)
    head_steps = (b * H + h).to(tl.int64) * T_pad
    state = tl.zeros([BLOCK_P, N_PAD], dtype=tl.float32)
    total = 0.0
    for c in range(seg * (SEG // CHUNK), tl.cdiv(tl.minimum(seg * SEG + SEG, T), CHUNK)):
        c0 = c * CHUNK
        n_blocks = tl.cdiv(tl.minimum(CHUNK, T - c0), BLOCK_M)
        cs_last = tl.load(cs_ptr + head_steps + c0 + CHUNK - 1)
        update = _old_chunk_state_update(
            x_ptr, B_ptr, cs_ptr, dtt_ptr, head_steps, b, h, g, c0, n_blocks, cs_last, T, H, P, G, N, p, p_ok, n, n_ok,
            BLOCK_M, BLOCK_P, N_PAD,
        )  # fmt: skip
        state = state * tl.exp(cs_last) + update
        total += cs_last
    row = (b * H + h).to(tl.int64) * NSEG + seg
    tl.store(local_ptr + (row * P + p[:, None]) * N + n[None, :], state, mask=p_ok[:, None] & n_ok[None, :])
    if pb == 0:  # the same value in every block of P: one of them stores it
        tl.store(decay_ptr + row, total)


@triton.jit
def _scan_variant(
    x_ptr, B_ptr, C_ptr, D_ptr, cs_ptr, dtt_ptr, cb_ptr, local_ptr, decay_ptr, y_ptr, state_ptr,
    T, T_pad, H, P, G, N, NSEG, NPB,
    CHUNK: tl.constexpr, SEG: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, N_PAD: tl.constexpr,
    READOUT: tl.constexpr, QUAD: tl.constexpr, UPDATE: tl.constexpr, CHAIN: tl.constexpr,
):  # fmt: skip
    """The expert's scan with switches: READOUT (C . S_in per block), QUAD (the masked intra-chunk products),
    UPDATE (the chunk folded into the state), CHAIN (the readout reads the running state; off: a zero state)."""
    seg, _pb, h, b, g, p, p_ok, n, n_ok = _program_tile(H, P, G, N, NPB, BLOCK_P, N_PAD)
    skip = tl.load(D_ptr + h)
    head_steps = (b * H + h).to(tl.int64) * T_pad
    state = tl.zeros([BLOCK_P, N_PAD], dtype=tl.float32)
    for r in range(seg):
        row = (b * H + h).to(tl.int64) * NSEG + r
        local = tl.load(local_ptr + (row * P + p[:, None]) * N + n[None, :], mask=p_ok[:, None] & n_ok[None, :])
        state = state * tl.exp(tl.load(decay_ptr + row)) + local
    frozen = state.to(tl.bfloat16)
    for c in range(seg * (SEG // CHUNK), tl.cdiv(tl.minimum(seg * SEG + SEG, T), CHUNK)):
        c0 = c * CHUNK
        n_blocks = tl.cdiv(tl.minimum(CHUNK, T - c0), BLOCK_M)
        cb_chunk = cb_ptr + ((b * G + g) * tl.cdiv(T, CHUNK) + c).to(tl.int64) * CHUNK * CHUNK
        if CHAIN:
            state_in = tl.trans(state).to(tl.bfloat16)
        else:
            state_in = tl.trans(frozen)
        for mi in range(n_blocks):
            rows = mi * BLOCK_M + tl.arange(0, BLOCK_M)
            t_rows = c0 + rows
            r_ok = t_rows < T
            cs_m = tl.load(cs_ptr + head_steps + t_rows)
            acc = tl.zeros([BLOCK_M, BLOCK_P], dtype=tl.float32)
            if READOUT:
                c_rows = C_ptr + ((b * T + t_rows[:, None]).to(tl.int64) * G + g) * N + n[None, :]
                cm = tl.load(c_rows, mask=r_ok[:, None] & n_ok[None, :], other=0.0)
                acc = tl.dot(cm, state_in) * tl.exp(cs_m)[:, None]
            if QUAD:
                for ki in range(mi + 1):
                    cols = ki * BLOCK_M + tl.arange(0, BLOCK_M)
                    t_cols = c0 + cols
                    cs_k = tl.load(cs_ptr + head_steps + t_cols)
                    dt_k = tl.load(dtt_ptr + head_steps + t_cols)
                    cb = tl.load(cb_chunk + rows[:, None] * CHUNK + cols[None, :])
                    exponent = tl.where(rows[:, None] >= cols[None, :], cs_m[:, None] - cs_k[None, :], float("-inf"))
                    w = cb * tl.exp(exponent) * dt_k[None, :]
                    x_rows = x_ptr + ((b * T + t_cols[:, None]).to(tl.int64) * H + h) * P + p[None, :]
                    xk = tl.load(x_rows, mask=(t_cols < T)[:, None] & p_ok[None, :], other=0.0)
                    acc = tl.dot(w.to(tl.bfloat16), xk, acc)
            where_y = ((b * T + t_rows[:, None]).to(tl.int64) * H + h) * P + p[None, :]
            xm = tl.load(x_ptr + where_y, mask=r_ok[:, None] & p_ok[None, :], other=0.0)
            acc += skip * xm.to(tl.float32)
            tl.store(y_ptr + where_y, acc.to(tl.bfloat16), mask=r_ok[:, None] & p_ok[None, :])
        if UPDATE:
            cs_last = tl.load(cs_ptr + head_steps + c0 + CHUNK - 1)
            update = _old_chunk_state_update(
                x_ptr, B_ptr, cs_ptr, dtt_ptr, head_steps, b, h, g, c0, n_blocks, cs_last, T, H, P, G, N, p, p_ok, n,
                n_ok, BLOCK_M, BLOCK_P, N_PAD,
            )  # fmt: skip
            state = state * tl.exp(cs_last) + update
    if seg == NSEG - 1:
        out = state_ptr + ((b * H + h) * P + p[:, None]).to(tl.int64) * N + n[None, :]
        tl.store(out, state, mask=p_ok[:, None] & n_ok[None, :])


VARIANTS: dict[str, dict[str, bool]] = {
    "full (the earlier expert's scan)": dict(READOUT=True, QUAD=True, UPDATE=True, CHAIN=True),
    "no chain (readout of a fixed state)": dict(READOUT=True, QUAD=True, UPDATE=True, CHAIN=False),
    "without the readout C . S": dict(READOUT=False, QUAD=True, UPDATE=True, CHAIN=True),
    "without the quadratic part": dict(READOUT=True, QUAD=False, UPDATE=True, CHAIN=True),
    "without the state update": dict(READOUT=True, QUAD=True, UPDATE=False, CHAIN=True),
    "only the skip D x (loads x, stores y)": dict(READOUT=False, QUAD=False, UPDATE=False, CHAIN=True),
}


def prepared(
    made: dict[str, torch.Tensor], config: Any = None, one_block: bool = False
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The expert's two small kernels and a first pass for segments run once (with the earlier expert's config
    and first pass, or `config`; the one-block first pass where `one_block`); returns (grid, scan args, scan
    constexprs and launch options)."""
    x, dt, A, Bm, Cm, D = (made[k] for k in ("x", "dt", "A", "Bm", "Cm", "D"))
    batch, T, H, P = x.shape
    G, N = Bm.shape[2], Bm.shape[3]
    cfg = config or (EARLIER_CONFIGS[(batch, T, H, P, G, N)] if x.device.type == "cuda" else EARLIER_CPU)
    L = cfg.chunk
    chunks = triton.cdiv(T, L)
    T_pad = chunks * L
    seg = cfg.segment if 0 < cfg.segment < T else T_pad
    nseg, npb = triton.cdiv(T, seg), triton.cdiv(P, cfg.block_p)
    cs = torch.empty((batch, H, T_pad), dtype=torch.float32, device=x.device)
    dtt = torch.empty_like(cs)
    cb = torch.empty((batch, G, chunks, L, L), dtype=torch.float32, device=x.device)
    y = torch.empty_like(x)
    state = torch.empty((batch, H, P, N), dtype=torch.float32, device=x.device)
    block_h, n_pad = min(triton.next_power_of_2(H), 16), triton.next_power_of_2(N)
    ex._chunk_cumsum_kernel[(chunks, triton.cdiv(H, block_h), batch)](dt, A, cs, dtt, T, T_pad, H, CHUNK=L, BLOCK_H=block_h)
    ex._chunk_cb_kernel[(chunks, G, batch)](
        Bm, Cm, cb, T, G, N, CHUNK=L, BLOCK_M=cfg.block_m, N_PAD=n_pad, num_warps=cfg.num_warps
    )  # fmt: skip
    local = torch.empty((batch, H, nseg, P, N) if nseg > 1 else (1,), dtype=torch.float32, device=x.device)
    decays = torch.empty((batch, H, nseg) if nseg > 1 else (1,), dtype=torch.float32, device=x.device)
    grid = (nseg * npb, H, batch)
    if nseg > 1:
        first_pass = dict(CHUNK=L, SEG=seg, BLOCK_P=cfg.block_p, N_PAD=n_pad, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        if one_block:  # the expert's first pass now
            ex._segment_state_kernel[grid](x, Bm, cs, dtt, local, decays, T, T_pad, H, P, G, N, nseg, npb, **first_pass)
        else:
            _old_segment_state_kernel[grid](
                x, Bm, cs, dtt, local, decays, T, T_pad, H, P, G, N, nseg, npb, BLOCK_M=cfg.block_m, **first_pass
            )  # fmt: skip
    args = (x, Bm, Cm, D, cs, dtt, cb, local, decays, y, state, T, T_pad, H, P, G, N, nseg, npb)
    meta: dict[str, Any] = dict(CHUNK=L, SEG=seg, BLOCK_M=cfg.block_m, BLOCK_P=cfg.block_p, N_PAD=n_pad)
    if x.device.type == "cuda":
        meta |= dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    return grid, args, meta


def earlier_call(made: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole call as the expert made it before chunks of one block (its config, its first pass, its scan)."""
    grid, args, meta = prepared(made)
    _scan_variant[grid](*args, **meta, **VARIANTS["full (the earlier expert's scan)"])
    return args[9], args[10]


def candidate_call(
    made: dict[str, torch.Tensor], config: Any, half_cb: bool, maxnreg: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole call with chunks of one block (the candidate measured on 2026-12-07, since then the expert's own
    `_segment_state_kernel` and `_ssd_scan_kernel`) at `config`, C B^T rounded to bfloat16 first where `half_cb`,
    the scan's registers a thread capped at `maxnreg` where given."""
    grid, args, meta = prepared(made, config, one_block=True)
    if half_cb:
        args = args[:6] + (args[6].to(torch.bfloat16),) + args[7:]
    if maxnreg:
        meta["maxnreg"] = maxnreg
    ex._ssd_scan_kernel[grid](*args, **{k: v for k, v in meta.items() if k != "BLOCK_M"})
    return args[9], args[10]


def rel(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.double() - want.double()).norm() / want.double().norm())


def ir_report() -> None:
    """Under TRITON_INTERPRET=1 (no GPU needed): the earlier expert's scan (`_scan_variant`, every stage on) at
    its b4_t4096 config (chunks of one 64-row block, 64 columns of P, 4 warps) at 1-3 pipeline stages, and the
    expert's scan now (`_ssd_scan_kernel`, chunks of one block) at the same and at candidate tiles (32 columns
    of P, 8 warps, registers capped), compiled for sm_90 on a short sequence. Per kernel: the TTGIR's loops,
    asynchronous copies and waits and plain loads; the shared memory; and from `ptxas -v` on its PTX the
    registers a thread, the bytes spilled, and the programs an H100 or H200 multiprocessor holds at once with
    the limit that sets it (scripts/sm90_resources.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sm90_resources import HEADER, compile_reports

    reports = compile_reports()
    made = load("inputs").make_inputs({"B": 1, "T": 192, "H": 2, "P": 64, "G": 1, "N": 128}, 3, "cpu")

    def scan_row() -> str:
        return next(r for r in reversed(reports) if "scan" in r.kernel).row()

    print(HEADER)
    for stages in (1, 2, 3):
        grid, args, meta = prepared(made, EarlierConfig(64, 64, 64, 4, stages))
        meta |= dict(num_warps=4, num_stages=stages)
        _scan_variant[grid](*args, **meta, **VARIANTS["full (the earlier expert's scan)"])  # the earlier expert
        print(scan_row())
    candidates = [(64, 4, 1, None), (64, 4, 2, None), (64, 4, 3, None), (32, 4, 1, None), (32, 4, 2, None)]
    candidates += [(64, 8, 1, None), (64, 8, 2, None), (64, 4, 1, 168), (64, 4, 1, 128), (32, 4, 1, 168), (32, 4, 1, 128)]
    for block_p, warps, stages, maxnreg in candidates:  # maxnreg: registers a thread capped (3 or 4 programs an SM)
        grid, args, meta = prepared(made, EarlierConfig(64, 64, block_p, warps, stages))
        meta |= dict(num_warps=warps, num_stages=stages) | ({"maxnreg": maxnreg} if maxnreg else {})
        ex._ssd_scan_kernel[grid](*args, **{k: v for k, v in meta.items() if k != "BLOCK_M"})  # the expert now
        print(f"{scan_row()}  block_p {block_p}" + (f", maxnreg {maxnreg}" if maxnreg else ""))


# (block_p, maxnreg) at 1 stage: the scan holds 255 registers a thread uncapped, 2 programs an SM; 168 gives 3
# (216-480 bytes spilled), 128 gives 4 (588-1116 bytes), by `--ir` on the CPU (scripts/sm90_resources.py)
REGISTER_CAPS = ((64, None), (32, None), (64, 168), (32, 168), (64, 128), (32, 128))


def register_caps(
    name: str, made: dict[str, torch.Tensor], want: tuple[torch.Tensor, torch.Tensor], one_block: Any, interpreted: bool
) -> None:
    """The one-block call at 1 stage with the scan's registers capped (more programs an SM, some spilled), each
    against the expert's own whole call: whether latency hiding from more resident programs pays for the spills.
    Under the interpreter only the agreement with the expert is checked (maxnreg compiles, does not run there)."""
    if not interpreted:
        from gpu_timing import median_ms

        now = median_ms(lambda: ex.run(**made))
        print(f"\n{name}: the expert's whole call {now:.4f} ms")
    for block_p, maxnreg in REGISTER_CAPS:
        config = one_block._replace(block_p=block_p, num_stages=1)
        y, state = candidate_call(made, config, False, maxnreg)
        errors = rel(y, want[0]), rel(state, want[1])
        label = f"block_p {block_p}, maxnreg {maxnreg or 'none'}: y {errors[0]:.1e}, state {errors[1]:.1e} vs the expert"
        if max(errors) > 1e-2:
            raise SystemExit(f"{name}: {label}: does not agree")
        if interpreted:
            print(f"{name}: {label}")
            continue
        ms = median_ms(lambda config=config, maxnreg=maxnreg: candidate_call(made, config, False, maxnreg))
        print(f"   {ms:8.4f} ms  {now / ms:5.2f}x the expert   {label}")


def main() -> None:
    spec = tomllib.loads((TASK / "task.toml").read_text())
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    workloads = spec["smoke_workloads"] if interpreted else spec["workloads"]
    wanted = sys.argv[1:]
    registers = "--registers" in wanted
    wanted = [w for w in wanted if w != "--registers"]
    if wanted == ["--ir"]:
        ir_report()
        return
    unknown = sorted(set(wanted) - {w["name"] for w in workloads})
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; registered: {[w['name'] for w in workloads]}")
    inputs = load("inputs")
    device = "cpu" if interpreted else "cuda"
    if interpreted:  # the harness's interpreter fixes (a bfloat16 tl.dot multiplies raw bits without them)
        sys.path.insert(0, str(Path.cwd()))
        from workbench.harness.solution import interpreter_fix

        interpreter_fix.install()
    else:
        sys.path.insert(0, str(Path(__file__).parent))
        print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__)
    for workload in workloads:
        if wanted and workload["name"] not in wanted:
            continue
        made = inputs.make_inputs(workload["axes"], 11, device)
        want_y, want_state = ex.run(**made)
        axes = workload["axes"]
        key = (axes["B"], axes["T"], axes["H"], axes["P"], axes["G"], axes["N"])
        base = EARLIER_CONFIGS[key] if not interpreted else EARLIER_CPU
        one_block = base._replace(chunk=base.block_m)
        if registers:
            register_caps(workload["name"], made, (want_y, want_state), one_block, interpreted)
            continue
        if interpreted:  # the earlier expert (the full variant) and the candidate agree with the expert
            grid, args, meta = prepared(made)
            _scan_variant[grid](*args, **meta, **VARIANTS["full (the earlier expert's scan)"])
            errors = rel(args[9], want_y), rel(args[10], want_state)
            print(f"{workload['name']}: the earlier expert against the expert: y {errors[0]:.2e}, state {errors[1]:.2e}")
            if max(errors) > 1e-2:
                raise SystemExit("the earlier expert's scan does not agree with the expert")
            for flags in VARIANTS.values():  # each variant at least runs
                _scan_variant[grid](*args, **meta, **flags)
            for half in (False, True):
                y, state = candidate_call(made, one_block, half)
                errors = rel(y, want_y), rel(state, want_state)
                gap = f"y {errors[0]:.2e}, state {errors[1]:.2e}"
                print(f"{workload['name']}: one-block candidate (bf16 cb {half}) against the expert: {gap}")
                if max(errors) > 1e-2:
                    raise SystemExit("the one-block candidate does not agree with the expert")
            continue
        from gpu_timing import median_ms

        grid, args, meta = prepared(made)
        whole = median_ms(lambda made=made: earlier_call(made))
        now = median_ms(lambda made=made: ex.run(**made))
        print(f"\n{workload['name']} {axes}: the earlier expert's whole call {whole:.4f} ms ({base})")
        print(f"   the expert's whole call now {now:.4f} ms ({whole / now:.2f}x)")
        full = None
        for name, flags in VARIANTS.items():
            ms = median_ms(lambda flags=flags: _scan_variant[grid](*args, **meta, **flags))
            full = ms if full is None else full
            print(f"   {ms:8.4f} ms  {100 * ms / full:5.1f}% of the full scan   {name}")
        del args
        for stages in (1, 2, 3):
            for half in (False, True):
                config = one_block._replace(num_stages=stages)
                try:
                    y, state = candidate_call(made, config, half)
                    errors = rel(y, want_y), rel(state, want_state)
                    ms = median_ms(lambda config=config, half=half: candidate_call(made, config, half))
                except Exception as error:  # e.g. out of shared memory at a deeper pipeline
                    print(f"   one-block candidate, stages {stages}, bf16 cb {half}: {type(error).__name__}: {str(error)[:100]}")
                    continue
                label = f"one-block candidate, chunk {config.chunk}, stages {stages}, bf16 cb {half}: whole call"
                gap = f"vs the expert now: y {errors[0]:.1e}, state {errors[1]:.1e}"
                print(f"   {ms:8.4f} ms  {whole / ms:5.2f}x the earlier call   {label} ({gap})")
        del made
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
