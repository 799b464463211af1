"""What a problem's source says without running it: names, sizes, the peer's tolerance (syntax trees only).

- KernelBench: the forward's argument names, the free sizes the input builders use (directly or through the
  module-level names derived from them), and reduced sizes to try for the CPU.
- GPU MODE: the names `ref_kernel` unpacks its data into, the tolerance its `check_implementation` applies, and
  the shapes task.yml lists (benchmarks: the registered workloads; tests: the smoke candidates).
"""

from __future__ import annotations

import ast
import keyword
from typing import Any

from workbench.harness.protocol.peer_source import free_sizes

BUILDERS = ("get_inputs", "get_init_inputs")
SCALE_FROM = 16  # free sizes below this (kernel sizes, strides, groups, dims) keep their value on the CPU
FACTORS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Unsupported(Exception):
    """The problem's source asks for something the task format cannot express."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise Unsupported("does_not_load", f"{filename} line {exc.lineno}: {exc.msg}") from None


def _function(tree: ast.Module | ast.ClassDef, name: str) -> ast.FunctionDef | None:
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return found[-1] if found else None


def forward_names(tree: ast.Module) -> list[str] | None:
    """The names of Model.forward's arguments after self, or None (no such method, or *args)."""
    models = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"]
    forward = _function(models[-1], "forward") if models else None
    if forward is None or forward.args.vararg is not None:
        return None
    return [a.arg for a in [*forward.args.posonlyargs, *forward.args.args]][1:]


def _loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def builder_sizes(tree: ast.Module) -> dict[str, int]:
    """The free sizes (peer_source.free_sizes) that get_inputs and get_init_inputs read, directly or through
    module-level names computed from them, with the module's values."""
    sizes = free_sizes(tree)
    derived: dict[str, set[str]] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                    derived.setdefault(name, set()).update(_loaded_names(statement.value))
    todo: list[str] = []
    for name in BUILDERS:
        function = _function(tree, name)
        if function is not None:
            todo += sorted(_loaded_names(function))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += sorted(derived.get(name, set()) - seen)
    return {name: value for name, value in sizes.items() if name in seen}


