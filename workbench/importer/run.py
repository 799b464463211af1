"""Import a pack: probe each problem in the sandbox, infer its task, write its folder, count what was skipped."""

from __future__ import annotations

import math
import os
import queue
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.catalog.errors import CatalogError
from workbench.catalog.imported import RECORD_FILE, ImportRecord, record_toml
from workbench.catalog.loader import load_task
from workbench.harness.host.probe import ProbeProcess
from workbench.harness.protocol.peer_source import free_sizes
from workbench.harness.protocol.probe import Observation, ProbeRequest, ProbeResult
from workbench.importer import analyze, checking, reasons, render
from workbench.importer.analyze import Unsupported
from workbench.importer.checking import CheckProcess
from workbench.importer.infer import Inferred, Observed, infer
from workbench.importer.packs import PeerProblem, repo_commit

PACK_NAMES = {"kernelbench": "KernelBench", "gpumode": "GPU MODE reference-kernels"}
KERNELBENCH_TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}  # KernelBench's per-precision atol = rtol
CPU_BUDGET = 1 << 17  # elements of a smoke workload's inputs (and weights): the interpreter's scale
SMOKE_TESTS = 2  # GPU MODE: test shapes kept as smoke workloads
OWN_SIZES_BUDGET = 8 * CPU_BUDGET  # KernelBench: a problem no reduced sizes run keeps its own sizes up to this
OUTPUT_BUDGET = 8 * CPU_BUDGET  # KernelBench: elements of a smoke workload's outputs
OWN_SIZES_TIMEOUT_S = 60.0  # and is probed at them for at most this long


@dataclass(frozen=True)
class ImportOptions:
    into: Path
    precision: str = "fp32"
    atol: float | None = None
    rtol: float | None = None
    timeout_s: float = 120.0
    budget: int = CPU_BUDGET
    jobs: int = 1  # problems probed at once, each in a sandboxed probe process of its own


@dataclass(frozen=True)
class Outcome:
    """One problem: imported as `task_id`, or skipped with a reason code and its detail."""

    problem: str
    task_id: str
    imported: bool
    reason: str | None
    detail: str
    seconds: float


@dataclass
class ImportSummary:
    pack: str
    into: Path
    commit: str | None
    sandbox: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def imported(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.imported]

    @property
    def skipped(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.imported]

    def reasons(self) -> Counter[str]:
        return Counter(reasons.text(o.reason) for o in self.skipped)

    def as_json(self) -> dict[str, Any]:
        """The import as data: where, the commit, the time, the counts by reason, every problem's outcome."""
        return {
            "pack": self.pack,
            "into": str(self.into),
            "commit": self.commit,
            "seconds": round(self.seconds, 1),
            "problems": len(self.outcomes),
            "imported": len(self.imported),
            "skipped": dict(self.reasons().most_common()),
            "outcomes": [
                {
                    "problem": o.problem,
                    "task": o.task_id if o.imported else None,
                    "reason": o.reason,
                    "reason_text": reasons.text(o.reason) if o.reason else None,
                    "detail": o.detail,
                    "seconds": round(o.seconds, 2),
                }
                for o in self.outcomes
            ],
        }


Progress = Callable[[int, int, str, Outcome | None], None]


