"""Imported tasks on the CPU, without a GPU: their references run, their input domains tried, and a battery of
generic wrong answers held to the harness's comparison (torch; started sandboxed by workbench.importer.checking).

One request per line on stdin, one JSON line answered on stdout (the task's own prints go to stderr):

- `{"op": "check", "folder": F}`: each smoke workload's inputs made and reference run, timed, the outputs'
  shapes and dtypes held to the signature.
- `{"op": "domain", "folder": F}`: each input that inputs.py's DOMAIN names tried at each level of
  peer_domain.LEVELS, widest first; the widest kept whose outputs stay finite where the peer's inputs give
  finite ones, and stay within the tolerance under a rounding-level change of the inputs wherever the peer's
  inputs do (an honest kernel rounds otherwise than the reference).
- `{"op": "battery", "folder": F, "neighbours": [F, ...], "peer_tolerance": [atol, rtol]}`: the battery
  (`ANSWERS`) on every smoke workload and seed, each answer compared with the reference's outputs by the
  checker's own `compare` under the task's tolerance, on the task's inputs, on the peer's and on fully widened
  ones; and by `torch.allclose` at the peer's tolerance on the peer's inputs (what the peer would accept).

The task's code is the task's own (reference.py and inputs.py, which call the peer's code); no solution runs
here. Each request runs under an alarm; a task that crashes the process fails alone (the host starts another).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import torch

from workbench.catalog.loader import load_task
from workbench.catalog.task import ScalarArg, Task, TensorArg, Workload
from workbench.harness.checker.compare import compare
from workbench.harness.probe.peer_domain import LEVELS
from workbench.harness.protocol.task_files import import_file

MEMORY_LIMIT = 24 * 2**30  # address space of the process, bytes
PEER_FILE_NAMES = ("problem.py", "reference.py", "task.py", "utils.py")  # the peer's files, run from strings
CHECK_SEED = 20250101
DOMAIN_SEEDS = (1, 2)
BATTERY_SEEDS = (11, 12, 13)
DISCRETE_VALUES = 8  # a floating input of no more distinct small integers than this holds labels, signs or a mask
DTYPE_NAMES = {
    getattr(torch, name): name
    for name in ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
}
_NAMES = count()


class Timeout(Exception):
    """The request ran past its time."""


@dataclass
class Loaded:
    task: Task
    inputs: ModuleType
    reference: ModuleType

    def make(self, workload: Workload, seed: int, domain: dict[str, str] | None = None) -> dict[str, Any]:
        return dict(self.inputs.make_inputs(workload.axes, seed, "cpu", domain))

    @property
    def domain(self) -> dict[str, str]:
        return dict(getattr(self.inputs, "DOMAIN", {}))

    def compared_names(self) -> list[str]:
        """What a call is judged by: the outputs it returns, then the state inputs it writes."""
        outputs = [o.name for o in self.task.spec.signature.outputs]
        return outputs + [a.name for a in self.task.spec.signature.inputs if isinstance(a, TensorArg) and a.state]

    def run(self, inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The reference on copies of `inputs`: the compared values by name."""
        return compared_values(self.task, self.reference.reference, inputs)


