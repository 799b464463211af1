"""From the probe's observations of one problem to a task's signature, workloads and runtime map.

Every tensor's dimension becomes, across the observed workloads (the peer's sizes and the reduced CPU ones):
a number where it never changes, a size's name where it always equals that size (`batch_size`, `N`), or an
axis of its own (`out_d2`) whose value each workload states (a convolution's output width, say). A size
that changes but shows in no input's shape is passed to run(...) as an integer carrying that axis. Numbers
among the arguments are pinned where they never change, carry an axis where they always equal one, and
are refused otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.harness.protocol.probe import Observation, TensorInfo
from workbench.importer.analyze import Unsupported, identifier

ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}
RESERVED = {  # names run(...) and the generated reference(...) cannot take: they would shadow what the files use
    "run",
    "torch",
    "triton",
    "tl",
    "min",
    "max",
    "ceil_div",
    "load",
    "device_of",
    "located_sizes",
    "kernelbench_forward",
    "gpumode_reference",
    "problem",
    "args",
    "device",
    "sizes",
    "SPEC",
    "PEER_FILES",
    "workload",
    "seed",
}


@dataclass(frozen=True)
class Observed:
    """The problem at one workload: its name, whether it is a smoke (CPU) workload, its sizes, what the probe saw."""

    name: str
    smoke: bool
    sizes: dict[str, int]
    observation: Observation
    emit: bool = True  # False: a perturbation, which only tells apart sizes equal at every workload


@dataclass
class Inferred:
    inputs: list[dict[str, Any]] = field(default_factory=list)  # task.toml's [[signature.inputs]]
    outputs: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    smoke_workloads: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    runtime: dict[str, Any] = field(default_factory=dict)  # the SPEC the generated files hand the runtime
    result_bytes: str = "0"  # what any honest call must write
    all_bytes: str = "0"  # every input read and every result written


class _Names:
    def __init__(self) -> None:
        self.used: set[str] = set(RESERVED)

    def take(self, wanted: str, avoid: set[str] | None = None) -> str:
        name = identifier(wanted)
        base, n = name, 2
        while name in self.used or name in (avoid or set()):
            name, n = f"{base}_{n}", n + 1
        self.used.add(name)
        return name


def _bytes(shapes: list[tuple[list[str | int], str]]) -> str:
    terms = []
    for dims, dtype in shapes:
        factors = [str(d) for d in dims if d != 1] + [str(ITEMSIZE[dtype])]
        terms.append("*".join(factors))
    return " + ".join(terms) or "0"


class _Dims:
    """Each dimension as a number, a size's name or an axis of its own."""

    def __init__(self, observed: list[Observed], varying: list[str], names: _Names) -> None:
        self.observed = observed
        self.varying = varying
        self.names = names
        self.derived: dict[str, list[int]] = {}
        self.used: set[str] = set()

    def of(self, tensor: str, infos: list[TensorInfo]) -> list[str | int]:
        ranks = {len(i.shape) for i in infos}
        if len(ranks) != 1:
            raise Unsupported("unsupported_inputs", f"{tensor} has another number of dimensions at other sizes")
        dims: list[str | int] = []
        for d in range(ranks.pop()):
            values = [i.shape[d] for i in infos]
            if 0 in values:
                raise Unsupported("unsupported_inputs", f"{tensor} has an empty dimension")
            if len(set(values)) == 1:
                dims.append(values[0])
                continue
            axis = next(
                (a for a in self.varying if [o.sizes[a] for o in self.observed] == values),
                None,
            )
            if axis is None:
                axis = next((a for a, v in self.derived.items() if v == values), None)
            if axis is None:
                axis = self.names.take(f"{tensor}_d{d}", avoid=set(self.varying))
                self.derived[axis] = values
            self.used.add(axis)
            dims.append(axis)
        return dims


