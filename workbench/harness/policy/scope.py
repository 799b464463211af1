"""Where a name is bound and what an expression denotes, for the policy checker.

Scopes decide whether a builtin's name is the builtin; ``Names`` resolves an expression to the dotted path
it denotes (following aliases); ``Ownership`` tells the file's own objects from values that may be library
objects, so that name rules apply only where a receiver can be a library object.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from workbench.harness.policy.rules import MAX_PATH_DEPTH

# ---------------------------------------------------------------------------------------------------
# Scopes: where a name is bound, so that builtins are refused only where they are the builtin
# ---------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Scope:
    kind: str  # "module", "class" or "function" (def, lambda, comprehension)
    parent: Scope | None
    comprehension: bool = False
    bound: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` read here may be the builtin (module and class level: always)."""
        if self.kind != "function" or name in self.globals:
            return True
        if name in self.bound or name in self.nonlocals:
            return False
        scope = self.parent
        while scope is not None and scope.kind != "module":
            if scope.kind == "function":
                if name in scope.globals:
                    return True
                if name in scope.bound or name in scope.nonlocals:
                    return False
            scope = scope.parent
        return True

    def binds_module_level(self, name: str) -> bool:
        return self.kind == "module" or (self.kind == "function" and name in self.globals)


@dataclass(frozen=True, eq=False)
class Binding:
    name: str
    kind: str  # "assign", "param", "def", "class", "import", "other"
    node: ast.AST  # where, for the line
    scope: Scope