def compared_values(task: Task, function: Callable[..., Any], inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """`function(**copies of inputs)`'s outputs by the task's output names, then its state inputs after the call."""
    args = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    with torch.no_grad():
        result = function(**args)
    outputs = task.spec.signature.outputs
    values = [] if not outputs else [result] if len(outputs) == 1 else list(result)
    if len(values) != len(outputs) or not all(isinstance(v, torch.Tensor) for v in values):
        raise TypeError(f"returned {type(result).__name__}, not the {len(outputs)} tensor(s) the signature declares")
    found = {o.name: v for o, v in zip(outputs, values, strict=True)}
    found |= {a.name: args[a.name] for a in task.spec.signature.inputs if isinstance(a, TensorArg) and a.state}
    return found


def load(folder: str) -> Loaded:
    task = load_task(Path(folder))
    number = next(_NAMES)
    inputs = import_file(task.file("inputs.py"), f"_d2k_check_inputs_{number}")
    reference = import_file(task.file("reference.py"), f"_d2k_check_reference_{number}")
    return Loaded(task, inputs, reference)


def describe(exc: BaseException, loaded: Loaded | None = None) -> str:
    """The exception, and the line it came from: the last frame in one of the peer's files (quoted from the
    task's copy of them) or in the task's own files."""
    where = ""
    peer_files: dict[str, str] = getattr(loaded.inputs, "PEER_FILES", {}) if loaded else {}
    for frame in traceback.extract_tb(exc.__traceback__):
        name = frame.filename
        if name in PEER_FILE_NAMES:
            lines = peer_files.get(name.removesuffix(".py"), "").splitlines()
            line = lines[frame.lineno - 1].strip() if frame.lineno and 0 < frame.lineno <= len(lines) else ""
            where = f" ({name}, line {frame.lineno}: {line[:160]})"
        elif loaded is not None and Path(name).parent == loaded.task.dir:
            where = f" ({Path(name).name}, line {frame.lineno}: {(frame.line or '').strip()[:160]})"
    return f"{type(exc).__name__}: {str(exc).strip()[:300]}{where}"


def _nonfinite(t: torch.Tensor) -> int:
    return int((~torch.isfinite(t)).sum()) if t.is_floating_point() else 0


# ---- check --------------------------------------------------------------------------------------------------


def check(request: dict[str, Any]) -> dict[str, Any]:
    """Each smoke workload's inputs and reference, timed, the outputs held to the signature."""
    loaded = load(request["folder"])
    task = loaded.task
    specs = {o.name: o for o in task.spec.signature.outputs}
    specs |= {a.name: a for a in task.spec.signature.inputs if isinstance(a, TensorArg) and a.state}  # type: ignore[misc]
    rows = []
    for workload in task.spec.smoke_workloads:
        row: dict[str, Any] = {"workload": workload.name, "status": "failed", "inputs_s": None, "reference_s": None}
        try:
            started = time.perf_counter()
            inputs = loaded.make(workload, CHECK_SEED)
            made = time.perf_counter()
            row["inputs_s"] = made - started
            values = loaded.run(inputs)
            row["reference_s"] = time.perf_counter() - made
            problems = []
            for name, value in values.items():
                want = task.shape(specs[name].shape, workload)
                if tuple(value.shape) != want or DTYPE_NAMES.get(value.dtype) != specs[name].dtype:
                    problems.append(
                        f"{name} is {DTYPE_NAMES.get(value.dtype)} {list(value.shape)}, declared {specs[name].dtype} {list(want)}"
                    )
            row["nonfinite"] = sum(_nonfinite(v) for v in values.values())
            row["elements"] = sum(v.numel() for v in values.values())
            if problems:
                row["message"] = "; ".join(problems)
            else:
                row["status"] = "ran"
        except Timeout:
            raise
        except Exception as exc:
            row["message"] = describe(exc, loaded)
        rows.append(row)
    return {"task": task.id, "workloads": rows}


# ---- domain -------------------------------------------------------------------------------------------------


def _perturbed(inputs: dict[str, Any], names: list[str], seed: int) -> dict[str, Any]:
    """The inputs with each floating one `names` lists moved by a few units in the last place (a rounding-level
    change, as an honest kernel that rounds otherwise than the reference would make)."""
    gen = torch.Generator().manual_seed(seed)
    moved = dict(inputs)
    for name in names:
        value = inputs.get(name)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
            noise = torch.rand(value.shape, generator=gen, dtype=torch.float64) * 2 - 1
            eps = 4 * torch.finfo(value.dtype).eps
            moved[name] = (value.double() * (1 + eps * noise)).to(value.dtype)
    return moved


class DomainTrial:
    """Tries input domains on the first smoke workload, against the peer's values at the same seeds."""

    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        self.workload = loaded.task.spec.smoke_workloads[0]
        self.names = list(loaded.domain)
        self.rules = {name: loaded.task.tolerance_for(self.workload).rule_for(name) for name in loaded.compared_names()}
        self.peer = {seed: loaded.run(loaded.make(self.workload, seed, {})) for seed in DOMAIN_SEEDS}
        self.conditioned = self._steady({}) is None  # the peer's own values bear a rounding-level change

    def _steady(self, domain: dict[str, str]) -> str | None:
        seed = DOMAIN_SEEDS[0]
        inputs = self.loaded.make(self.workload, seed, domain)
        here = self.loaded.run(inputs)
        moved = self.loaded.run(_perturbed(inputs, self.names, seed))
        for name, value in here.items():
            result = compare(moved[name], value, self.rules[name], value)
            if not result.ok:
                return f"a rounding-level change of the inputs moves {name} past the tolerance ({result.message[:200]})"
        return None

    def problem(self, domain: dict[str, str]) -> str | None:
        """Why `domain` does not do (None: it does)."""
        try:
            for seed in DOMAIN_SEEDS:
                got = self.loaded.run(self.loaded.make(self.workload, seed, domain))
                for name, value in got.items():
                    bad, peer_bad = _nonfinite(value), _nonfinite(self.peer[seed][name])
                    if bad > peer_bad:
                        return f"the reference gives non-finite outputs ({bad} of {value.numel()} values of {name})"
            return self._steady(domain) if self.conditioned else None
        except Timeout:
            raise
        except Exception as exc:
            return f"the reference raises {describe(exc, self.loaded)}"


def _labels(value: Any) -> str | None:
    """Why a floating input holds labels, signs or a mask (a few small integers: HingeLoss's -1 and 1), whose set
    is the problem's; None for anything else (a constant of another kind is widened like any value)."""
    if not isinstance(value, torch.Tensor) or value.numel() <= DISCRETE_VALUES:
        return None
    found = value.unique()
    if found.numel() > DISCRETE_VALUES or not bool((found == found.round()).all() and (found.abs() <= 255).all()):
        return None
    if found.numel() == 1:
        return f"holds the single value {found.item():g}: nothing to widen"
    listed = ", ".join(f"{v:g}" for v in found.tolist())
    return f"holds the values {listed} only (labels, signs or a mask): their set is the problem's"


def domain(request: dict[str, Any]) -> dict[str, Any]:
    """The widest level of each input DOMAIN names that keeps the reference finite and steady, and why any
    wider one was refused; then the levels lowered, widest first, until all of them together do."""
    trial = DomainTrial(load(request["folder"]))
    peer = trial.loaded.make(trial.workload, DOMAIN_SEEDS[0], {})
    chosen: dict[str, dict[str, str]] = {}
    for name in trial.names:
        value = peer.get(name)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).any()):
            chosen[name] = {"level": "peer", "why": "allocated without values: an output buffer, nothing to widen"}
            continue
        labels = _labels(value)
        if labels is not None:
            chosen[name] = {"level": "peer", "why": labels}
            continue
        refused: list[str] = []
        level = "peer"
        for candidate in LEVELS[:-1]:
            problem = trial.problem({name: candidate})
            if problem is None:
                level = candidate
                break
            refused.append(f"{candidate}: {problem}")
        chosen[name] = {"level": level, "why": f"wider levels refused: {'; '.join(refused)}" if refused else ""}
    while True:
        levels = {name: entry["level"] for name, entry in chosen.items()}
        wider = [name for name in trial.names if levels[name] != "peer"]
        if len(wider) < 2:
            break
        problem = trial.problem(levels)
        if problem is None:
            break
        widest = min(wider, key=lambda n: LEVELS.index(levels[n]))
        entry = chosen[widest]
        lower = LEVELS[LEVELS.index(entry["level"]) + 1]
        note = f"{entry['level']} together with the other widened inputs: {problem}"
        chosen[widest] = {"level": lower, "why": "; ".join(p for p in (entry["why"], note) if p)}
    return {"task": trial.loaded.task.id, "domain": chosen, "conditioned": trial.conditioned}


