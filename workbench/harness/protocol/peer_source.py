"""Reading and re-targeting a peer problem's Python source, without running it (standard library only).

Shared by the importer (which reads a problem's sizes from its source) and the peer runtime (which runs the
problem at a workload's sizes on the harness's device); the importer copies this module's text into every
imported task's reference.py and inputs.py, so it imports nothing but the standard library.

Two rewrites, both on the syntax tree (line numbers kept, so a traceback still points into the peer's file):

- **Sizes**: a module-level name whose every assignment is an integer literal (or arithmetic over integer
  literals: `N = 2048 * 2`, `height = width = 32`, `h, w = 32, 32`) is a *free size*; `with_sizes` sets such
  names to other values, so that everything the module derives from them (`bias_shape = (out_channels, 1, 1)`)
  follows.
- **Device**: a string constant that names a CUDA device (`"cuda"`, `"cuda:0"`) becomes the name
  `DEVICE_NAME`, and `x.cuda()` becomes `x.to(DEVICE_NAME)`, so that a builder written for a GPU runs on the
  harness's device (the CPU under the Triton interpreter, or the evaluation's GPU).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

DEVICE_NAME = "__d2k_device__"
_CUDA = re.compile(r"cuda(:\d+)?")
_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Pow, ast.Mod)


def int_literal(node: ast.expr) -> int | None:
    """The value of an integer literal or of arithmetic over integer literals; None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = int_literal(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _INT_OPS):
        left, right = int_literal(node.left), int_literal(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow) and not 0 <= right <= 64:
            return None
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            return None
        ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}
        ops |= {ast.Pow: int.__pow__, ast.Mod: int.__mod__}
        value = ops[type(node.op)](left, right)
        return value if abs(value) < 2**62 else None
    return None


def _pairs(statement: ast.stmt) -> list[tuple[str, ast.expr]] | None:
    """(name, value) for each name a module-level assignment binds, or None where it binds anything else."""
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
        return [(statement.target.id, statement.value)]
    if not isinstance(statement, ast.Assign):
        return None
    pairs: list[tuple[str, ast.expr]] = []
    for target in statement.targets:
        if isinstance(target, ast.Name):
            pairs.append((target.id, statement.value))
        elif (
            isinstance(target, ast.Tuple)
            and isinstance(statement.value, ast.Tuple)
            and len(target.elts) == len(statement.value.elts)
            and all(isinstance(e, ast.Name) for e in target.elts)
        ):
            pairs += [(e.id, v) for e, v in zip(target.elts, statement.value.elts, strict=True) if isinstance(e, ast.Name)]
        else:
            return None
    return pairs


def _bound_by(statement: ast.stmt) -> set[str]:
    """The module-level names a statement other than a plain assignment binds (functions' own locals aside)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    names: set[str] = set()
    todo: list[ast.AST] = [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        elif isinstance(node, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return names


def free_sizes(tree: ast.Module) -> dict[str, int]:
    """The module's free sizes with the values it gives them (the last assignment's): names bound at module
    level only by integer literals (booleans are not sizes)."""
    values: dict[str, int] = {}
    bound_otherwise: set[str] = set()
    for statement in tree.body:
        pairs = _pairs(statement)
        if pairs is None:
            bound_otherwise |= _bound_by(statement)
            continue
        for name, value in pairs:
            literal = int_literal(value)
            if literal is None:
                bound_otherwise.add(name)
            else:
                values[name] = literal
    return {name: value for name, value in values.items() if name not in bound_otherwise}


class _SetSizes(ast.NodeTransformer):
    def __init__(self, sizes: Mapping[str, int]) -> None:
        self.sizes = sizes

    def visit_Module(self, node: ast.Module) -> ast.Module:
        body: list[ast.stmt] = []
        for statement in node.body:
            pairs = _pairs(statement)
            if pairs is None or not any(name in self.sizes for name, _ in pairs) or any(int_literal(v) is None for _, v in pairs):
                body.append(statement)
                continue
            for name, value in pairs:  # one assignment per name, each at its own value
                new_value: ast.expr = ast.Constant(self.sizes[name]) if name in self.sizes else value
                assign = ast.Assign(targets=[ast.Name(name, ast.Store())], value=new_value)
                body.append(ast.fix_missing_locations(ast.copy_location(assign, statement)))
        node.body = body
        return node


class _OnDevice(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        if isinstance(node.value, str) and _CUDA.fullmatch(node.value):
            return ast.copy_location(ast.Name(DEVICE_NAME, ast.Load()), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and not node.keywords and len(node.args) <= 1:
            moved = ast.Call(ast.Attribute(func.value, "to", ast.Load()), [ast.Name(DEVICE_NAME, ast.Load())], [])
            return ast.fix_missing_locations(ast.copy_location(moved, node))
        return node


def with_sizes(source: str, sizes: Mapping[str, int], filename: str) -> ast.Module:
    """The module's tree with its free sizes set to `sizes` and CUDA device names turned into `DEVICE_NAME`
    (ready for `compile(tree, filename, "exec")`). Raises SyntaxError for a file that does not parse."""
    tree = ast.parse(source, filename=filename)
    unknown = set(sizes) - set(free_sizes(tree))
    if unknown:
        raise ValueError(f"{filename}: {sorted(unknown)} are not free sizes of the module")
    resized: ast.Module = _SetSizes(sizes).visit(tree)
    moved: ast.Module = _OnDevice().visit(resized)
    return ast.fix_missing_locations(moved)
