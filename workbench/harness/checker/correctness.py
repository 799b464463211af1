"""Correctness trials of one workload, decided in the trusted checker process.

The checker makes the inputs (seeds mixed with the per-evaluation secret), keeps pristine copies, sends
the values to the solution process, and checks what comes back: output shape, dtype and layout,
aliasing, unchanged inputs, state updates and numerical agreement with the oracle, which runs here on
the pristine copies. The solution process never holds an expected value, a seed or the secret.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from workbench.catalog.task import ScalarArg, Task, TensorArg, TensorListArg, Workload, argument_of, element_name
from workbench.harness.checker.compare import compare, compare_many
from workbench.harness.checker.draws import DrawPool, DrawsInvalid, generator_for
from workbench.harness.checker.remote import CallReply, RemoteSolution, SolutionFailure
from workbench.harness.protocol.replies import OutputDescription
from workbench.harness.protocol.report import Status, Violation
from workbench.harness.solution.transport import digest, digest_each, digest_many, pack, split

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


class TrialFailure(SolutionFailure):
    """A check failed: carries the status the evaluation gets (a SolutionFailure found by the checker)."""

    status: Status


@dataclass
class Expected:
    """What the checker computed itself for one call's inputs."""

    outputs: list[torch.Tensor]  # the oracle's outputs, in the signature's order
    state: dict[str, torch.Tensor]  # the oracle's state inputs after the call
    reference: list[torch.Tensor] | None  # the reference's outputs, where the tolerance needs them


@dataclass
class TrialStats:
    trials: int = 0
    max_abs_err: float | None = None  # None until a call's outputs were compared: not measured, not zero
    rel_err: float | None = None
    bound: float | None = None
    draws: int = 0  # drawn outputs ([sampling]): the draws pooled when the law was last tested
    law_p: float | None = None  # and the smallest p-value of its tests then
    launches: int = 0
    kernels: dict[str, int] = field(default_factory=dict)  # per kernel name, the most launches in one call


def output_specs(task: Task, workload: Workload) -> list[dict[str, Any]]:
    """The outputs of one workload's calls as the solution process allocates and describes them."""
    return [
        {"name": s.name, "mode": s.mode, "dtype": s.dtype, "shape": list(task.shape(s.shape, workload))}
        for s in task.spec.signature.outputs
    ]