# ---- battery ------------------------------------------------------------------------------------------------

Answer = Callable[[dict[str, Any], dict[str, torch.Tensor]], dict[str, torch.Tensor] | None]


def _first_tensor(loaded: Loaded, inputs: dict[str, Any]) -> torch.Tensor | None:
    for arg in loaded.task.spec.signature.inputs:
        if isinstance(arg, TensorArg) and not arg.state:
            value = inputs.get(arg.name)
            if isinstance(value, torch.Tensor):
                return value
    return None


def _from_first(loaded: Loaded, make: Callable[[torch.Tensor], torch.Tensor | None]) -> Answer:
    """An answer made from the first input, for every compared value of its number of elements (the others
    right); None where no compared value has it."""

    def answer(inputs: dict[str, Any], expected: dict[str, torch.Tensor]) -> dict[str, torch.Tensor] | None:
        first = _first_tensor(loaded, inputs)
        made = make(first) if first is not None else None
        if made is None:
            return None
        found = {n: made.reshape(e.shape).to(e.dtype) for n, e in expected.items() if e.numel() == made.numel()}
        return {**expected, **found} if found else None

    return answer


def _half(inputs: dict[str, Any], expected: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    found = {}
    for name, value in expected.items():
        flat = value.clone().reshape(-1)
        flat[(flat.numel() + 1) // 2 :] = 0
        found[name] = flat.reshape(value.shape)
    return found


def answers(loaded: Loaded, neighbour: Answer | None) -> dict[str, Answer]:
    """The battery: generic wrong answers, each from the call's inputs and the right outputs."""
    battery: dict[str, Answer] = {
        "copy": _from_first(loaded, lambda x: x),
        "zeros": lambda inputs, expected: {n: torch.zeros_like(e) for n, e in expected.items()},
        "constant": lambda inputs, expected: {
            n: torch.full_like(e, 0.5 if e.is_floating_point() else 1) for n, e in expected.items()
        },
        "scaled": _from_first(loaded, lambda x: x * 2 if x.is_floating_point() else None),
        "relu": _from_first(loaded, lambda x: torch.relu(x) if x.is_floating_point() else None),
        "half": _half,
    }
    if neighbour is not None:
        battery["neighbour"] = neighbour
    return battery


ANSWERS = ("copy", "zeros", "constant", "scaled", "relu", "half", "neighbour")


def _positional(task: Task) -> list[tuple[str, str, str]]:
    return [
        (a.name, "tensor" if isinstance(a, TensorArg) else "scalar", a.dtype)
        for a in task.spec.signature.inputs
        if isinstance(a, (TensorArg, ScalarArg))
    ]


def find_neighbour(
    loaded: Loaded, folders: list[str], inputs: dict[str, Any], expected: dict[str, torch.Tensor]
) -> tuple[str, Answer] | None:
    """The first of `folders` whose reference takes this task's inputs, position by position, and gives values
    of this task's compared shapes and dtypes: its answer, called on this task's inputs."""
    mine = _positional(loaded.task)
    for folder in folders:
        try:
            other = load(folder)
        except Exception:
            continue
        theirs = _positional(other.task)
        if [(k, d) for _, k, d in mine] != [(k, d) for _, k, d in theirs] or len(other.compared_names()) != len(expected):
            continue
        names = {m[0]: t[0] for m, t in zip(mine, theirs, strict=True)}

        def answer(
            inputs: dict[str, Any], expected: dict[str, torch.Tensor], other: Loaded = other, names: dict[str, str] = names
        ) -> dict[str, torch.Tensor] | None:
            values = list(other.run({names[k]: v for k, v in inputs.items() if k in names}).values())
            return dict(zip(expected, values, strict=True))

        try:
            got = answer(inputs, expected)
        except Timeout:
            raise
        except Exception:
            continue
        if got is not None and all(got[n].shape == e.shape and got[n].dtype == e.dtype for n, e in expected.items()):
            return other.task.id, answer
    return None


def battery(request: dict[str, Any]) -> dict[str, Any]:
    loaded = load(request["folder"])
    task = loaded.task
    atol, rtol = request["peer_tolerance"]
    strict = request.get("peer_strict_tolerance")
    stress = dict.fromkeys(loaded.domain, "wide")
    sets = {"ours": None, "peer": {}, "stress": stress}
    record: dict[str, dict[str, Any]] = {
        name: {"applies": False, "rejected": {"ours": False, "peer": False, "stress": False}, "peer_accepts": True,
               "peer_strict_accepts": True, "why": ""}
        for name in ANSWERS
    }  # fmt: skip
    neighbour_id = None
    skipped: dict[str, str] = {}  # input sets the reference cannot run on, and why
    battery_answers: dict[str, Answer] | None = None
    for workload in task.spec.smoke_workloads:
        rules = {name: task.tolerance_for(workload).rule_for(name) for name in loaded.compared_names()}
        for seed in BATTERY_SEEDS:
            for label, levels in sets.items():
                try:
                    inputs = loaded.make(workload, seed, levels)
                    expected = loaded.run(inputs)
                except Timeout:
                    raise
                except Exception as exc:
                    if label == "ours":
                        raise
                    skipped.setdefault(label, describe(exc, loaded))  # wider than the task allows: says nothing
                    continue
                if battery_answers is None:
                    found = find_neighbour(loaded, list(request.get("neighbours", [])), inputs, expected)
                    neighbour_id = found[0] if found else None
                    battery_answers = answers(loaded, found[1] if found else None)
                for name, make in battery_answers.items():
                    try:
                        wrong = make(inputs, expected)
                    except Timeout:
                        raise
                    except Exception:
                        wrong = None
                    if wrong is None:
                        continue
                    entry = record[name]
                    entry["applies"] = True
                    for out, value in wrong.items():
                        result = compare(value, expected[out], rules[out], expected[out])
                        if not result.ok and not entry["rejected"][label]:
                            entry["rejected"][label] = True
                            entry["why"] = entry["why"] or f"{label} inputs, seed {seed}: {result.message[:160]}"
                        if label == "peer":
                            entry["peer_accepts"] &= bool(
                                torch.allclose(value.to(expected[out].dtype), expected[out], atol=atol, rtol=rtol)
                            )
                            if strict is not None:
                                entry["peer_strict_accepts"] &= bool(
                                    torch.allclose(value.to(expected[out].dtype), expected[out], atol=strict, rtol=strict)
                                )
    rows = []
    for name in ANSWERS:
        entry = record[name]
        if not entry["applies"]:
            continue
        is_wrong = any(entry["rejected"].values())
        rows.append(
            {
                "answer": name,
                "wrong": is_wrong,
                "accepted": is_wrong and not entry["rejected"]["ours"],
                "peer_accepts": is_wrong and entry["peer_accepts"],
                "peer_strict_accepts": (is_wrong and entry["peer_strict_accepts"]) if strict is not None else None,
                "why": entry["why"],
            }
        )
    return {"task": task.id, "neighbour": neighbour_id, "domain": loaded.domain, "answers": rows, "skipped_sets": skipped}


# ---- the process --------------------------------------------------------------------------------------------

OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"check": check, "domain": domain, "battery": battery}


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Timeout()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """One request's answer, or {"error": why} (within the request's time)."""
    started = time.perf_counter()
    timeout = max(1, int(request.get("timeout_s", 120)))
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        result = {"ok": True, **OPS[request["op"]](request)}
    except Timeout:
        result = {"ok": False, "error": f"ran past {timeout} s"}
    except MemoryError:
        result = {"ok": False, "error": "ran out of memory"}
    except Exception as exc:
        result = {"ok": False, "error": describe(exc)}
    finally:
        signal.alarm(0)
    result["seconds"] = time.perf_counter() - started
    return result


def main() -> int:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the task's prints go to stderr, never into the answers
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for line in sys.stdin:
        if line.strip():
            out.write(json.dumps(answer(json.loads(line))) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
