"""Arithmetic over named axes, as written in task files: shapes, FLOP and byte formulas, constraints.

Only numbers, axis names, + - * / // % **, unary minus, parentheses, comparisons (in constraints)
and the functions min, max and ceil_div are accepted; anything else is rejected when the task is
loaded, so a task file can never run code.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "ceil_div": lambda a, b: -(-a // b),
}


class ExpressionError(ValueError):
    """An expression that uses something outside the small arithmetic language."""


def parse(text: str, *, allow_compare: bool = False) -> ast.expr:
    """Parse and check an expression; raise ExpressionError with the reason."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not an arithmetic expression: {text!r} ({exc.msg})") from None
    _check(tree.body, text, allow_compare)
    return tree.body


def _check(node: ast.AST, text: str, allow_compare: bool) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"only numbers may appear as constants in {text!r}")
    elif isinstance(node, ast.Name):
        pass
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, text, allow_compare)
        _check(node.right, text, allow_compare)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check(node.operand, text, allow_compare)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords or not node.args:
            raise ExpressionError(f"{node.func.id}() takes positional arguments in {text!r}")
        for arg in node.args:
            _check(arg, text, allow_compare)
    elif allow_compare and isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        _check(node.left, text, allow_compare)
        for comparator in node.comparators:
            _check(comparator, text, allow_compare)
    else:
        raise ExpressionError(f"unsupported syntax {ast.unparse(node)!r} in {text!r}")


def names(text: str, *, allow_compare: bool = False) -> set[str]:
    """The axis names an expression refers to."""
    tree = parse(text, allow_compare=allow_compare)
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return found - set(_FUNCTIONS)


def evaluate(text: str, env: Mapping[str, int | float], *, allow_compare: bool = False) -> float:
    """Evaluate an expression with axis values from env."""
    return _eval(parse(text, allow_compare=allow_compare), env, text)


def _eval(node: ast.AST, env: Mapping[str, int | float], text: str) -> float:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExpressionError(f"{text!r}: only numbers may appear as constants")
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExpressionError(f"unknown axis {node.id!r} in {text!r}")
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, env, text), _eval(node.right, env, text))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env, text)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return _FUNCTIONS[node.func.id](*(_eval(a, env, text) for a in node.args))
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, text)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _eval(comparator, env, text)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise ExpressionError(f"unsupported syntax in {text!r}")