class ScopeBuilder(ast.NodeVisitor):
    """One pass that records every binding, the scope of every name, imports and simple aliases."""

    def __init__(self) -> None:
        self.module = Scope("module", None)
        self.scope = self.module
        self.name_scope: dict[ast.Name, Scope] = {}
        self.bindings: list[Binding] = []
        self.imports: dict[str, set[str]] = {}  # local name -> dotted paths it was imported as
        self.assignments: list[tuple[str, ast.expr]] = []  # name = value, for aliases
        self.decorated: set[str] = set()  # functions with decorators (library objects once decorated)
        self.methods: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, Scope]] = []  # defs in class bodies
        self.class_scopes: dict[ast.ClassDef, Scope] = {}  # each class statement's body scope

    def _bind(self, name: str, kind: str, node: ast.AST, scope: Scope | None = None) -> None:
        scope = scope or self.scope
        scope.bound.add(name)
        self.bindings.append(Binding(name, kind, node, scope))

    def _push(self, kind: str, comprehension: bool = False) -> Scope:
        self.scope = Scope(kind, self.scope, comprehension)
        return self.scope

    def _pop(self) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent

    def visit_Name(self, node: ast.Name) -> None:
        self.name_scope[node] = self.scope
        if not isinstance(node.ctx, ast.Load):
            self._bind(node.id, "assign" if isinstance(node.ctx, ast.Store) else "other", node)

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.nonlocals.update(node.names)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            self.imports.setdefault(local, set()).add(alias.name if alias.asname else local)
            self._bind(local, "import", node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                continue
            local = alias.asname or alias.name
            if not node.level and node.module:
                self.imports.setdefault(local, set()).add(f"{node.module}.{alias.name}")
            self._bind(local, "import", node)

    def _record_assignment(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.assignments.append((target.id, value))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            for sub_target, sub_value in zip(target.elts, value.elts, strict=False):
                self._record_assignment(sub_target, sub_value)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._record_assignment(target, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._record_assignment(node.target, node.value)
        self.generic_visit(node)

    def _record_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        """``for t in (torch.Tensor, ...)``: t may be any element of a literal sequence."""
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            for element in iterable.elts:
                self._record_assignment(target, element)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._record_loop(node.target, node.iter)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._record_assignment(node.target, node.value)
        scope = self.scope
        while scope.comprehension and scope.parent is not None:  # binds in the enclosing function
            scope = scope.parent
        self.name_scope[node.target] = self.scope
        self._bind(node.target.id, "assign", node.target, scope)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name, "other", node)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self._bind(node.name, "other", node)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name, "other", node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self._bind(node.rest, "other", node)
        self.generic_visit(node)

    def _visit_signature(self, args: ast.arguments) -> None:
        """Defaults and annotations are evaluated in the enclosing scope."""
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.visit(default)
        for arg in _all_args(args):
            if arg.annotation is not None:
                self.visit(arg.annotation)
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=False):
            self.assignments.append((arg.arg, default))
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
            if kw_default is not None:
                self.assignments.append((arg.arg, kw_default))

    def _bind_params(self, args: ast.arguments) -> None:
        for arg in _all_args(args):
            self._bind(arg.arg, "param", arg)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._bind(node.name, "def", node)
        if node.decorator_list:
            self.decorated.add(node.name)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._visit_signature(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        in_class = self.scope.kind == "class"
        scope = self._push("function")
        if in_class:
            self.methods.append((node, scope))
        self._bind_params(node.args)
        for statement in node.body:
            self.visit(statement)
        self._pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_signature(node.args)
        self._push("function")
        self._bind_params(node.args)
        self.visit(node.body)
        self._pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name, "class", node)
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        self.class_scopes[node] = self._push("class")
        for statement in node.body:
            self.visit(statement)
        self._pop()

    def _visit_comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        first = node.generators[0]
        self.visit(first.iter)  # the first iterable is evaluated in the enclosing scope
        self._push("function", comprehension=True)
        for generator in node.generators:
            self._record_loop(generator.target, generator.iter)
            self.visit(generator.target)
            if generator is not first:
                self.visit(generator.iter)
            for condition in generator.ifs:
                self.visit(condition)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self._pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension


def is_isinstance_call(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass")


def annotated_names(body: list[ast.stmt]) -> set[str]:
    """Names annotated in a class body (its fields), in nested blocks too but not in nested defs."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.expr)):
            stack.extend(ast.iter_child_nodes(node))
    return names


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


# ---------------------------------------------------------------------------------------------------
# Names: what an expression denotes
# ---------------------------------------------------------------------------------------------------


def _chain(node: ast.AST) -> tuple[str, list[str]] | None:
    """``a.b.c`` -> ("a", ["b", "c"]); None when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node.id, parts[::-1]
    return None


class Names:
    """Local names bound to library paths (imports and simple aliases), and the file's own defs."""

    def __init__(self, scopes: ScopeBuilder) -> None:
        self.aliases: dict[str, set[str]] = {name: set(paths) for name, paths in scopes.imports.items()}
        self._propagate(scopes.assignments)
        kinds: dict[str, set[str]] = {}
        for binding in scopes.bindings:
            kinds.setdefault(binding.name, set()).add(binding.kind)
        self.bound_anywhere = frozenset(kinds)
        self.local_functions = frozenset(n for n, k in kinds.items() if k == {"def"} and n not in self.aliases)
        self.local_classes = frozenset(n for n, k in kinds.items() if k == {"class"} and n not in self.aliases)
        self.decorated_functions = frozenset(scopes.decorated)

    def _propagate(self, assignments: list[tuple[str, ast.expr]], rounds: int = 8) -> None:
        """Follow ``b = a = torch.Tensor`` chains (bounded: ``t = t.x`` would grow forever)."""
        for _ in range(rounds):
            changed = False
            for name, value in assignments:
                new = {p for p in self.resolve(value) if p.count(".") < MAX_PATH_DEPTH}
                new -= self.aliases.get(name, set())
                if new:
                    self.aliases.setdefault(name, set()).update(new)
                    changed = True
            if not changed:
                return

    def resolve(self, node: ast.AST) -> list[str]:
        """The dotted library paths a name or attribute chain may denote ([] when it is not a library's)."""
        chain = _chain(node)
        if chain is None:
            return []
        root, rest = chain
        return sorted(".".join([path, *rest]) for path in self.aliases.get(root, ()))


class Ownership:
    """Which receivers are this file's own objects, whose attributes are free.

    Own: an instance of one of the file's classes (a name every binding of which is ``C(...)``), the
    class itself, ``cls`` in a classmethod, and ``self`` in a method that cannot be handed a foreign
    ``self``: one with no decorators but property/classmethod/cached_property, whose name is never read
    through a class or an object that may not be an own instance (``C.f(tensor)``, ``type(x).f``) nor
    used as a value in the class body. Everything else may be a library object.
    """

    def __init__(self, tree: ast.Module, scopes: ScopeBuilder, names: Names) -> None:
        self.scopes = scopes
        self.names = names
        self.classes = names.local_classes
        own = {b.name for b in scopes.bindings if b.scope.kind == "class"}
        own.update(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load))
        self.names_defined = frozenset(own)
        kinds: dict[str, set[str]] = {}
        counts: dict[tuple[int, str], int] = {}
        for binding in scopes.bindings:
            kinds.setdefault(binding.name, set()).add(binding.kind)
            key = (id(binding.scope), binding.name)
            counts[key] = counts.get(key, 0) + 1
        self.counts = counts
        values: dict[str, list[ast.expr]] = {}
        for name, value in scopes.assignments:
            values.setdefault(name, []).append(value)
        total = {name: sum(1 for b in scopes.bindings if b.name == name) for name in values}
        self.instances = frozenset(
            name
            for name, assigned in values.items()
            if kinds.get(name) == {"assign"} and total[name] == len(assigned) and all(map(self._constructs, assigned))
        )
        self.candidates: dict[int, tuple[str, str]] = {}  # method scope -> (method name, self parameter)
        self.class_params: dict[int, str] = {}  # classmethod scope -> cls parameter
        self.scope_of: dict[int, Scope] = {}
        for func, scope in scopes.methods:
            self._add_method(func, scope)
        self.trusted = self._fixed_point(tree)

    def _constructs(self, value: ast.expr) -> bool:
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.classes

    def _add_method(self, func: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope) -> None:
        params = [*func.args.posonlyargs, *func.args.args]
        if not params:
            return
        plain = True
        decorators: set[str] = set()
        for decorator in func.decorator_list:
            if isinstance(decorator, ast.Name) and decorator.id in ("property", "classmethod", "staticmethod"):
                plain = plain and decorator.id not in self.names.bound_anywhere
                decorators.add(decorator.id)
            elif isinstance(decorator, ast.Attribute) and decorator.attr in ("setter", "getter", "deleter"):
                continue
            elif self.names.resolve(decorator) != ["functools.cached_property"]:
                plain = False
        if "staticmethod" in decorators:
            return
        self.scope_of[id(scope)] = scope
        if "classmethod" in decorators:
            self.class_params[id(scope)] = params[0].arg
        elif plain:
            self.candidates[id(scope)] = (func.name, params[0].arg)

    def _binding_scope(self, node: ast.Name) -> Scope | None:
        scope = self.scopes.name_scope.get(node)
        first = True
        while scope is not None:
            if node.id in scope.globals:
                return self.scopes.module
            if node.id in scope.bound and (scope.kind != "class" or first):
                return scope
            first = False
            scope = scope.parent
        return None

    def _bound_once(self, scope: Scope, name: str) -> bool:
        return self.counts.get((id(scope), name), 0) == 1

    def _is_instance(self, value: ast.expr, trusted: set[int]) -> bool:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            if value.args or value.keywords or "super" in self.names.bound_anywhere:
                return False
            scope = self.scopes.name_scope.get(value.func)
            while scope is not None and id(scope) not in self.candidates:
                scope = scope.parent
            return scope is not None and id(scope) in trusted
        if not isinstance(value, ast.Name):
            return False
        if value.id in self.instances:
            return True
        scope = self._binding_scope(value)
        if scope is None or id(scope) not in trusted:
            return False
        return self.candidates[id(scope)][1] == value.id and self._bound_once(scope, value.id)

    def _is_class(self, value: ast.expr) -> bool:
        if not isinstance(value, ast.Name):
            return False
        if value.id in self.classes:
            return True
        scope = self._binding_scope(value)
        return scope is not None and self.class_params.get(id(scope)) == value.id and self._bound_once(scope, value.id)

    def _fixed_point(self, tree: ast.Module) -> set[int]:
        by_name: dict[str, list[ast.Attribute]] = {}
        class_loads: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                by_name.setdefault(node.attr, []).append(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                scope = self.scopes.name_scope.get(node)
                if scope is not None and scope.kind == "class":
                    class_loads.add(node.id)
        trusted = set(self.candidates)
        changed = True
        while changed:
            changed = False
            for key in sorted(trusted):
                name = self.candidates[key][0]
                if name in class_loads or not all(self._is_instance(a.value, trusted) for a in by_name.get(name, [])):
                    trusted.discard(key)
                    changed = True
        return trusted

    def is_class(self, value: ast.expr) -> bool:
        """Whether ``value`` is certainly one of this file's class objects (``C``, ``cls``)."""
        return self._is_class(value)

    def is_own(self, value: ast.expr) -> bool:
        """Whether ``value`` (the receiver of an attribute) is certainly this file's own object."""
        return self._is_instance(value, self.trusted) or self._is_class(value)