def default_jobs() -> int:
    """Problems probed at once by default: half the machine's cores (each probe runs the peer's code on the
    CPU at its registered sizes), at least 1 and at most 8."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def import_pack(
    pack: str, root: Path, problems: list[PeerProblem], options: ImportOptions, progress: Progress | None = None
) -> ImportSummary:
    """Import every problem into `options.into`, `options.jobs` at a time; the outcomes in the problems' order.
    Each job has its probe and its task-check process (which tries each written task's input domains).

    `progress(done, total, name, outcome)`: with outcome None when a problem starts (done = problems finished
    so far), then with its outcome when it ends (done counting it). Called from one thread at a time."""
    started = time.perf_counter()
    summary = ImportSummary(pack=pack, into=options.into, commit=repo_commit(root))
    options.into.mkdir(parents=True, exist_ok=True)
    jobs = max(1, min(options.jobs, len(problems)))
    scratch = Path(tempfile.mkdtemp(prefix="d2k-import-"))
    pool_of = [Workers(ProbeProcess(hidden=[options.into]), CheckProcess([scratch]), scratch) for _ in range(jobs)]
    idle: queue.SimpleQueue[Workers] = queue.SimpleQueue()
    for workers in pool_of:
        idle.put(workers)
    lock = threading.Lock()
    done = [0]

    def one(problem: PeerProblem) -> Outcome:
        workers = idle.get()
        try:
            with lock:
                if progress:
                    progress(done[0], len(problems), problem.name, None)
            outcome = import_problem(problem, summary.commit, options, workers)
            with lock:
                done[0] += 1
                if progress:
                    progress(done[0], len(problems), problem.name, outcome)
            return outcome
        finally:
            idle.put(workers)

    try:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="probe") as pool:
            summary.outcomes = list(pool.map(one, problems))
    finally:
        for workers in pool_of:
            workers.close()
        shutil.rmtree(scratch, ignore_errors=True)
    summary.sandbox = next((w.probe.sandbox_line for w in pool_of if w.probe.sandbox_line), "")
    summary.seconds = time.perf_counter() - started
    return summary


@dataclass
class Workers:
    """One import job's processes: the probe (the peer's code) and the task check (the written task's code,
    which sees `scratch` only), and the scratch folder tasks are staged in before they are tried."""

    probe: ProbeProcess
    check: CheckProcess
    scratch: Path

    def close(self) -> None:
        self.probe.close()
        self.check.close()


def import_problem(problem: PeerProblem, commit: str | None, options: ImportOptions, workers: Workers) -> Outcome:
    started = time.perf_counter()
    probe = workers.probe

    def skipped(reason: str, detail: str) -> Outcome:
        return Outcome(problem.name, problem.task_id, False, reason, detail, time.perf_counter() - started)

    folder = options.into / problem.task_id
    if folder.exists() and not (folder / RECORD_FILE).is_file():
        return skipped("in_the_way", f"{folder} exists and is not an imported task; move it or import elsewhere")
    if problem.problem is not None:
        return skipped("does_not_load", problem.problem)
    try:
        request, context = _request(problem, options)
        result = probe.probe(request)
        if not result.ok and result.skip == "cpu_failure" and problem.pack == "kernelbench":
            result = _at_own_sizes(problem, request, result, probe, context)
        elif result.ok and problem.pack == "kernelbench":
            result = _smaller_outputs(request, result, probe)
        if not result.ok:
            return skipped(*reasons.refine(result.skip or "crashed", result.detail, problem.sources))
        files = _task_files(problem, commit, options, result, context)
        staged = workers.scratch / problem.task_id
        _write(staged, files)
        choices, failure = checking.domain_of(workers.check, staged, options.timeout_s)
        shutil.rmtree(staged, ignore_errors=True)
        context["domain"] = _domain(context["domain"], choices, failure)
        files = _task_files(problem, commit, options, result, context)
    except Unsupported as exc:
        return skipped(exc.reason, reasons.quote_lines(exc.detail, problem.sources))
    _write(folder, files)
    return Outcome(problem.name, problem.task_id, True, None, "", time.perf_counter() - started)


def _at_own_sizes(
    problem: PeerProblem, request: ProbeRequest, failed: ProbeResult, probe: ProbeProcess, context: dict[str, Any]
) -> ProbeResult:
    """A KernelBench problem that no reduced sizes run: probed again at its own sizes. Where it runs there and
    they fit OWN_SIZES_BUDGET, those sizes become its smoke workload; where it fails there too, that failure is
    the reason; where they are too large to run, the reason is the reduction (`reduced_sizes`)."""
    if any(marker in failed.detail for marker in ("can't allocate memory", "out of memory")):
        return failed  # the problem's own sizes failed already: the probe tries them first
    own = request.model_copy(
        update={
            "smoke_candidates": request.registered,
            "perturbations": [],
            "budget": OWN_SIZES_BUDGET,
            "timeout_s": min(request.timeout_s, OWN_SIZES_TIMEOUT_S),
        }
    )
    result = probe.probe(own)
    reduced = reasons.quote_lines(failed.detail, problem.sources)
    if result.ok:
        elements = result.smoke[0].elements + _output_elements(result.smoke[0]) if result.smoke else 0
        if elements <= OWN_SIZES_BUDGET:
            context["own_sizes_note"] = reduced
            return result
        raise Unsupported(
            "reduced_sizes",
            f"no reduced sizes run ({reduced}); its own sizes run but hold {elements:,} elements of inputs, weights and "
            f"outputs, more than the CPU's {OWN_SIZES_BUDGET:,}",
        )
    if (
        result.skip in ("too_large", "timeout", "crashed")
        or reasons.refine(result.skip or "", result.detail, {})[0] == "too_large"
    ):
        what = "ran past its time" if result.skip == "timeout" else "ran out of memory"
        raise Unsupported("reduced_sizes", f"no reduced sizes run ({reduced}); at its own sizes the probe {what}")
    return result  # it fails at its own sizes too: that failure is the reason


def _output_elements(observation: Observation) -> int:
    return sum(math.prod(o.shape) for o in observation.outputs)


def _smaller_outputs(request: ProbeRequest, result: ProbeResult, probe: ProbeProcess) -> ProbeResult:
    """A KernelBench problem whose smoke outputs exceed OUTPUT_BUDGET (the probe's budget counts inputs and
    weights: a tall-skinny product's output is their square) probed again at the candidates after the one it
    chose, until they fit or none is left (then the smallest found)."""
    candidates = list(request.smoke_candidates)
    while result.ok and result.smoke and _output_elements(result.smoke[0]) > OUTPUT_BUDGET:
        chosen = {k: v for k, v in result.smoke[0].sizes.items() if k in candidates[0]}
        later = candidates[candidates.index(chosen) + 1 :] if chosen in candidates else []
        if not later:
            break
        again = probe.probe(request.model_copy(update={"smoke_candidates": later}))
        if not again.ok or _output_elements(again.smoke[0]) >= _output_elements(result.smoke[0]):
            break
        candidates, result = later, again
    return result


def _request(problem: PeerProblem, options: ImportOptions) -> tuple[ProbeRequest, dict[str, Any]]:
    common = {"sources": problem.sources, "main": problem.main, "budget": options.budget, "timeout_s": options.timeout_s}
    if problem.pack == "kernelbench":
        analyze.parse(problem.sources["problem"], "problem.py")  # a file that does not parse is refused as it is
        text, named = analyze.named_tuple_sizes(problem.sources["problem"])
        sources = {**problem.sources, "problem": text}
        common["sources"] = sources
        tree = analyze.parse(text, "problem.py")
        sizes = analyze.builder_sizes(tree)
        candidates = analyze.smoke_candidates(sizes)
        scaled = sorted(candidates[0])
        registered = {name: sizes[name] for name in scaled}
        perturbations = [{**registered, name: max(1, value // 2)} for name, value in registered.items()]
        request = ProbeRequest(
            kind="kernelbench",
            registered=[registered],
            smoke_candidates=candidates,
            perturbations=perturbations,
            precision=options.precision,
            **common,
        )
        return request, {"tree": tree, "registered": registered, "sources": sources, "named_tuples": named}
    tree = analyze.parse(problem.sources["reference"], "reference.py")
    ranks = analyze.multi_rank(problem.manifest, tree)
    if ranks is not None:
        raise Unsupported("multi_rank", ranks)
    tolerance = analyze.gpumode_tolerance(problem.sources)
    benchmarks = analyze.gpumode_shapes(problem.manifest, "benchmarks")
    tests = sorted(analyze.gpumode_shapes(problem.manifest, "tests"), key=analyze.elements_hint)
    keys = set().union(*(set(s) for s in [*benchmarks, *tests]))
    for key in keys:
        values = {repr(s.get(key)) for s in [*benchmarks, *tests]}
        kinds = {type(s.get(key)) for s in [*benchmarks, *tests]}
        if kinds != {int} and len(values) > 1:
            raise Unsupported("unsupported_inputs", f"the shape parameter {key!r} is not an integer and changes between shapes")
    perturbations = [{**tests[0], key: value * 2} for key, value in tests[0].items() if type(value) is int]
    request = ProbeRequest(
        kind="gpumode",
        registered=benchmarks,
        smoke_candidates=tests,
        smoke_count=SMOKE_TESTS,
        perturbations=perturbations,
        **common,
    )
    return request, {"tree": tree, "tolerance": tolerance, "benchmarks": benchmarks, "sources": problem.sources}


def _workload_name(prefix: str, sizes: dict[str, Any], varying: list[str], index: int) -> str:
    """`bench_m128_n128_k128`, or `bench3` where the sizes would make a long name."""
    text = "_".join(f"{k}{sizes[k]}" for k in varying if k in sizes)
    name = analyze.identifier(f"{prefix}_{text}" if text else f"{prefix}{index}")
    return name if len(name) <= 40 else f"{prefix}{index}"


def _task_files(
    problem: PeerProblem, commit: str | None, options: ImportOptions, result: ProbeResult, context: dict[str, Any]
) -> dict[str, str]:
    pack = problem.pack
    observations = [*result.registered, *result.smoke]
    all_sizes = [o.sizes for o in observations]
    if pack == "kernelbench":
        all_sizes[0] = context["registered"]
    keys = sorted(set().union(*all_sizes))
    varying = [k for k in keys if len({repr(s.get(k)) for s in all_sizes}) > 1]
    observed: list[Observed] = []
    names: set[str] = set()
    for index, (observation, sizes) in enumerate(zip(observations, all_sizes, strict=True)):
        smoke = index >= len(result.registered)
        if pack == "kernelbench":  # one registered workload (the problem's sizes) and one smoke workload
            name = "smoke" if smoke else "peer"
        else:
            name = _workload_name("smoke" if smoke else "bench", sizes, varying, index)
        while name in names:
            name += "_b"
        names.add(name)
        observed.append(Observed(name, smoke, {k: v for k, v in sizes.items() if type(v) is int}, observation))
    for extra in result.extra:
        sizes = {k: v for k, v in extra.sizes.items() if type(v) is int}
        if pack == "kernelbench":
            sizes = {**context["registered"], **sizes}
        observed.append(Observed("", False, sizes, extra, emit=False))
    if pack == "kernelbench":
        arg_names = analyze.forward_names(context["tree"])
    else:
        arg_names = analyze.data_names(context["tree"])
    inferred = infer(observed, arg_names, kind=pack, mutated=result.mutated_buffers, precision=options.precision)
    spec = dict(inferred.runtime)
    if pack == "gpumode":
        first = result.registered[0]
        fixed = {k: v for k, v in context["benchmarks"][0].items() if k not in varying}
        spec = {
            "data": spec["inputs"],
            "single": first.single,
            "state": first.alias,
            "fixed": fixed,
            "axis_params": varying,
            "size_args": spec["size_args"],
        }
        atol, rtol, how = context["tolerance"]
        tolerance = (atol, rtol, f"the peer's check_implementation ({how}: atol {atol:g}, rtol {rtol:g})")
    else:
        value = KERNELBENCH_TOLERANCE[options.precision]
        tolerance = (value, value, f"KernelBench's tolerance for {options.precision} (torch.allclose, atol = rtol = {value:g})")
    if options.atol is not None or options.rtol is not None:
        tolerance = (
            options.atol if options.atol is not None else tolerance[0],
            options.rtol if options.rtol is not None else tolerance[1],
            f"set at import (--atol/--rtol); the peer's: {tolerance[2]}",
        )
    header = render.Header(problem.task_id, _title(problem), PACK_NAMES[pack], problem.rel_path, commit)
    category = f"kernelbench-level{problem.level}" if pack == "kernelbench" else "gpumode"
    doc = _run_doc(pack, inferred, spec)
    read = spec["inputs"] if pack == "kernelbench" else [n for i, n in enumerate(spec["data"]) if i != spec["state"]]
    if "domain" not in context:  # before the trial: every floating input the problem reads, at the peer's values
        floating = [
            e["name"] for e in inferred.inputs if e["kind"] == "tensor" and str(e["dtype"]).startswith(("float", "bfloat"))
        ]
        context["domain"] = {name: Domain("peer", "not tried yet") for name in read if name in floating}
    domain: dict[str, Domain] = context["domain"]
    files = {
        "task.toml": render.task_toml(header, category, inferred, tolerance, render.REQUIREMENTS),
        "reference.py": render.reference_py(header, pack, context["sources"], spec, inferred),
        "inputs.py": render.inputs_py(header, pack, context["sources"], spec, {n: d.level for n, d in domain.items()}),
        "template.py": render.template_py(header, inferred, doc),
        "description.md": _description(problem, header, inferred, doc, tolerance, observed, context),
        RECORD_FILE: record_toml(
            ImportRecord(
                pack=pack,
                source=problem.rel_path,
                problem=problem.name,
                commit=commit,
                level=problem.level,
                precision=options.precision if pack == "kernelbench" else None,
                domain={n: d.level for n, d in domain.items()},
            )
        ),
    }
    _check(problem.task_id, files)
    return files


@dataclass(frozen=True)
class Domain:
    """An input's level (workbench/harness/probe/peer_domain.py) and why no wider one was kept."""

    level: str
    why: str = ""


def _domain(candidates: dict[str, Domain], choices: dict[str, checking.DomainChoice], failure: str) -> dict[str, Domain]:
    """The trial's levels for the inputs it was asked about; where it failed, the peer's values and why."""
    if failure:
        return {name: Domain("peer", f"the trial of wider inputs failed: {failure}") for name in candidates}
    found = {name: Domain(c.level, c.why) for name, c in choices.items() if name in candidates}
    return {name: found.get(name, Domain("peer", "the trial did not report this input")) for name in candidates}


def _title(problem: PeerProblem) -> str:
    if problem.pack == "kernelbench":
        stem = Path(problem.name).stem
        number, _, rest = stem.partition("_")
        return f"KernelBench L{problem.level} #{number}: {rest.replace('_', ' ').strip()}"
    return f"GPU MODE {problem.name}"


def _run_doc(pack: str, inferred: Inferred, spec: dict[str, Any]) -> str:
    args = ", ".join(str(e["name"]) for e in inferred.inputs)
    if pack == "kernelbench":
        inputs = ", ".join(spec["inputs"])
        weights = "; ".join(f"``{name}`` is ``{path}``" for name, path in spec["params"].items())
        text = f"Return what the problem's ``Model(*get_init_inputs()).forward({inputs})`` returns"
        text += f" when the model's weights are the arguments ({weights})." if weights else "."
    else:
        data = ", ".join(spec["data"])
        text = f"Do what the problem's ``ref_kernel(({data}{',' if len(spec['data']) == 1 else ''}))`` does"
        state = spec["state"]
        text += f": write the result into ``{spec['data'][state]}`` in place." if state is not None else ": return its result."
    pinned = [f"``{e['name']}`` must be {e['value']!r} (raise ValueError otherwise)" for e in inferred.inputs if "value" in e]
    sizes = [f"``{e['name']}`` carries the size {e['axis']}" for e in inferred.inputs if "axis" in e]
    extra = "; ".join(pinned + sizes)
    return f"run({args}): {text}" + (f" {extra}." if extra else "")


def _description(
    problem: PeerProblem,
    header: render.Header,
    inferred: Inferred,
    doc: str,
    tolerance: tuple[float, float, str],
    observed: list[Observed],
    context: dict[str, Any],
) -> str:
    source = problem.sources[problem.main]
    commit = f" at commit `{header.commit[:12]}`" if header.commit else ""
    lines = [
        f"# {header.title}",
        "",
        f"Imported from {header.pack_name}: `{header.rel_path}`{commit}, by `d2k-workbench import`. "
        "**Imported, no guidance**: this task has no expert solution, guidance or rubric; only the unguided "
        "configuration (`none`) runs on it.",
        "",
        "## What to implement",
        "",
        doc.replace("``", "`"),
        "",
    ]
    if problem.pack == "kernelbench":
        lines += [
            "The model is constructed as KernelBench constructs it (training mode: batch norms use the batch's "
            "statistics) and called without gradients. Its parameters, and the buffers its forward only reads, are "
            "arguments of `run(...)`; buffers the forward updates (running statistics) stay inside the reference "
            "and are not compared.",
            "",
        ]
    atol, rtol, evidence = tolerance
    lines += render.inputs_section(inferred, {n: (d.level, d.why) for n, d in context["domain"].items()})
    if context.get("named_tuples"):
        named = ", ".join(f"`{new}` (of `{old}`)" for new, old in context["named_tuples"].items())
        lines += [
            f"The importer named the integers of the problem's shape tuples so that they scale with its other sizes: {named}.",
            "",
        ]
    if context.get("own_sizes_note"):
        lines += [f"No reduced sizes run ({context['own_sizes_note']}): the smoke workload keeps the problem's own sizes.", ""]
    lines += [
        "## Correctness",
        "",
        f"Every output (or the buffer written in place) must satisfy |out - reference| <= {atol:g} + {rtol:g} * |reference| "
        f"elementwise, with no NaN or Inf where the reference has none: {evidence}.",
        "",
        "## Workloads",
        "",
        "| name | kind | axes |",
        "| --- | --- | --- |",
    ]
    for o in (o for o in observed if o.emit):
        axes = next(a for n, a in [*inferred.workloads, *inferred.smoke_workloads] if n == o.name)
        lines.append(
            f"| {o.name} | {'smoke (CPU)' if o.smoke else 'registered (GPU)'} | {' '.join(f'{k}={v}' for k, v in axes.items())} |"
        )
    lines += [
        "",
        f"## The problem's source (`{Path(header.rel_path).name if problem.pack == 'kernelbench' else 'reference.py'}`)",
        "",
    ]
    lines += ["```python", source.rstrip(), "```", ""]
    return "\n".join(lines)


def _check(task_id: str, files: dict[str, str]) -> None:
    """The files load as a task (the catalogue's own checks) before they are written where they belong."""
    with tempfile.TemporaryDirectory(prefix="d2k-import-") as scratch:
        folder = Path(scratch) / task_id
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        try:
            load_task(folder)
        except CatalogError as exc:
            raise Unsupported("unsupported_inputs", f"the inferred task does not validate: {exc.detail}") from None


def _write(folder: Path, files: dict[str, str]) -> None:
    """Replace the task's folder with the new files (an earlier import of the same problem included)."""
    staging = folder.with_name(f".{folder.name}.importing")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, text in files.items():
        (staging / name).write_text(text, encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)


def free_sizes_of(source: str) -> dict[str, int]:
    """The free sizes of a KernelBench problem's file (for tests and the docs)."""
    return free_sizes(analyze.parse(source, "problem.py"))
