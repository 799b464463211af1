"""The candidate as the judge is shown it: its code, not what its author says about it, and only code that ran.

    shown = shown_candidate(source, launched)   # launched: workload -> {kernel name: launches in one call}
    shown.text       # what the judge reads, every line where it is in the stored file
    shown.hidden     # spans left out: (first line, last line, why)
    shown.ran_table  # the launch record as the prompt gives it (names as the judge sees them)

Three steps, each removing a channel through which an agent rewarded by the judge's score could talk to it:

1. **Claims** (`claims.without_claims`): comments removed, docstrings emptied, string text replaced.
2. **Names**: every name of more than three characters that the candidate itself binds (functions, kernels,
   classes, parameters, variables, attributes it assigns) is replaced by a neutral one numbered in order of
   first appearance: `kernel_1` for a `@triton.jit` function, `fn_1` for another function, `Class_1`,
   `CONST_1` for an UPPER_CASE name (constants, constexpr parameters), `attr_1` for an attribute it assigns
   and `var_1` for the rest; an import alias becomes the module's usual name (`tl` for triton.language) or
   `module_1`. Kept: names it does not bind (builtins, `torch`, `tl`, `triton`, their
   attributes, Triton's launch options such as `num_warps`), `run` and its parameters (the task's signature
   names them), and short names (`G`, `acc`, `BM`, `pid`: they abbreviate, they cannot argue). An identifier
   such as `square_side_tf32_fused_gram` is a claim like a comment: the code must show it. What is renamed is
   decided by what the candidate binds, never by a list of suspicious words.
3. **Code that never ran**: a module-level function or class that nothing reachable from `run` (or from the
   module's own top-level statements) names is never called; a `@triton.jit` function that the evaluation's
   launch record shows was never launched at any workload, and that no launched kernel calls, never ran on the
   device. Their lines are replaced by one harness note (a comment, so not citable) and blank lines, so a dead
   branch, an unreachable kernel or a copied expert fragment that is never called cannot be credited. Without
   a launch record (older evaluations) only the static part applies.

Line numbers never change, so citations point at the same lines of the stored file; quotes are of the shown
text. Source that does not parse (it could not have passed) is shown with claims removed only.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from workbench.judge.claims import without_claims

ENTRY_POINT = "run"
SHORT = 3  # a name of at most this many characters is kept: it can abbreviate (G, acc, BM, pid) but not claim
# the names code usually gives these modules: an import under another alias is shown under this one (where free)
CONVENTIONAL_ALIASES = {
    "triton.language": "tl",
    "numpy": "np",
    "torch.nn.functional": "F",
    "triton.language.extra.libdevice": "libdevice",
}
PREFIXES = {"kernel": "kernel", "fn": "fn", "Class": "Class", "K": "CONST", "v": "var", "attr": "attr", "alias": "module"}
NOTE = "# [harness: lines {first}-{last}, {what}, are not shown: {why}]"
_UPPER = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_KEPT = frozenset(dir(builtins)) | {"self", "cls"}


@dataclass(frozen=True)
class Hidden:
    first: int
    last: int
    name: str  # as the judge sees it
    why: str


@dataclass(frozen=True)
class ShownCandidate:
    text: str
    names: dict[str, str] = field(default_factory=dict)  # the candidate's name -> the shown name
    hidden: list[Hidden] = field(default_factory=list)
    launched: dict[str, dict[str, int]] = field(default_factory=dict)  # workload -> shown kernel -> launches
    recorded: bool = False  # whether an evaluation's launch record was given

    @property
    def ran_table(self) -> str:
        """The launch record as the prompt shows it."""
        if not self.recorded:
            return "No launch record is stored for this revision: only the static reachability from `run` was applied."
        lines = [
            "Triton kernels one call of `run` launched at each workload of the evaluation (launches per call), "
            "as the harness's launch hook counted them:"
        ]
        for workload, kernels in self.launched.items():
            listed = ", ".join(f"{name} x{count}" for name, count in kernels.items()) or "none"
            lines.append(f"- {workload}: {listed}")
        if self.hidden:
            lines += ["", "Not shown (code that never ran earns nothing):"]
            lines += [f"- lines {h.first}-{h.last}: {h.name}, {h.why}" for h in self.hidden]
        return "\n".join(lines)


def _is_jit(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated with triton.jit (or `jit` imported from triton), possibly under autotune/heuristics."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name == "jit":
            return True
    return False


class _Binder(ast.NodeVisitor):
    """The names the candidate binds, in order of first binding, with their kind."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}
        self.attributes: set[str] = set()
        self.imported: set[str] = set()
        self.alias_paths: dict[str, str] = {}  # a renamed import alias -> what it imports

    def bind(self, name: str, kind: str) -> None:
        if name == ENTRY_POINT or name.startswith("__") or name in _KEPT or len(name) <= SHORT:
            return
        if name not in self.kinds or self.kinds[name] in ("v", "K"):  # a definition's kind wins over a variable's
            self.kinds[name] = kind

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(alias.asname, alias.name.split(".")[0], alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            self._imported(alias.asname, alias.name, f"{node.module}.{alias.name}" if node.module else alias.name)

    def _imported(self, asname: str | None, name: str, path: str) -> None:
        """A module's or a module attribute's own name is kept; an alias is the candidate's choice, a name it
        binds like any other (`import triton.language as square_side_tf32` says nothing about the code)."""
        if asname is None or asname == name or len(asname) <= SHORT:
            self.imported.add(asname or name)
        else:
            self.bind(asname, "alias")
            self.alias_paths[asname] = path

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.bind(node.name, "kernel" if _is_jit(node) else "fn")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bind(node.name, "Class")
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self.bind(node.arg, "K" if _UPPER.match(node.arg) else "v")

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.bind(node.id, "K" if _UPPER.match(node.id) else "v")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.attributes.add(node.attr)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self.bind(name, "K" if _UPPER.match(name) else "v")

    visit_Nonlocal = visit_Global


def neutral_names(tree: ast.Module, binder: _Binder | None = None) -> dict[str, str]:
    """The candidate's bound names -> neutral names (see the module's docstring), numbered per kind in order
    of first binding. `binder`: the tree's names, already collected (else collected here)."""
    if binder is None:
        binder = _Binder()
        binder.visit(tree)
    entry = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == ENTRY_POINT]
    signature = {a.arg for node in entry for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    kept = binder.imported | signature  # an import anywhere keeps the name, and so does the task's signature
    counters: dict[str, int] = {}
    mapping: dict[str, str] = {}
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | binder.imported
    for name, kind in binder.kinds.items():
        if name in kept:
            continue
        conventional = CONVENTIONAL_ALIASES.get(binder.alias_paths.get(name, ""))
        if kind == "alias" and conventional is not None and conventional not in taken:
            mapping[name] = conventional  # a module imported under another name gets its usual one back
            taken.add(conventional)
            continue
        counters[kind] = counters.get(kind, 0) + 1
        mapping[name] = f"{PREFIXES[kind]}_{counters[kind]}"
    for attribute in sorted(binder.attributes):
        if attribute not in mapping and not attribute.startswith("__") and len(attribute) > SHORT:
            counters["attr"] = counters.get("attr", 0) + 1
            mapping[attribute] = f"{PREFIXES['attr']}_{counters['attr']}"
    return mapping


def _own_callee(func: ast.expr, own: Mapping[str, str]) -> bool:
    """Whether a call's callee is the candidate's own function or kernel (`f(...)`, `kernel[grid](...)`)."""
    if isinstance(func, ast.Subscript):
        func = func.value
    return isinstance(func, ast.Name) and func.id in own


def _edits(tree: ast.Module, lines: list[str], own: Mapping[str, str], modules: set[str]) -> list[tuple[int, int, int, str]]:
    """(line, start column, end column, new text) in characters, for every occurrence of a renamed name. An
    attribute is renamed where its name is one the candidate binds (a method, an attribute it assigns), unless
    it is read from an imported module (`tl.program_id` stays whatever the candidate calls its variables)."""
    encoded = [line.encode() for line in lines]

    def char_col(line: int, byte_col: int) -> int:
        return len(encoded[line - 1][:byte_col].decode(errors="replace"))

    edits: list[tuple[int, int, int, str]] = []

    def at(line: int, byte_col: int, name: str) -> None:
        start = char_col(line, byte_col)
        if lines[line - 1][start : start + len(name)] == name:
            edits.append((line, start, start + len(name), own[name]))

    def after_keyword(node: ast.stmt, keyword: str, name: str) -> None:
        text = lines[node.lineno - 1]
        match = re.search(rf"\b{keyword}\s+({re.escape(name)})\b", text)
        if match:
            edits.append((node.lineno, match.start(1), match.end(1), own[name]))

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in own:
            at(node.lineno, node.col_offset, node.id)
        elif isinstance(node, ast.arg) and node.arg in own:
            at(node.lineno, node.col_offset, node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in own:
            after_keyword(node, "def", node.name)
        elif isinstance(node, ast.ClassDef) and node.name in own:
            after_keyword(node, "class", node.name)
        elif isinstance(node, ast.Attribute) and node.attr in own and node.end_lineno and node.end_col_offset:
            if not (isinstance(node.value, ast.Name) and node.value.id in modules):
                byte_start = node.end_col_offset - len(node.attr.encode())
                at(node.end_lineno, byte_start, node.attr)
        elif isinstance(node, ast.alias) and node.asname is not None and node.asname in own:
            begin = char_col(node.lineno, node.col_offset)
            match = re.search(rf"\bas\s+({re.escape(node.asname)})\b", lines[node.lineno - 1][begin:])
            if match:
                edits.append((node.lineno, begin + match.start(1), begin + match.end(1), own[node.asname]))
        elif isinstance(node, ast.Call) and _own_callee(node.func, own):
            for keyword in node.keywords:
                if keyword.arg is not None and keyword.arg in own:
                    at(keyword.lineno, keyword.col_offset, keyword.arg)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                if name in own:
                    after_keyword(node, "global" if isinstance(node, ast.Global) else "nonlocal", name)
    return edits


def _referenced(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _closure(start: set[str], defs: Mapping[str, ast.AST], within: set[str]) -> set[str]:
    """`start` and every definition of `within` that the definitions reached name, transitively."""
    reached: set[str] = set()
    frontier = list(start)
    while frontier:
        name = frontier.pop()
        if name not in reached:
            reached.add(name)
            frontier += [n for n in _referenced(defs[name]) if n in within and n not in reached]
    return reached


def _never_ran(tree: ast.Module, launched: set[str] | None) -> list[tuple[ast.stmt, str, str]]:
    """Module-level definitions that never ran: (node, its name, why)."""
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = {}
    roots: set[str] = {ENTRY_POINT}
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defs[statement.name] = statement
            for decorator in statement.decorator_list:
                roots |= _referenced(decorator)
        else:
            roots |= _referenced(statement)
    kernels = {name for name, node in defs.items() if not isinstance(node, ast.ClassDef) and _is_jit(node)}
    # what `run` and the module's statements name, and what those name in turn (kernels' bodies included)
    reached = _closure(roots & set(defs), defs, set(defs))
    dead: list[tuple[ast.stmt, str, str]] = [
        (node, name, "never called: nothing reachable from run names it") for name, node in defs.items() if name not in reached
    ]
    if launched is not None:  # on the device: kernels launched, and the jit functions they call
        ran = _closure(kernels & launched, defs, kernels)
        dead += [
            (defs[name], name, "a Triton function never launched at any workload, nor called by a launched kernel")
            for name in sorted(kernels & reached - ran)
        ]
    return sorted(dead, key=lambda item: item[0].lineno)


def shown_candidate(source: str, launched: Mapping[str, Mapping[str, int]] | None = None) -> ShownCandidate:
    """The candidate's `source` as the judge is shown it (see the module's docstring). `launched`: per
    workload, the launches of each Triton kernel in one call (the evaluation's record); None: no record."""
    text = without_claims(source)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ShownCandidate(text=text)
    binder = _Binder()
    binder.visit(tree)
    own = neutral_names(tree, binder)
    lines = text.splitlines()
    for line, start, end, new in sorted(_edits(tree, lines, own, binder.imported), reverse=True):
        lines[line - 1] = lines[line - 1][:start] + new + lines[line - 1][end:]
    everything_launched = {name for kernels in (launched or {}).values() for name in kernels}
    hidden: list[Hidden] = []
    for node, name, why in _never_ran(tree, everything_launched if launched is not None else None):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])  # type: ignore[attr-defined]
        last = node.end_lineno or node.lineno
        shown = own.get(name, name)
        indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
        what = f"{'kernel' if shown.startswith('kernel_') else 'definition'} {shown}"
        lines[first - 1 : last] = [indent + NOTE.format(first=first, last=last, what=what, why=why)] + [""] * (last - first)
        hidden.append(Hidden(first, last, shown, why))
    shown_launched = {
        workload: {own.get(name, name): count for name, count in kernels.items()}
        for workload, kernels in (launched or {}).items()
    }
    return ShownCandidate(
        text="\n".join(lines) + ("\n" if text.endswith("\n") else ""),
        names=own,
        hidden=hidden,
        launched=shown_launched,
        recorded=launched is not None,
    )