def trial_seed(secret: int, workload: str, trial: int) -> int:
    hashed = hashlib.sha256(f"{secret}:{workload}:{trial}".encode()).digest()
    return int.from_bytes(hashed[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


class WorkloadChecker:
    """Runs the correctness trials of one workload against one solution process."""

    def __init__(
        self,
        task: Task,
        workload: Workload,
        solution: RemoteSolution,
        reference_module: ModuleType,
        make_inputs: Callable[..., dict[str, Any]],
        device: torch.device,
        secret: int,
        seeded: bool = False,
    ) -> None:
        self.task = task
        self.spec = task.spec
        self.workload = workload
        self.solution = solution
        self.reference_module = reference_module
        self.make_inputs = make_inputs
        self.device = device
        self.secret = secret
        self.stats = TrialStats()
        # what crosses the channel, by argument (a list input travels packed, its element shapes beside it) ...
        self.tensor_names = [a.name for a in self.spec.signature.inputs if not isinstance(a, ScalarArg)]
        self.state_args = sorted(a.name for a in self.spec.signature.inputs if not isinstance(a, ScalarArg) and a.state)
        # ... and what is compared: a tensor by its name, a list element by `name.i`
        self.state_names = set(task.tensor_names(workload, state_only=True))
        self.lists = {a.name: a for a in self.spec.signature.inputs if isinstance(a, TensorListArg)}
        self.list_lengths = task.list_lengths(workload)
        self.list_shapes: dict[str, list[tuple[int, ...]]] = {}  # the element shapes the task's inputs.py makes
        self.output_specs = output_specs(task, workload)
        self.breakdown: dict[str, float] = {}  # seconds per activity (report.ACTIVITIES)
        self.scalar_names = [a.name for a in self.spec.signature.inputs if isinstance(a, ScalarArg)]
        self.seeded = seeded  # inputs may be made in the solution process from each trial's seed (`deliver`)
        self.confirmed: bool | None = None  # whether it made the first ones bit for bit as this process
        self.repeatable = False  # whether make_inputs gave the same bytes twice from one seed (first trial)
        # drawn outputs (task.toml [sampling]): their law is checked over the workload's pooled draws
        self.sampling = self.spec.sampling
        self.drawn = set(self.sampling.outputs) if self.sampling else set()
        self.pool = DrawPool(secret, workload.name, ", ".join(sorted(self.drawn)))
        self.last_draws: torch.Tensor | None = None  # the intervals of the last checked call's draws
        # whether the oracle runs while the solution's call does: always on the CPU; on a GPU decided by the
        # workload's first checked call, which runs alone (`call_expecting`)
        self.overlap: bool | None = None if device.type == "cuda" else True

    @contextlib.contextmanager
    def spent(self, activity: str) -> Iterator[None]:
        """Add the block's wall time to `activity` in the breakdown."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.breakdown[activity] = self.breakdown.get(activity, 0.0) + time.perf_counter() - started

    # -- inputs -------------------------------------------------------------------------------
    def fresh_inputs(self, trial: int) -> dict[str, Any]:
        """The trial's inputs, made here from its seed (the first time per workload: made twice and compared)."""
        seed = trial_seed(self.secret, self.workload.name, trial)
        if not self.repeatable:
            self._check_repeatable(seed)
        try:
            with self.spent("inputs"):
                inputs = self.make_inputs(self.workload.axes, seed, self.device)
        except Exception as exc:
            raise task_code_failed("the task's make_inputs", exc) from exc
        for arg in self.spec.signature.inputs:
            if arg.name not in inputs:
                raise TaskFault(f"the task's inputs.py did not produce input {arg.name!r}")
            if isinstance(arg, ScalarArg) and arg.axis is not None and inputs[arg.name] != self.workload.axes[arg.axis]:
                raise TaskFault(
                    f"the task's inputs.py gave {arg.name}={inputs[arg.name]!r}, but it carries the workload's axis "
                    f"{arg.axis}={self.workload.axes[arg.axis]}"
                )
            if isinstance(arg, TensorListArg):
                self._check_list(arg, inputs[arg.name])
        return inputs

    def _check_repeatable(self, seed: int) -> None:
        """Raise `TaskFault` unless make_inputs gives the same bytes twice from one seed on this device.

        Every check of a call that did not receive its inputs from here (a sampled timed call, inputs made
        in the solution's process, a re-check) makes the trial's inputs again from its seed: a generator
        that is not repeatable (torch.multinomial with replacement on a GPU is one) would fail honest
        solutions at random, so the task is stopped here, named as the culprit, before any call."""
        made = []
        for _ in range(2):
            try:
                with self.spent("inputs"):
                    inputs = self.make_inputs(self.workload.axes, seed, self.device)
                    made.append({n: _input_digest(v) for n, v in inputs.items()})
            except Exception as exc:
                raise task_code_failed("the task's make_inputs", exc) from exc
            del inputs
        differing = [n for n in made[0] if made[0][n] != made[1].get(n)]
        if differing:
            raise TaskFault(
                f"the task's make_inputs is not repeatable on {self.device.type}: input {differing[0]!r} came out "
                "different from the same seed twice, so calls checked on inputs made again cannot be checked "
                "(make every random draw from the seeded generator with operations that repeat bit for bit)"
            )
        self.repeatable = True

    def _check_list(self, arg: TensorListArg, value: Any) -> None:
        """A list input as the task declares it: `count` tensors of its dtype, `numel` elements in all, each its
        own contiguous tensor, with the same element shapes at every trial of the workload."""
        if not isinstance(value, (list, tuple)) or not all(type(t) is torch.Tensor for t in value):
            raise TaskFault(f"the task's inputs.py gave {arg.name} as {type(value).__name__}, not a list of tensors")
        count, numel = self.list_lengths[arg.name], self.task.size(arg.numel, self.workload)
        if len(value) != count or not value or sum(t.numel() for t in value) != numel:
            raise TaskFault(
                f"the task's inputs.py gave {arg.name} as {len(value)} tensors of {sum(t.numel() for t in value)} elements; "
                f"the workload declares {count} of {numel} (at least one)"
            )
        dtype = self.task.dtype_of(arg, self.workload)
        if any(t.dtype != DTYPES[dtype] or not t.is_contiguous() for t in value):
            raise TaskFault(f"the task's inputs.py gave an element of {arg.name} that is not a contiguous {dtype} tensor")
        shapes = [tuple(t.shape) for t in value]
        if self.list_shapes.setdefault(arg.name, shapes) != shapes:
            raise TaskFault(f"the task's inputs.py gave {arg.name} other element shapes at another trial of one workload")

    def element_shapes(self, name: str) -> list[tuple[int, ...]]:
        """The element shapes of list input `name` at this workload (made once here when not yet known)."""
        if name not in self.list_shapes:
            self.fresh_inputs(0)
        return self.list_shapes[name]

    def moved(self, inputs: dict[str, Any], name: str) -> torch.Tensor:
        """Input `name` as it crosses the channel: the tensor, or a list's elements packed into one."""
        value = inputs[name]
        return pack(value) if name in self.lists else value

    def flat_state(self, values: dict[str, Any]) -> dict[str, torch.Tensor]:
        """State inputs by compared name: a tensor under its own, each list element under `name.i`."""
        flat: dict[str, torch.Tensor] = {}
        for name in self.state_args:
            if name in self.lists:
                flat.update({element_name(name, i): t for i, t in enumerate(values[name])})
            else:
                flat[name] = values[name]
        return flat

    def scaled(self, trial: int, scale: float) -> dict[str, Any]:
        """Fresh inputs with every floating input of 16 bits or more multiplied by `scale`.

        8-bit floats (FP8 data whose range the task's quantisation fills) and integer inputs (indices,
        packed weights, positions) keep their values; their float scales, where a task has them, grow."""
        inputs = self.fresh_inputs(trial)
        for arg in self.spec.signature.inputs:
            values = inputs[arg.name] if isinstance(arg, TensorListArg) else [inputs[arg.name]]
            for value in values if not isinstance(arg, ScalarArg) else []:
                if value.is_floating_point() and value.element_size() >= 2:
                    value.mul_(scale)
        return inputs

    def send(self, slot: int, inputs: dict[str, Any], refill: bool = False, timed: bool = False) -> None:
        tensors = {n: self.moved(inputs, n) for n in self.tensor_names}
        scalars = {n: inputs[n] for n in self.scalar_names}
        lists = {n: [list(t.shape) for t in inputs[n]] for n in self.lists}
        with self.spent("send"):
            self.solution.put(slot, tensors, scalars, self.state_args, refill=refill, timed=timed, lists=lists)

    def deliver(
        self,
        slot: int,
        trial: int,
        inputs: dict[str, Any] | None = None,
        *,
        refill: bool = False,
        timed: bool = False,
        scale: float | None = None,
    ) -> None:
        """Put a trial's inputs into a slot of the solution process: made there by the task's make_inputs
        from the trial's seed (`generate`: nothing crosses the channel) where `seeded` allows it and the
        workload's first delivery showed the process makes them as this one does (equal digests); else sent.
        `inputs`: this process's values of the trial (made here when needed and not given); `scale`: the
        scaled trial's factor (`inputs` then are the scaled values).

        Why a made input cannot pass a wrong answer: every verdict compares the outputs with the oracle
        on this process's own inputs of the trial; values made differently there only make the outputs
        wrong. The first comparison guards honest solutions against a generator that is not
        deterministic across processes: it falls back to sending, for the whole workload."""
        if self.seeded and self.confirmed is not False:
            seed = trial_seed(self.secret, self.workload.name, trial)
            with self.spent("send"):
                self.solution.generate(
                    slot,
                    seed,
                    dict(self.workload.axes),
                    self.tensor_names,
                    self.scalar_names,
                    self.state_args,
                    refill=refill,
                    timed=timed,
                    scale=scale,
                )
            if self.confirmed:
                return
            if inputs is None:
                inputs = self.scaled(trial, scale) if scale is not None else self.fresh_inputs(trial)
            with self.spent("send"):
                theirs = self.solution.digests(slot, self.tensor_names)
                self.confirmed = theirs == [
                    digest_many(inputs[n]) if n in self.lists else digest(inputs[n]) for n in self.tensor_names
                ]
            if self.confirmed:
                return
        if inputs is None:
            inputs = self.scaled(trial, scale) if scale is not None else self.fresh_inputs(trial)
        self.send(slot, inputs, refill=refill, timed=timed)

    @property
    def inputs_made_there(self) -> bool:
        """Whether the solution process made this workload's inputs (confirmed at its first delivery)."""
        return bool(self.seeded and self.confirmed)

    # -- one call -----------------------------------------------------------------------------
    def call(
        self,
        slot: int,
        *,
        profile: bool = False,
        keep: bool = False,
        replay: bool = False,
        timed: bool = False,
        cover_ms: float = 0.0,
        meanwhile: Callable[[], None] | None = None,
    ) -> CallReply:
        """One call in the solution process; its reported breaches and output descriptions checked.
        `meanwhile`: the checker's own work while the call runs (the oracle of a checked call)."""
        oracle_before = self.breakdown.get("oracle", 0.0)
        try:
            with self.spent("call"):
                reply = self.solution.call(
                    slot,
                    self.output_specs,
                    profile=profile,
                    keep=keep,
                    replay=replay,
                    timed=timed,
                    cover_ms=cover_ms,
                    meanwhile=meanwhile,
                )
        except SolutionFailure as failure:
            raise TrialFailure(failure.status, failure.message, failure.violations) from None
        finally:  # the oracle computed meanwhile is the oracle's time, not the call's
            self.breakdown["call"] -= self.breakdown.get("oracle", 0.0) - oracle_before
        self.stats.launches += reply.launches
        for name, count in reply.launch_counts.items():
            self.stats.kernels[name] = max(count, self.stats.kernels.get(name, 0))
        if reply.violations:
            raise TrialFailure("policy_violation", reply.violations[0].describe(), reply.violations)
        self._check_descriptions(reply.outputs)
        if reply.mutated:
            raise TrialFailure("input_mutated", f"input {reply.mutated[0][:40]} was changed by the call")
        return reply

    def _check_descriptions(self, described: list[OutputDescription]) -> None:
        specs = self.spec.signature.outputs
        returned = [s for s in specs if s.mode == "return"]
        if len(described) != len(specs):
            raise TrialFailure("incorrect_shape", f"run(...) must return {len(returned)} tensors")
        for spec, out in zip(specs, described, strict=True):
            if out.kind == "tensor subclass":
                detail = f"output {spec.name} is a tensor subclass, not a plain tensor"
                raise TrialFailure("policy_violation", detail, [Violation(rule="tensor_subclass", detail=detail)])
            if out.kind != "tensor":
                raise TrialFailure("incorrect_shape", f"output {spec.name} is a {out.kind[:40]}, not a tensor")
            expected = self.task.shape(spec.shape, self.workload)
            if tuple(out.shape or ()) != expected:
                raise TrialFailure("incorrect_shape", f"output {spec.name} has shape {out.shape}, expected {list(expected)}")
            if out.dtype != spec.dtype:
                raise TrialFailure("incorrect_dtype", f"output {spec.name} is torch.{out.dtype}, expected torch.{spec.dtype}")
            if out.device != self.device.type:
                raise TrialFailure("incorrect_shape", f"output {spec.name} is on {out.device}, expected {self.device.type}")
            if spec.layout == "contiguous" and not out.contiguous:
                raise TrialFailure("incorrect_shape", f"output {spec.name} must be contiguous")
            if out.aliases:
                detail = f"output {spec.name} aliases input {out.aliases[0][:40]}"
                raise TrialFailure(
                    "policy_violation",
                    f"output {spec.name} shares memory with input {out.aliases[0][:40]}",
                    [Violation(rule="output_aliases_input", detail=detail)],
                )

    def fetch(self, sample: int | None = None) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """The last call's outputs and state inputs, or those of a sampled timed call."""
        state = self.state_args
        try:
            with self.spent("fetch"):
                if sample is None:
                    outputs, after = self.solution.fetch(len(self.output_specs), state)
                else:
                    outputs, after = self.solution.fetch_sample(sample, len(self.output_specs), state)
        except SolutionFailure as failure:
            raise TrialFailure(failure.status, failure.message) from None
        for spec, out in zip(self.spec.signature.outputs, outputs, strict=True):  # what crossed must match too
            if tuple(out.shape) != self.task.shape(spec.shape, self.workload) or out.dtype != DTYPES[spec.dtype]:
                raise TrialFailure("incorrect_shape", f"output {spec.name} does not match its description")
        flat: dict[str, torch.Tensor] = {}
        for name, value in after.items():  # a list's elements came back packed: split at the shapes made here
            if name not in self.lists:
                flat[name] = value
                continue
            try:
                parts = split(value, self.element_shapes(name))
            except ValueError as exc:
                raise TrialFailure("state_mismatch", f"state {name} after the call: {exc}") from None
            flat.update({element_name(name, i): part for i, part in enumerate(parts)})
        return outputs, flat

    # -- the checks -----------------------------------------------------------------------------
    def check_call(
        self,
        trial: int,
        inputs: dict[str, Any],
        *,
        slot: int = 0,
        refill: bool = False,
        keep: bool = True,
        profile: bool = False,
        scale: float | None = None,
    ) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """Deliver the trial's inputs, call, fetch and check everything about the call. The oracle (and the
        reference, where the tolerance needs it) is computed here on the pristine inputs while the solution
        process runs the call: the two are separate processes, and the outputs are compared only once
        fetched. `inputs` are this process's values of `trial` (scaled by `scale` where one is given).
        Returns the call's fetched outputs and state inputs (checked)."""
        self.deliver(slot, trial, inputs, refill=refill, scale=scale)
        expected = self.call_expecting(slot, inputs, profile=profile, keep=keep)
        outputs, after = self.fetch()
        self.verify(trial, inputs, outputs, after, expected)
        return outputs, after

    def call_expecting(self, slot: int, inputs: dict[str, Any], *, profile: bool = False, keep: bool = False) -> Expected:
        """Call on `slot` and compute the oracle (and reference) on `inputs`: while the call runs where both fit on the
        device together (`overlap`), else after it. On a GPU the workload's first checked call runs alone and
        measures what the oracle needs (`_expected_alone`): a large reference (materialised [tokens, vocabulary]
        logits) beside the solution's own peak ran the device out of memory (issue 55)."""
        if self.overlap:
            expected: list[Expected] = []

            def meanwhile() -> None:
                try:
                    expected.append(self.expected(inputs))
                except CheckerOutOfMemory:  # the two did not fit after all: again once the call is done
                    self.overlap = False
                    torch.cuda.empty_cache()

            self.call(slot, profile=profile, keep=keep, meanwhile=meanwhile)
            if expected:
                return expected[0]
        else:
            self.call(slot, profile=profile, keep=keep)
        return self._expected_alone(inputs)

    def _expected_alone(self, inputs: dict[str, Any]) -> Expected:
        """The oracle with the solution's process idle. The first time on a GPU it also decides `overlap`: the
        oracle's added peak must fit in OVERLAP_SHARE of the device memory free after the call (the solution's
        process keeps its peak's blocks cached, so what is free then is what the oracle may use during a call)."""
        if self.device.type != "cuda" or self.overlap is not None:
            return self.expected(inputs)
        torch.cuda.empty_cache()
        free = torch.cuda.mem_get_info(self.device)[0]
        base = torch.cuda.memory_allocated(self.device)
        expected = self.expected(inputs)
        need = torch.cuda.max_memory_allocated(self.device) - base
        self.overlap = need <= OVERLAP_SHARE * free
        return expected

    def check_repeat(self, trial: int, first: tuple[list[torch.Tensor], dict[str, torch.Tensor]]) -> None:
        """Determinism (task.toml `checks.deterministic`): call again on `trial`'s inputs, made afresh from its
        seed into new buffers, and require every output and state input bit for bit equal to `first`, that
        trial's checked result. A result that differs in any bit (float atomics in an order the scheduler picks,
        a split reduction whose order varies) fails the workload."""
        self.deliver(0, trial, self.fresh_inputs(trial))
        self.call(0)
        outputs, after = self.fetch()
        pairs = [(spec.name, got, want) for spec, got, want in zip(self.spec.signature.outputs, outputs, first[0], strict=True)]
        pairs += [(name, after[name], first[1][name]) for name in sorted(after)]
        for name, got, want in pairs:
            differ = differing_bits(got, want)
            if differ:
                raise TrialFailure(
                    "incorrect_numerical",
                    f"output {name} is not deterministic: {differ} of {want.numel()} values differ bit for bit between "
                    f"two calls on the same inputs (trial {trial}); the task requires identical results",
                )

    def verify(
        self,
        trial: int,
        inputs: dict[str, Any],
        outputs: list[torch.Tensor],
        after: dict[str, torch.Tensor],
        expected: Expected | None = None,
        partner: torch.Tensor | None = None,
    ) -> None:
        """Check one call's fetched outputs and state inputs against the oracle on the pristine inputs
        (`expected`: the oracle's values, when computed already); drawn outputs go to the workload's pool
        (`partner`: the intervals of the same inputs' draws under another seed)."""
        if self.drawn:
            names = [s.name for s in self.spec.signature.outputs]
            self._check_draws(trial, inputs, {n: o for n, o in zip(names, outputs, strict=True) if n in self.drawn}, partner)
        self._compare_with_oracle(trial, inputs, outputs, after, expected or self.expected(inputs))

    # -- drawn outputs ------------------------------------------------------------------------
    def _check_draws(
        self, trial: int, inputs: dict[str, Any], drawn: dict[str, torch.Tensor], partner: torch.Tensor | None
    ) -> None:
        """Pool one call's draws: the task's CDF interval of each, turned into a uniform by the checker."""
        assert self.sampling is not None
        fn = getattr(self.reference_module, self.sampling.intervals, None)
        if not callable(fn):
            raise TaskFault(f"the task's reference.py has no function {self.sampling.intervals!r} (sampling.intervals)")
        with torch.no_grad(), self.spent("compare"):
            try:
                intervals = fn(dict(drawn), inputs)
            except Exception as exc:  # the solution's draws made the task's code fail: charged to them, as for views
                reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                raise TrialFailure("incorrect_numerical", f"the draws are invalid (trial {trial}): {reason}") from None
            if not isinstance(intervals, torch.Tensor) or intervals.dim() != 2 or intervals.shape[1] != 2:
                raise TaskFault(f"the task's {self.sampling.intervals}(...) must return a [draws, 2] tensor")
            try:
                self.last_draws = self.pool.add(intervals, partner)
            except DrawsInvalid as exc:
                raise TrialFailure("incorrect_numerical", f"output {self.pool.output} (trial {trial}): {exc}") from None

    def check_reseeded(self, trial: int, inputs: dict[str, Any]) -> None:
        """Call again on `trial`'s inputs with only the seed changed (a value from the checker's generator),
        sent from here, and pool the draws paired with the previous call's: the seed must change them."""
        assert self.sampling is not None
        first = self.last_draws
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator_for(self.secret, self.workload.name, "seed", trial)))
        reseeded = {**inputs, self.sampling.seed: seed}
        self.send(0, reseeded)
        expected = self.call_expecting(0, reseeded)
        outputs, after = self.fetch()
        self.verify(trial, reseeded, outputs, after, expected, partner=first)

    def draw_enough(self, first_trial: int, smoke: bool, progress: Callable[[str], None]) -> None:
        """Pairs of calls (fresh inputs, then the same with another seed) until the pool holds the draws the
        task asks for, half of them paired across seeds; then the law is tested."""
        assert self.sampling is not None
        needed = self.sampling.smoke_min_draws if smoke else self.sampling.min_draws
        trial = first_trial
        while self.pool.draws < needed or self.pool.paired < needed // 2:
            if trial - first_trial >= MAX_DRAW_PAIRS:
                raise TaskFault(
                    f"{MAX_DRAW_PAIRS} pairs of calls gave {self.pool.draws} draws, short of the {needed} the task asks"
                )
            progress(f"{self.workload.name}: drawing ({self.pool.draws} of {needed} draws pooled)")
            inputs = self.fresh_inputs(trial)
            self.check_call(trial, inputs)
            self.check_reseeded(trial, inputs)
            trial += 1
        self.check_law()

    def check_law(self) -> None:
        """The pooled draws against the target law (two Kolmogorov-Smirnov tests and the repeats test, draws.py)."""
        if self.sampling is None:
            return
        with self.spent("compare"):
            tests = self.pool.tests()
            failure = self.pool.failure(self.sampling.alpha, tests)
        self.stats.draws = self.pool.draws
        self.stats.law_p = min((t.p_value for t in tests), default=None)
        if failure:
            raise TrialFailure("incorrect_numerical", failure)

    def expected(self, inputs: dict[str, Any]) -> Expected:
        """The oracle's outputs and state on `inputs`, and the reference's outputs where the tolerance bounds
        the error relative to the reference's own (nothing where every output is drawn and none is state)."""
        tol = self.task.tolerance_for(self.workload)
        if self.drawn and not self.state_names and self.drawn == {s.name for s in self.spec.signature.outputs}:
            return Expected([], {}, None)
        needs_reference = any(rule.reference_error_factor is not None for rule in [tol, *tol.outputs.values()])
        with torch.no_grad(), self.spent("oracle"):
            # the reference first: its peak (say, materialised logits) then has beside it only its inputs, not the
            # oracle's float64 outputs, and the oracle runs with the reference's outputs (the task's dtypes) kept
            reference = self._oracle_outputs(inputs, "reference")[0] if needs_reference else None
            oracle, oracle_state = self._oracle_outputs(inputs, tol.oracle)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)  # the oracle's time, not the comparison's
        return Expected(oracle, oracle_state, reference)

    def _oracle_outputs(self, inputs: dict[str, Any], fn_name: str) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        fn = getattr(self.reference_module, fn_name)
        args: dict[str, Any] = {}
        for arg in self.spec.signature.inputs:
            value = inputs[arg.name]
            if isinstance(arg, TensorListArg):
                value = clone_each(value)
            args[arg.name] = value.clone() if isinstance(arg, TensorArg) else value
        prealloc = {}
        for spec in self.spec.signature.outputs:
            if spec.mode == "preallocated":
                prealloc[spec.name] = torch.empty(
                    self.task.shape(spec.shape, self.workload), dtype=DTYPES[spec.dtype], device=self.device
                )
        try:
            result = fn(**args, **prealloc)
        except Exception as exc:
            raise task_code_failed(f"the task's {fn_name}(...)", exc) from exc
        returned = [s for s in self.spec.signature.outputs if s.mode == "return"]
        values = [result] if len(returned) == 1 else list(result or [])
        outs = [values.pop(0) if s.mode == "return" else prealloc[s.name] for s in self.spec.signature.outputs]
        return outs, self.flat_state(args)

    def _compare_with_oracle(
        self,
        trial: int,
        inputs: dict[str, Any],
        outputs: list[torch.Tensor],
        after: dict[str, torch.Tensor],
        expected: Expected,
    ) -> None:
        tol = self.task.tolerance_for(self.workload)
        names = [s.name for s in self.spec.signature.outputs]
        oracle, oracle_state, reference = expected.outputs, expected.state, expected.reference
        if self.drawn:  # drawn outputs were pooled (verify): the rest is compared with the oracle's values
            if not oracle:
                self.stats.trials += 1
                return
            kept = [i for i, n in enumerate(names) if n not in self.drawn]
            names, outputs = [names[i] for i in kept], [outputs[i] for i in kept]
            oracle = [oracle[i] for i in kept]
            reference = [reference[i] for i in kept] if reference is not None else None
        with torch.no_grad(), self.spent("compare"):
            # the oracle's views first: once they work, any failure of the views is the solution's outputs' doing
            want = self._compared_values(tol.views, dict(zip(names, oracle, strict=True)), inputs, solution=False)
            got = self._compared_values(tol.views, dict(zip(names, outputs, strict=True)), inputs, solution=True)
            ref = (
                self._compared_values(tol.views, dict(zip(names, reference, strict=True)), inputs, solution=False)
                if reference is not None
                else None
            )
        if set(got) != set(want):
            raise TaskFault(
                f"the task's {tol.views}(...) gave the values {sorted(want)} for the oracle, {sorted(got)} for the solution"
            )
        unknown = set(tol.outputs) - set(want) - set(self.state_args)
        if unknown:
            raise TaskFault(f"the tolerance has rules for {sorted(unknown)}, which are neither compared values nor state inputs")
        with self.spent("compare"):
            for name, value in got.items():
                rule = tol.rule_for(name)
                result = compare(value, want[name], rule, ref[name] if ref is not None else None)
                self._record(result.max_abs_err, result.rel_err, result.bound)
                if not result.ok:
                    raise TrialFailure("incorrect_numerical", f"output {name} (trial {trial}): {result.message}")
            # in the order of their names; a list's elements a batch at a time (compare_many), each its own verdict
            for argument, run in itertools.groupby(sorted(self.state_names), key=argument_of):
                names_run = list(run)
                results = compare_many(
                    [after[n] for n in names_run], [oracle_state[n] for n in names_run], tol.rule_for(argument)
                )
                for name, result in zip(names_run, results, strict=False):  # stops at the first failure
                    self._record(result.max_abs_err, result.rel_err, result.bound)  # the worst compared value, state too
                    if not result.ok:
                        raise TrialFailure("state_mismatch", f"state {name} after the call (trial {trial}): {result.message}")
        self.stats.trials += 1
        del oracle, oracle_state, reference, got, want, ref, expected
        if self.device.type == "cuda":
            torch.cuda.empty_cache()  # the solution process shares the device: leave it the memory

    def _compared_values(
        self, views: str | None, outputs: dict[str, torch.Tensor], inputs: dict[str, Any], *, solution: bool
    ) -> dict[str, torch.Tensor]:
        """The values compared: the outputs themselves, or the task's views of them (dequantised, say).

        The views of the oracle's outputs are computed first: a failure there is the task's fault. Once they
        work, any exception from the views of the solution's outputs fails the call (ValueError is the
        task's way to say an output is invalid, say a negative scale; anything else is charged the same
        way, so that odd outputs cannot turn the solution's failure into the task's)."""
        if views is None:
            return outputs
        fn = getattr(self.reference_module, views, None)
        if not callable(fn):
            raise TaskFault(f"the task's reference.py has no function {views!r} (tolerance.views)")
        try:
            values = fn(dict(outputs), inputs)
        except Exception as exc:
            if solution:
                reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                raise TrialFailure("incorrect_numerical", f"the outputs are invalid: {reason}") from None
            raise task_code_failed(f"the task's {views}(...) on the oracle's outputs", exc) from exc
        if not isinstance(values, dict) or not all(isinstance(v, torch.Tensor) for v in values.values()):
            raise TaskFault(f"the task's {views}(...) must return a dict of tensors")
        return values

    def _record(self, max_abs: float, rel: float, bound: float | None) -> None:
        """Keep the call's worst compared value: the largest error relative to its bound (or the largest error)."""
        self.stats.max_abs_err = max(self.stats.max_abs_err or 0.0, max_abs)

        def severity(r: float | None, b: float | None) -> float:
            return -1.0 if r is None else (r / b if b else r)

        if self.stats.rel_err is None or severity(rel, bound) >= severity(self.stats.rel_err, self.stats.bound):
            self.stats.rel_err = rel
            self.stats.bound = bound

    def recheck_kept(self) -> None:
        """Outputs returned earlier must be unchanged by later calls (no recycled output buffers)."""
        try:
            changed, kept = self.solution.recheck()
        except SolutionFailure as failure:
            raise TrialFailure(failure.status, failure.message) from None
        if changed:
            raise TrialFailure(
                "incorrect_numerical", f"{changed} of {kept} earlier outputs changed after later calls (output buffers reused)"
            )

    def check_contract(self, trial: int, slot: int = 0) -> None:
        """Scalars pinned to one value must be validated: any other value raises ValueError."""
        for arg in self.spec.signature.inputs:
            if isinstance(arg, ScalarArg) and arg.value is not None and not isinstance(arg.value, bool):
                self.deliver(slot, trial)
                bad = arg.value + 1
                try:
                    self.solution.call(slot, self.output_specs, override={arg.name: bad})
                except SolutionFailure as failure:
                    if failure.status == "runtime_error" and failure.message.startswith("ValueError"):
                        continue
                    if failure.status not in ("runtime_error", "compile_error"):
                        raise TrialFailure(failure.status, failure.message) from None
                    detail = f"run({arg.name}={bad}) raised {failure.message.split(':')[0]}, expected ValueError"
                else:
                    detail = f"run({arg.name}={bad}) returned; {arg.name} must be {arg.value} (ValueError otherwise)"
                raise TrialFailure("policy_violation", detail, [Violation(rule="contract", detail=detail)])