def infer(
    observed: list[Observed],
    arg_names: list[str] | None,
    *,
    kind: str,
    mutated: list[str],
    precision: str,
) -> Inferred:
    """The task's signature and workloads from the problem's observations (the registered ones first)."""
    first = observed[0].observation
    kept = observed[:1]
    for other in observed[1:]:
        why = _differs(first, other.observation)
        if why is None:
            kept.append(other)
        elif other.emit:
            raise Unsupported("unsupported_inputs", why)
        # a perturbation that changes the model's structure (a shortcut that exists only where two sizes are
        # equal) tells nothing about which size a dimension follows: it is left out
    observed = kept
    if any(a.kind == "other" for a in first.args):
        bad = next(a.type_name for a in first.args if a.kind == "other")
        raise Unsupported("unsupported_inputs", f"an argument of type {bad} (run(...) takes tensors and numbers)")
    emitted = [o for o in observed if o.emit]
    sizes = sorted(set().union(*(o.sizes for o in emitted)))
    varying = [s for s in sizes if len({o.sizes.get(s) for o in emitted}) > 1 and all(s in o.sizes for o in observed)]
    names = _Names()
    dims = _Dims(observed, varying, names)
    result = Inferred()
    if arg_names is None or len(arg_names) != len(first.args) or len(set(arg_names)) != len(arg_names):
        arg_names = [("data" if kind == "gpumode" else "x") if len(first.args) == 1 else f"x{i}" for i in range(len(first.args))]
    arg_names = [names.take(n) for n in arg_names]
    tensor_dims: dict[str, list[str | int]] = {}
    results: list[tuple[list[str | int], str]] = []
    reads: list[tuple[list[str | int], str]] = []
    for index, (name, value) in enumerate(zip(arg_names, first.args, strict=True)):
        column = [o.observation.args[index] for o in observed]
        if value.kind == "tensor":
            infos = [c.tensor for c in column if c.tensor is not None]
            if {i.dtype for i in infos} != {infos[0].dtype}:
                raise Unsupported("unsupported_inputs", f"{name} changes dtype between sizes")
            shape = dims.of(name, infos)
            tensor_dims[name] = shape
            layout = "contiguous" if all(i.contiguous for i in infos) else "any"
            entry: dict[str, Any] = {"kind": "tensor", "name": name, "dtype": infos[0].dtype, "shape": shape, "layout": layout}
            if kind == "gpumode" and first.alias == index:
                entry["state"] = True
                entry["description"] = "The output buffer: the call writes its result here (in place)."
                results.append((shape, infos[0].dtype))
            reads.append((shape, infos[0].dtype))
            result.inputs.append(entry)
            continue
        values = [c.value for c in column]
        dtype = {"int": "int", "float": "float", "bool": "bool"}[value.kind]
        if len(set(values)) == 1:
            result.inputs.append({"kind": "scalar", "name": name, "dtype": dtype, "value": values[0]})
            continue
        axis = next((a for a in varying if [o.sizes[a] for o in observed] == values), None)
        if value.kind != "int" or axis is None:
            raise Unsupported("unsupported_inputs", f"the number {name} changes with the sizes in a way no axis carries")
        dims.used.add(axis)
        result.inputs.append({"kind": "scalar", "name": name, "dtype": "int", "axis": axis})
    params: dict[str, str] = {}
    held = set(mutated)
    named_tensors = [(path, info) for path, info in first.params] + [(p, i) for p, i in first.buffers if p not in held]
    for path, info in named_tensors:
        name = names.take(path.replace(".", "_"))
        infos = [_named(o.observation, path) for o in observed]
        shape = dims.of(name, infos)
        tensor_dims[name] = shape
        params[name] = path
        reads.append((shape, info.dtype))
        what = "buffer" if any(path == p for p, _ in first.buffers) else "parameter"
        result.inputs.append(
            {
                "kind": "tensor",
                "name": name,
                "dtype": info.dtype,
                "shape": shape,
                "layout": "contiguous",
                "description": f"The model's {what} {path}.",
            }
        )
    out_names: list[str] = []
    if first.alias is None:
        base = "output" if kind == "gpumode" else "out"
        for index in range(len(first.outputs)):
            name = names.take(base if len(first.outputs) == 1 else f"{base}{index}")
            infos = [o.observation.outputs[index] for o in observed]
            if {i.dtype for i in infos} != {infos[0].dtype}:
                raise Unsupported("unsupported_inputs", f"output {name} changes dtype between sizes")
            shape = dims.of(name, infos)
            layout = "contiguous" if all(i.contiguous for i in infos) else "any"
            result.outputs.append({"name": name, "dtype": infos[0].dtype, "shape": shape, "layout": layout, "mode": "return"})
            results.append((shape, infos[0].dtype))
            out_names.append(name)
    # sizes that change but show in no shape still reach the builder: run(...) gets them as integers
    size_args: dict[str, str] = {}
    for axis in varying:
        if axis not in dims.used or (kind == "kernelbench" and not _located(axis, tensor_dims)):
            name = names.take(f"{axis}_size" if axis in names.used else axis)
            result.inputs.append(
                {
                    "kind": "scalar",
                    "name": name,
                    "dtype": "int",
                    "axis": axis,
                    "description": f"The problem's size or shape parameter {axis} (what its input builder is given).",
                }
            )
            size_args[name] = axis
            dims.used.add(axis)
    used = dims.used
    for group, smoke in ((result.workloads, False), (result.smoke_workloads, True)):
        for position, seen in enumerate(observed):
            if seen.emit and seen.smoke == smoke:
                axes = {a: seen.sizes[a] for a in varying if a in used}
                axes |= {a: values[position] for a, values in dims.derived.items()}
                group.append((seen.name, axes))
    result.result_bytes = _bytes(results) if results else "0"
    result.all_bytes = _bytes([*reads, *([] if first.alias is not None else results)])
    result.runtime = {
        "precision": precision,
        "inputs": arg_names,
        "params": params,
        "size_args": size_args,
        "varying": list(varying),
        "locate": {a: list(_located(a, tensor_dims) or ()) for a in varying if a not in size_args.values()},
        "outputs": out_names,
    }
    return result


def _differs(first: Observation, other: Observation) -> str | None:
    """Why `other` is not the same problem as `first` at other sizes (None where it is)."""
    if [a.kind for a in other.args] != [a.kind for a in first.args] or len(other.outputs) != len(first.outputs):
        return "the arguments or outputs change kind or number between sizes"
    if [p[0] for p in other.params] != [p[0] for p in first.params] or other.alias != first.alias:
        return "the model's parameters change between sizes"
    return None


def _named(observation: Observation, path: str) -> TensorInfo:
    for name, info in [*observation.params, *observation.buffers]:
        if name == path:
            return info
    raise Unsupported("unsupported_inputs", f"the model's tensor {path} is missing at other sizes")


def _located(axis: str, tensor_dims: dict[str, list[str | int]]) -> tuple[str, int] | None:
    for name, shape in tensor_dims.items():
        if axis in shape:
            return name, shape.index(axis)
    return None
