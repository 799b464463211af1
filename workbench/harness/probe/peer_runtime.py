"""The runtime of imported peer problems: a KernelBench or GPU MODE problem's own code, run at a workload's
sizes on the harness's device from the harness's seed (standard library and torch only).

The importer copies this module's text (after peer_source.py's) into each imported task's reference.py and
inputs.py, which hold the peer's files as strings; the probe worker imports it. Nothing here changes torch or
the process's state beyond the call: the random generators are forked around every draw, and the peer's
modules live under private names, with their own `import` for their sibling files (GPU MODE's `utils` and
`task`).

- **Seeds.** The builder runs with torch's global generator seeded from the harness's seed (`peer_seed`); a
  KernelBench model's weights come from a second seed derived from it, so inputs and weights are different
  draws. GPU MODE's `generate_input(..., seed=...)` gets the same seed.
- **Uninitialised memory.** Tensors a builder allocates without values (`torch.empty` and its kin) are filled
  with NaN (floating dtypes) or the dtype's largest value, so that every input is a function of the seed (an
  output buffer that a correct call overwrites keeps no stale values of an earlier call).
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import os
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from workbench.harness.protocol.peer_source import DEVICE_NAME, with_sizes  # (not embedded)

_EMPTY_FACTORIES = {
    torch.empty,
    torch.empty_like,
    torch.empty_strided,
    torch.Tensor.new_empty,
    torch.Tensor.new_empty_strided,
}
_LOADED: dict[tuple[Any, ...], types.ModuleType] = {}
_MODELS: dict[tuple[Any, ...], torch.nn.Module] = {}
PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def fill_unset(tensor: torch.Tensor) -> None:
    """Fill a tensor made without values: NaN for floating dtypes, the largest value for integers, True for bool."""
    if tensor.device.type == "meta" or tensor.numel() == 0:
        return
    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).max)


class FilledEmpty(TorchFunctionMode):
    """While active, `torch.empty` and its kin return filled tensors (`fill_unset`)."""

    def __torch_function__(
        self, func: Any, types: Sequence[type], args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        if func in _EMPTY_FACTORIES and isinstance(out, torch.Tensor):
            fill_unset(out)
        return out


def peer_seed(seed: int, stream: str = "inputs") -> int:
    """A seed for the peer's code (31 bits, as the peers' own seeds are) drawn from the harness's seed."""
    digest = hashlib.sha256(f"{int(seed)}:{stream}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFF_FFFF


@contextlib.contextmanager
def forked_rng(device: torch.device) -> Iterator[None]:
    """The global generators (the CPU's, and the device's on a GPU) as they were, once the block ends."""
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices, device_type="cuda"):
        yield


def load(sources: Mapping[str, str], main: str, sizes: Mapping[str, int], device: str | torch.device) -> types.ModuleType:
    """The peer's module `main` run with its free sizes at `sizes` and CUDA device names turned into `device`;
    its sibling modules (`sources`' other entries) are what its `import` statements find first. Cached per
    sources, sizes and device."""
    key = (hash(tuple(sorted(sources.items()))), main, tuple(sorted(sizes.items())), str(device))
    if key in _LOADED:
        return _LOADED[key]
    modules: dict[str, types.ModuleType] = {}
    real_import = builtins.__import__
    number = len(_LOADED)

    def private_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Sequence[str] = (), level: int = 0
    ) -> types.ModuleType:
        if level == 0 and name in sources and name != main:
            return module(name)
        return real_import(name, globals, locals, fromlist, level)

    own_builtins = dict(vars(builtins))
    own_builtins["__import__"] = private_import

    def module(name: str) -> types.ModuleType:
        if name not in modules:
            mod = types.ModuleType(f"_d2k_peer_{number}_{name}")
            mod.__dict__["__builtins__"] = own_builtins
            mod.__dict__[DEVICE_NAME] = str(device)
            mod.__file__ = f"{name}.py"
            modules[name] = mod
            sys.modules[mod.__name__] = mod  # dataclasses and typing look a class's module up by name
            tree = with_sizes(sources[name], sizes if name == main else {}, f"{name}.py")
            exec(compile(tree, f"{name}.py", "exec"), mod.__dict__)  # the peer's own file, as imported
        return modules[name]

    if torch.device(device).type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # GPU MODE references ask for deterministic ops
    loaded = module(main)
    _LOADED[key] = loaded
    return loaded