OVERLAP_SHARE = 0.8  # of the device memory free after a call, what the oracle may need to run during the next ones
MAX_DRAW_PAIRS = 200  # pairs of calls a workload may take to pool a task's min_draws


class TaskFault(Exception):
    """The task's own code (inputs, reference, oracle) failed: never the solution's fault."""


class CheckerOutOfMemory(Exception):
    """The task's code ran out of device memory in the checker while the solution's process was alive.

    Charged to the solution (status runtime_error), not to the task: the task's code fits on the device by
    design, and during an evaluation the solution's process is the only other tenant of the device. A
    solution that hoards device memory could otherwise turn its own failure into the task's fault."""


def task_code_failed(what: str, exc: Exception) -> Exception:
    """The exception to raise when the task's code (`what`) raised `exc` during an evaluation."""
    if isinstance(exc, torch.OutOfMemoryError):
        return CheckerOutOfMemory(
            f"out of device memory in the checker while the solution's process held device memory ({what}{memory_split(exc)}): "
            "the evaluation needs the device's memory for the task's own code as well"
        )
    return TaskFault(f"{what} failed: {type(exc).__name__}: {exc}")


_CAPACITY = re.compile(r"total capacity of ([\d.]+ [GM]iB)")
_THIS = re.compile(r"this process has ([\d.]+ [GM]iB) memory in use")
_OTHERS = re.compile(r"Process \d+ has ([\d.]+ [GM]iB) memory in use")