def smoke_candidates(sizes: dict[str, int]) -> list[dict[str, int]]:
    """Reduced sizes to try on the CPU, least reduced first: each size of at least SCALE_FROM divided by 2, 4,
    8, ... (at least 1); the smaller sizes kept."""
    scalable = {name: value for name, value in sizes.items() if value >= SCALE_FROM}
    candidates: list[dict[str, int]] = []
    for factor in FACTORS:
        candidate = {name: max(1, value // factor) for name, value in scalable.items()}
        if candidate and candidate not in candidates:
            candidates.append(candidate)
    return candidates or [{}]


def identifier(text: str) -> str:
    """A Python identifier made from `text` (dots and other characters become _; keywords get a trailing _)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in text).strip("_") or "x"
    if name[0].isdigit():
        name = f"x{name}"
    return f"{name}_" if keyword.iskeyword(name) else name


# ---- GPU MODE ---------------------------------------------------------------------------------------------


def data_names(tree: ast.Module) -> list[str] | None:
    """The names ref_kernel unpacks its data into (`a, b, c = data`), or None."""
    function = _function(tree, "ref_kernel")
    if function is None or not function.args.args:
        return None
    data = function.args.args[0].arg
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id == data
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and all(isinstance(e, ast.Name) for e in node.targets[0].elts)
        ):
            return [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
    return None


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _defaults(trees: list[ast.Module], function: str) -> dict[str, Any]:
    """The literal default values of `function`'s arguments where one of the trees defines it."""
    for tree in trees:
        found = _function(tree, function)
        if found is None:
            continue
        args = [*found.args.posonlyargs, *found.args.args]
        values: dict[str, Any] = {}
        for arg, default in zip(args[len(args) - len(found.args.defaults) :], found.args.defaults, strict=True):
            try:
                values[arg.arg] = ast.literal_eval(default)
            except ValueError:
                continue
        for arg, kw_default in zip(found.args.kwonlyargs, found.args.kw_defaults, strict=True):
            if kw_default is not None:
                try:
                    values[arg.arg] = ast.literal_eval(kw_default)
                except ValueError:
                    continue
        return values
    return {}


def _keywords(call: ast.Call) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg in ("atol", "rtol"):
            try:
                found[kw.arg] = float(ast.literal_eval(kw.value))
            except (ValueError, TypeError):
                raise Unsupported("unsupported_checker", f"{kw.arg} is not a number in the checker") from None
    return found


def gpumode_tolerance(sources: dict[str, str]) -> tuple[float, float, str]:
    """(atol, rtol, how it was read) of the problem's check_implementation: `make_match_reference(ref_kernel,
    rtol=..., atol=...)` (defaults: the helper's own), a helper it calls with rtol/atol or one named for closeness
    (`verbose_allclose`; defaults: the helper's own), or an exact comparison (a helper named for equality: 0, 0).
    Anything else (a property check, say sortedness) is a checker the task format cannot express."""
    tree = parse(sources["reference"], "reference.py")
    helpers = [parse(text, f"{name}.py") for name, text in sources.items() if name != "reference"]
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "check_implementation" for t in node.targets):
            if isinstance(node.value, ast.Call) and _call_name(node.value) == "make_match_reference":
                given = _keywords(node.value)
                defaults = _defaults(helpers, "match_reference")
                atol = given.get("atol", defaults.get("atol"))
                rtol = given.get("rtol", defaults.get("rtol"))
                if atol is None or rtol is None:
                    raise Unsupported("unsupported_checker", "make_match_reference's default tolerance is not in the pack")
                return float(atol), float(rtol), "make_match_reference"
            raise Unsupported("unsupported_checker", "check_implementation is not made by make_match_reference")
        if isinstance(node, ast.FunctionDef) and node.name == "check_implementation":
            calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
            for call in calls:  # an allclose-style helper: called with a tolerance, or named for closeness
                name = _call_name(call)
                if any(kw.arg in ("atol", "rtol") for kw in call.keywords) or "close" in name:
                    given = _keywords(call)
                    defaults = _defaults([tree, *helpers], name)
                    atol, rtol = given.get("atol", defaults.get("atol")), given.get("rtol", defaults.get("rtol"))
                    if atol is None or rtol is None:
                        raise Unsupported("unsupported_checker", f"{name}'s tolerance is not in the pack")
                    return float(atol), float(rtol), name
            for call in calls:  # an exact comparison
                name = _call_name(call)
                if "equal" in name:
                    return 0.0, 0.0, name
            raise Unsupported("unsupported_checker", "check_implementation compares in a way other than allclose or equality")
    raise Unsupported("not_a_problem", "reference.py defines no check_implementation")


def gpumode_shapes(manifest: dict[str, object], key: str) -> list[dict[str, Any]]:
    """task.yml's `tests` or `benchmarks` without their seeds (the harness seeds every call), duplicates dropped."""
    entries = manifest.get(key)
    if not isinstance(entries, list) or not entries:
        raise Unsupported("not_a_problem", f"task.yml lists no {key}")
    shapes: list[dict[str, Any]] = []
    for entry in entries:
        if not isinstance(entry, dict) or not all(isinstance(v, (int, float, str, bool)) for v in entry.values()):
            raise Unsupported("unsupported_inputs", f"task.yml's {key} hold an entry that is not a flat mapping: {entry!r:.80}")
        shape = {str(k): v for k, v in entry.items() if k != "seed"}
        if shape not in shapes:
            shapes.append(shape)
    return shapes


def elements_hint(shape: dict[str, Any]) -> int:
    """A size to order test shapes by: the product of their integer parameters."""
    product = 1
    for value in shape.values():
        if type(value) is int and value > 0:
            product *= value
    return product
