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

from workbench.harness.protocol.peer_source import free_sizes, int_literal

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
    """Reduced sizes to try on the CPU, in order of preference: each size of at least SCALE_FROM divided by 2,
    4, 8, ... (at least 1), the smaller sizes kept; then the same with one of those sizes kept at its own value
    (a problem's own constraint, `out_channels` a multiple of `num_groups`, may hold only there), the one kept
    smallest first. Every candidate names the same sizes."""
    scalable = {name: value for name, value in sizes.items() if value >= SCALE_FROM}
    candidates: list[dict[str, int]] = []
    kept_orders: list[str | None] = [None, *sorted(scalable, key=lambda n: (scalable[n], n))] if len(scalable) > 1 else [None]
    for kept in kept_orders:
        for factor in FACTORS:
            candidate = {name: value if name == kept else max(1, value // factor) for name, value in scalable.items()}
            if candidate and candidate not in candidates and candidate != scalable:
                candidates.append(candidate)
    return candidates or [{}]


def named_tuple_sizes(source: str) -> tuple[str, dict[str, str]]:
    """The problem's text with the integers of its module-level shape tuples named, so that they are free sizes
    and scale with the others: `input_shape = (32768,)` becomes `input_shape_0 = 32768; input_shape =
    (input_shape_0,)` on the same line (line numbers kept). Only a tuple or list of integer literals, one of
    them at least SCALE_FROM, bound once to one name, is rewritten. Returns the text and {new name: tuple}."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, {}
    bound: dict[str, int] = {}
    for statement in tree.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound[node.id] = bound.get(node.id, 0) + 1
    taken = set(bound) | _loaded_names(tree)
    edits: list[tuple[int, int, int, int, str]] = []  # (line, col, end line, end col, text), 1-based lines
    prefixes: dict[int, list[str]] = {}
    named: dict[str, str] = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)):
            continue
        name, value = statement.targets[0].id, statement.value
        if bound.get(name) != 1 or not isinstance(value, (ast.Tuple, ast.List)) or not value.elts:
            continue
        numbers = [int_literal(e) for e in value.elts]
        if any(n is None for n in numbers) or max(n or 0 for n in numbers) < SCALE_FROM:
            continue
        for index, (element, number) in enumerate(zip(value.elts, numbers, strict=True)):
            new = f"{name}_{index}"
            while new in taken:
                new += "_"
            taken.add(new)
            named[new] = name
            prefixes.setdefault(statement.lineno, []).append(f"{new} = {number}; ")
            assert element.end_lineno is not None and element.end_col_offset is not None
            edits.append((element.lineno, element.col_offset, element.end_lineno, element.end_col_offset, new))
    if not edits:
        return source, {}
    lines = source.splitlines(keepends=True)
    for line, col, end_line, end_col, text in sorted(edits, reverse=True):
        first, last = lines[line - 1].encode(), lines[end_line - 1].encode()  # ast offsets count UTF-8 bytes
        if line == end_line:
            lines[line - 1] = (first[:col] + text.encode() + first[end_col:]).decode()
        else:
            lines[line - 1] = (first[:col] + text.encode()).decode() + "\n"
            for k in range(line, end_line - 1):
                lines[k] = "\n"
            lines[end_line - 1] = last[end_col:].decode()
    for line, texts in prefixes.items():
        lines[line - 1] = "".join(texts) + lines[line - 1]
    return "".join(lines), named


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


RANK_WORDS = ("world_size", "rank", "num_ranks", "ranks")


def multi_rank(manifest: dict[str, object], tree: ast.Module) -> str | None:
    """Why the problem runs on several ranks at once (GPU MODE's distributed problems), or None: task.yml's
    `multi_gpu: true`, a `world_size` among its shapes' parameters, or a rank among generate_input's arguments.
    run(...) is one call in one process on one device, so such a problem is not a task of this format."""
    found: list[str] = []
    if manifest.get("multi_gpu") is True:
        found.append("task.yml sets multi_gpu: true")
    shapes = [e for key in ("tests", "benchmarks") for e in (manifest.get(key) or []) if isinstance(e, dict)]  # type: ignore[attr-defined]
    sizes = sorted({f"{w} = {e[w]!r}" for e in shapes for w in RANK_WORDS if w in e})
    if sizes:
        found.append(f"its shapes set {', '.join(sizes[:3])}")
    function = _function(tree, "generate_input")
    if function is not None:
        args = [a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]]
        ranks = [a for a in args if a in RANK_WORDS]
        if ranks:
            found.append(f"generate_input takes {' and '.join(ranks)} (reference.py, line {function.lineno}: )")
    if not found:
        return None
    return "runs on several ranks: " + "; ".join(found)