def memory_split(exc: BaseException) -> str:
    """ "; checker 22.25 GiB, other processes 56.88 GiB, of 79.18 GiB" from a CUDA out-of-memory message ("" where
    it does not say): who held the device's memory when the checker's allocation failed."""
    text = str(exc)
    mine, others, capacity = _THIS.search(text), _OTHERS.findall(text), _CAPACITY.search(text)
    if mine is None or capacity is None:
        return ""
    rest = f", other processes {' + '.join(others)}" if others else ""
    return f"; checker {mine.group(1)}{rest}, of {capacity.group(1)}"


def differing_bits(got: torch.Tensor, want: torch.Tensor) -> int:
    """How many elements of `got` differ from `want` in any bit (the same shape and dtype; else every one)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return want.numel()
    a, b = got.detach().contiguous().cpu(), want.detach().contiguous().cpu()
    if a.element_size() == 1:
        a, b = a.view(torch.uint8), b.view(torch.uint8)
    else:
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        a, b = a.view(bits), b.view(bits)
    return int((a != b).sum())


def clone_each(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """`[t.clone() for t in tensors]` (each a new allocation of its layout, the same bits), the values copied in one
    multi-tensor copy: on a GPU one launch for a list's 10,000 small elements instead of one each."""
    copies = [torch.empty_like(t) for t in tensors]
    if copies:
        torch._foreach_copy_(copies, tensors)
    return copies


def _input_digest(value: Any) -> object:
    """A comparable fingerprint of one made input: a tensor's digest, a list's digests, a scalar itself."""
    if type(value) is torch.Tensor:
        return (tuple(value.shape), value.dtype, digest(value))
    if isinstance(value, (list, tuple)) and all(type(v) is torch.Tensor for v in value):
        return tuple((tuple(v.shape), v.dtype, d) for v, d in zip(value, digest_each(value), strict=True))
    return repr(value)