def cast(value: Any, precision: str) -> Any:
    """A floating tensor in the task's precision (KernelBench's fp32, fp16 or bf16); anything else as it is."""
    if isinstance(value, torch.Tensor) and value.is_floating_point() and precision in PRECISIONS:
        return value.to(PRECISIONS[precision])
    return value


# ---- KernelBench: Model(*get_init_inputs()), get_inputs() -------------------------------------------------


def kernelbench_parts(problem: types.ModuleType, seed: int, device: str | torch.device) -> tuple[list[Any], torch.nn.Module]:
    """get_inputs() and the Model, as the problem makes them on `device`: inputs from one seed, then the init
    inputs and the model's weights from another."""
    dev = torch.device(device)
    with forked_rng(dev), dev, FilledEmpty():
        torch.manual_seed(peer_seed(seed))
        args = list(problem.get_inputs())
        torch.manual_seed(peer_seed(seed, "weights"))
        model = problem.Model(*problem.get_init_inputs())
    return args, model


def module_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's parameters and buffers by their dotted names."""
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def kernelbench_inputs(
    problem: types.ModuleType, spec: Mapping[str, Any], workload: Mapping[str, int], seed: int, device: str | torch.device
) -> dict[str, Any]:
    """run(...)'s arguments: get_inputs()'s values under their names, the model's weights (and the buffers it
    reads) as tensors, and the sizes passed as integers."""
    args, model = kernelbench_parts(problem, seed, device)
    precision = str(spec["precision"])
    named: dict[str, Any] = {name: cast(value, precision) for name, value in zip(spec["inputs"], args, strict=True)}
    tensors = module_tensors(model)
    for name, path in spec["params"].items():
        named[name] = cast(tensors[path].detach(), precision).contiguous()
    for name, axis in spec["size_args"].items():
        named[name] = int(workload[axis])
    return named


def kernelbench_forward(
    problem: types.ModuleType, spec: Mapping[str, Any], args: Mapping[str, Any], device: str | torch.device
) -> Any:
    """Model.forward on `args`, with the weights `args` carries in place of the model's own."""
    dev = torch.device(device)
    key = (id(problem), str(dev), str(spec["precision"]))
    model = _MODELS.get(key)
    if model is None:
        with forked_rng(dev), dev:
            model = problem.Model(*problem.get_init_inputs())
        if spec["precision"] in PRECISIONS:
            model = model.to(PRECISIONS[str(spec["precision"])])
        _MODELS[key] = model
    weights = {path: args[name] for name, path in spec["params"].items()}
    with torch.no_grad():
        return torch.func.functional_call(model, weights, tuple(args[name] for name in spec["inputs"]), strict=False)


def located_sizes(spec: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, int]:
    """The problem's varying sizes read back from the arguments: a dimension of an input that shows the size,
    or the integer argument that carries it."""
    sizes = {axis: int(args[name].shape[dim]) for axis, (name, dim) in spec["locate"].items()}
    sizes.update({axis: int(args[name]) for name, axis in spec["size_args"].items()})
    return sizes


# ---- GPU MODE: generate_input(**shape, seed), ref_kernel(data) -------------------------------------------


def gpumode_data(
    problem: types.ModuleType, spec: Mapping[str, Any], workload: Mapping[str, int], seed: int, device: str | torch.device
) -> Any:
    """generate_input(...)'s data for the workload, from the harness's seed."""
    dev = torch.device(device)
    params = {**spec["fixed"], **{name: int(workload[name]) for name in spec["axis_params"]}}
    with forked_rng(dev), dev, FilledEmpty():
        torch.manual_seed(peer_seed(seed))
        return problem.generate_input(**params, seed=peer_seed(seed))


def gpumode_inputs(
    problem: types.ModuleType, spec: Mapping[str, Any], workload: Mapping[str, int], seed: int, device: str | torch.device
) -> dict[str, Any]:
    """run(...)'s arguments: the data's elements under their names, and the shape's integers it carries."""
    data = gpumode_data(problem, spec, workload, seed, device)
    names = list(spec["data"])
    named = {names[0]: data} if spec["single"] else dict(zip(names, data, strict=True))
    for name, axis in spec["size_args"].items():
        named[name] = int(workload[axis])
    return named


def gpumode_reference(problem: types.ModuleType, spec: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    """ref_kernel(data) on the data rebuilt from `args`: its result, or None where it writes the data's output
    buffer (a state input of the task)."""
    names = list(spec["data"])
    data = args[names[0]] if spec["single"] else tuple(args[name] for name in names)
    out = problem.ref_kernel(data)
    return None if spec["state"] is not None else out
