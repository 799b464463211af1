"""Static policy: read the solution's source (AST) before it is imported and name what it may not use.

An adversarial agent writes ``solution.py``. This check refuses, by class of attack rather than by
instance, the constructs that let a solution escape the sandbox, fool the checker or the timer, or
compute anywhere but in Triton kernels. The runtime guard catches what slips past (torch compute,
patched timers, missing launches); this check gives early, line-precise reasons.

How names are read: resolve, then allow. Every ``from X import Y`` and every attribute chain rooted at
an imported name is resolved to the dotted path it denotes (``import os as o; o.system`` ->
``os.system``; names assigned from such chains, loop variables over literal tuples and parameter
defaults follow) and checked by one function, ``path_rule``, against the allow-list
(``workbench/harness/policy/allow.toml``, resolved to objects in the installed torch and Triton by
``workbench.harness.policy.generate`` into ``resolved.json``): a path off the list is refused whatever
object it denotes, so a re-export cannot launder one. An attribute of a value that may be a library
object (a parameter, a call's result) must be allowed on library values (``object_attribute_rule``);
on the file's own objects (``self`` in its own methods, its classes, names bound only to ``C(...)``:
``Ownership``) the names its classes define are free. Builtins are refused only where the name is the
builtin: a parameter or local named ``input`` or ``compile`` is fine; at module and class level a name
is always taken as the builtin (a module-level rebinding is refused too: ``del`` could restore it).

The rules (tables and the path judgement) are in ``rules.py``; where names are bound and what an
expression denotes, in ``scope.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TypeGuard

from workbench.harness.policy.allowlist import load as load_allowlist
from workbench.harness.policy.rules import (
    ALLOWED_DUNDER_METHODS,
    ALLOWED_DUNDER_STRINGS,
    ALLOWED_IMPORTS,
    BUILTIN_NAMES,
    DECORATOR_ONLY,
    FORBIDDEN_NAMES,
    FORBIDDEN_STRINGS,
    FORMAT_METHODS,
    FORMATTING_BUILTINS,
    HOOK_CALLS,
    HOOK_KEYWORDS,
    KEYWORD_RULES,
    LEGACY_TENSOR_CONSTRUCTOR,
    MATCH_SELF_BUILTINS,
    METACLASS_ATTRIBUTES,
    PLAIN_ATTRIBUTES,
    PLAIN_BUILTIN_CALLS,
    PLAIN_LIBRARY_CALLS,
    PLAIN_METHODS,
    PLAIN_WHEN_ARGUMENTS_ARE,
    RULE_REASONS,
    SAFE_BUILTIN_BASES,
    SAFE_LIBRARY_BASES,
    TORCH_HOOKS,
    VALUE_BASE_ATTRIBUTES,
    VALUE_BUILTIN_BASES,
    VALUE_CLASS_DUNDERS,
    VALUE_LIBRARY_BASES,
    Finding,
    dunders_in,
    field_reads_attribute,
    format_fields,
    is_dunder,
    is_module_path,
    object_attribute_rule,
    own_attribute_rule,
    path_rule,
    short,
)
from workbench.harness.policy.scope import (
    Binding,
    Names,
    Ownership,
    Scope,
    ScopeBuilder,
    annotated_names,
    is_isinstance_call,
)
from workbench.harness.protocol.report import Violation

# ---------------------------------------------------------------------------------------------------
# The checker
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    line: int
    col: int
    rule: str
    detail: str


class _Checker(ast.NodeVisitor):
    def __init__(self, tree: ast.Module) -> None:
        self.scopes = ScopeBuilder()
        self.scopes.visit(tree)
        self.names = Names(self.scopes)
        self.own = Ownership(tree, self.scopes, self.names)
        self.parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.classes: dict[str, list[ast.ClassDef]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, []).append(node)
        self.class_bindings: dict[ast.ClassDef, list[Binding]] = {node: [] for node in self.scopes.class_scopes}
        class_of_scope = {id(scope): node for node, scope in self.scopes.class_scopes.items()}
        for binding in self.scopes.bindings:
            if id(binding.scope) in class_of_scope:
                self.class_bindings[class_of_scope[id(binding.scope)]].append(binding)
        self.annotations = {annotation for node in ast.walk(tree) for annotation in _annotations(node)}
        self.string_names: frozenset[str] = frozenset()
        self.string_names = self._string_names()
        self.found: list[_Found] = []

    # -- reporting -----------------------------------------------------------------------------------
    def flag(self, rule: str, detail: str, node: ast.AST) -> None:
        self.found.append(_Found(getattr(node, "lineno", 0), getattr(node, "col_offset", 0), rule, detail))

    def violations(self) -> list[Violation]:
        seen: set[tuple[str, int]] = set()
        out: list[Violation] = []
        for item in sorted(self.found, key=lambda f: (f.line, f.col)):
            if (item.rule, item.line) not in seen:
                seen.add((item.rule, item.line))
                out.append(Violation(rule=item.rule, detail=item.detail, line=item.line or None))
        return out

    def check_bindings(self) -> None:
        """Module-level rebinding of refused builtins, and dunder names bound anywhere."""
        for binding in self.scopes.bindings:
            name = binding.name
            if name in FORBIDDEN_NAMES and binding.scope.binds_module_level(name):
                self.flag(FORBIDDEN_NAMES[name], f"rebinding {name} at module level is not allowed", binding.node)
            if binding.kind != "param" and is_dunder(name):
                self._check_dunder_binding(name, binding.kind, binding.node)

    def _check_dunder_binding(self, name: str, kind: str, node: ast.AST) -> None:
        allowed = ALLOWED_DUNDER_METHODS if kind == "def" else ALLOWED_DUNDER_STRINGS
        if name in TORCH_HOOKS:
            self.flag("tensor_subclass", f"defining {name} is not allowed (torch function/dispatch hook)", node)
        elif name not in allowed:
            self.flag(FORBIDDEN_NAMES.get(name, "introspection"), f"defining {name} is not allowed", node)

    # -- qualified names -----------------------------------------------------------------------------
    def _check_path(self, path: str, node: ast.AST, *, imported: bool = False) -> bool:
        """Flag a library path; False when refused. Uses of a refused import are not flagged again."""
        if not imported and path.split(".", maxsplit=1)[0] not in ALLOWED_IMPORTS:
            return False
        found = path_rule(path)
        if found is not None:
            self.flag(found[0], found[1], node)
            return False
        return True

    def _is_value_use(self, node: ast.AST) -> bool:
        """Whether a name or chain is used as an object (not as ``x.attr``, ``x[i]``, ``x(...)`` or in a test)."""
        parent = self.parents.get(node)
        if isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
            return False
        if isinstance(parent, ast.Call) and parent.func is node:
            return False
        return not isinstance(parent, ast.Compare)

    def _in_decorator_position(self, node: ast.AST, max_args: int) -> bool:
        parent = self.parents.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            if len(parent.args) > max_args or any(isinstance(a, ast.Starred) for a in parent.args):
                return False
            node, parent = parent, self.parents.get(parent)
        decorated = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        return isinstance(parent, decorated) and any(d is node for d in parent.decorator_list)

    def _check_reference(self, node: ast.Name | ast.Attribute) -> None:
        """A library name or chain in Load context: its path, and how the object is used."""
        for path in self.names.resolve(node):
            if not self._check_path(path, node):
                continue
            if path in DECORATOR_ONLY and self._is_decorator_only_misuse(node, path):
                self.flag("monkeypatch", f"{path} may only be used as a decorator of this file's classes", node)
            elif is_module_path(path) and self._is_value_use(node):
                self.flag("module_alias", f"{path} may only be used as {path}.name, not as a value", node)

    def _is_decorator_only_misuse(self, node: ast.AST, path: str) -> bool:
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return False  # a member of it, checked on its own
        return not self._in_decorator_position(node, DECORATOR_ONLY[path])

    # -- names ---------------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            scope = self.scopes.name_scope.get(node, self.scopes.module)
            if is_dunder(node.id):
                self._check_dunder_load(node)
            elif node.id in FORMATTING_BUILTINS and scope.is_builtin(node.id):
                self.flag("python_compute", f"{node.id} is not allowed (it formats values as text: {FORMATTING_WHY})", node)
            elif node.id in FORBIDDEN_NAMES and scope.is_builtin(node.id):
                rule = FORBIDDEN_NAMES[node.id]
                self.flag(rule, f"{node.id} is not allowed ({RULE_REASONS[rule]})", node)
            elif node.id == "str" and scope.is_builtin(node.id):
                self._check_str_as_value(node)
            elif self._is_builtin_type(node):
                self._check_type_as_value(node)
            elif scope.is_builtin(node.id) and node.id not in self.names.bound_anywhere and node.id not in BUILTIN_NAMES:
                self.flag("undefined_name", f"{node.id} is not allowed ({RULE_REASONS['undefined_name']})", node)
            self._check_reference(node)

    def _check_dunder_load(self, node: ast.Name) -> None:
        if node.id in TORCH_HOOKS:
            self.flag("tensor_subclass", f"{node.id} is not allowed", node)
        elif node.id not in ALLOWED_DUNDER_STRINGS:
            self.flag(FORBIDDEN_NAMES.get(node.id, "introspection"), f"{node.id} is not allowed", node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        paths = self.names.resolve(node)
        parent = self.parents.get(node)
        if paths and isinstance(parent, ast.Attribute) and parent.value is node:
            pass  # the whole chain is checked once, at its end (its first refused name says why)
        elif paths:
            if isinstance(node.ctx, ast.Load):
                self._check_reference(node)
            else:
                for path in paths:
                    self._check_path(path, node)
        else:
            self._check_receiver(node)
        if not isinstance(node.ctx, ast.Load):
            self._check_store_target(node)
        self.generic_visit(node)

    def _check_receiver(self, node: ast.Attribute) -> None:
        """``x.name`` where ``x`` is not a library path: free on the file's own objects, judged by the
        allow-list's attribute names wherever ``x`` may be a library object."""
        name, own = node.attr, self.own.names_defined
        if name in FORMAT_METHODS:
            self._check_format_receiver(node)
        if name in METACLASS_ATTRIBUTES and self.own.is_class(node.value):
            rule = object_attribute_rule(name)  # the metaclass's (C.mro, C._convert_): a library name
        elif self.own.is_own(node.value):
            rule = own_attribute_rule(name) if name in own else object_attribute_rule(name, own)
        else:
            rule = object_attribute_rule(name, own)
            if rule is None and not isinstance(node.ctx, ast.Load) and name in load_allowlist().library:
                rule = "monkeypatch"
        if rule is not None:
            self.flag(rule, f".{name} is not allowed on {short(node.value, 30)} ({RULE_REASONS[rule]})", node)

    def _check_format_receiver(self, node: ast.Attribute) -> None:
        """``"{0.x}".format(v)`` reads ``v.x``: fields are checked on string literals, refused elsewhere."""
        receiver = node.value
        if not (isinstance(receiver, ast.Constant) and isinstance(receiver.value, str)):
            self.flag("introspection", f".{node.attr} is allowed only on a string literal (its fields walk attributes)", node)
            return
        parent = self.parents.get(node)
        if not (isinstance(parent, ast.Call) and parent.func is node):
            self.flag("python_compute", f".{node.attr} may only be called on a string literal, not handed around", node)
        fields = format_fields(receiver.value)
        if fields is None:
            self.flag("introspection", f"malformed format string {short(receiver, 40)}", node)
        elif any(field_reads_attribute(f) for f in fields):
            field = next(f for f in fields if field_reads_attribute(f))
            self.flag("introspection", f"format field {{{field}}} reads an attribute (use an f-string)", node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._check_store_target(node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        """Names used as strings (dict keys of a namespace or of a module's globals)."""
        text = node.value
        if isinstance(text, bytes):
            text = text.decode("latin-1")
        if not isinstance(text, str):
            return
        for name in sorted(dunders_in(text)):  # anywhere in the string: format fields, keys, pieces
            if name in TORCH_HOOKS:
                self.flag("tensor_subclass", f"the string {short(node, 40)} is not allowed ({name}: torch hook)", node)
            elif name not in ALLOWED_DUNDER_STRINGS:
                rule = FORBIDDEN_NAMES.get(name, "introspection")
                self.flag(rule, f"the string {short(node, 40)} is not allowed (holds {name})", node)
        if text in FORBIDDEN_STRINGS:
            rule = FORBIDDEN_NAMES[text]
            self.flag(rule, f"the string {text!r} is not allowed (names a builtin: {RULE_REASONS[rule]})", node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        """``case C(attr=x)`` reads ``x.attr``: the same names as attributes. ``case C(x, y)`` reads the
        attributes named by ``C.__match_args__``: only where they are known and pass the same rules."""
        for name in node.kwd_attrs:
            rule = object_attribute_rule(name, self.own.names_defined)
            if rule is not None:
                self.flag(rule, f"pattern attribute {name}= is not allowed ({RULE_REASONS[rule]})", node)
        if node.patterns:
            found = self._positional_pattern_rule(node)
            if found is not None:
                self.flag(found[0], f"case {short(node.cls)}(...) with positional sub-patterns: {found[1]}", node)
        self.generic_visit(node)

    def _positional_pattern_rule(self, node: ast.MatchClass) -> Finding | None:
        cls = node.cls
        if isinstance(cls, ast.Name) and cls.id in MATCH_SELF_BUILTINS and cls.id not in self.names.bound_anywhere:
            if len(node.patterns) == 1:
                return None
            return "introspection", f"{cls.id}(...) takes one sub-pattern (the whole subject)"
        fields = self._match_fields(cls.id, set()) if isinstance(cls, ast.Name) else None
        if fields is None:
            return "introspection", (
                "allowed only for builtin types and this file's dataclasses and NamedTuples "
                "(they read the attributes __match_args__ names)"
            )
        for name in sorted(fields):
            rule = object_attribute_rule(name, self.own.names_defined)
            if rule is not None:
                return rule, f"reads field {name} ({RULE_REASONS[rule]})"
        return None

    def _match_fields(self, name: str, seen: set[str]) -> set[str] | None:
        """The names ``__match_args__`` can hold for this file's class ``name``: the annotated names of
        every definition of it and of its bases (None: not only dataclasses and NamedTuples of the file)."""
        definitions = self.classes.get(name, [])
        if name in seen or name not in self.names.local_classes or not definitions:
            return None
        seen = seen | {name}
        fields: set[str] = set()
        for definition in definitions:
            bases = [self.names.resolve(b.value if isinstance(b, ast.Subscript) else b) for b in definition.bases]
            named_tuple = any(paths == ["typing.NamedTuple"] for paths in bases)
            decorated = any(
                self.names.resolve(d.func if isinstance(d, ast.Call) else d) == ["dataclasses.dataclass"]
                for d in definition.decorator_list
            )
            if not (named_tuple or decorated) or definition.keywords:
                return None
            fields.update(annotated_names(definition.body))
            for base, paths in zip(definition.bases, bases, strict=True):
                if paths in (["typing.NamedTuple"], ["typing.Generic"]):
                    continue
                inherited = self._match_fields(base.id, seen) if isinstance(base, ast.Name) else None
                if inherited is None:
                    return None
                fields.update(inherited)
        return fields

    # -- imports -------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_path(alias.name, node, imported=True)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag("import", "relative imports are not allowed", node)
            return
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                self.flag("import", f"from {module} import * is not allowed", node)
            else:
                self._check_path(f"{module}.{alias.name}", node, imported=True)

    # -- assignments into libraries ------------------------------------------------------------------
    def _check_store_target(self, target: ast.Attribute | ast.Subscript) -> None:
        root: ast.AST = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        text = short(target)
        if isinstance(root, ast.Name):
            if self.names.resolve(root):
                self.flag("monkeypatch", f"assigning to {text} changes a library object", target)
            elif root.id in self.names.decorated_functions:
                self.flag("monkeypatch", f"assigning to {text} changes a decorated (library) function", target)
        elif isinstance(target, ast.Attribute):
            self.flag("monkeypatch", f"assigning to {text} is not allowed (attribute of a computed object)", target)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr in HOOK_KEYWORDS:
                self._check_hook(target.attr, node.value)
        self.generic_visit(node)

    # -- definitions ---------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self._check_base(base)
        if node.keywords:
            self.flag("tensor_subclass", f"class keywords ({node.keywords[0].arg or '**'}=...) are not allowed", node)
        self._check_host_callbacks(node)
        self.generic_visit(node)

    def _check_host_callbacks(self, node: ast.ClassDef) -> None:
        """A class the harness may read or format with its base's code (a list, a tuple, an exception, a
        NamedTuple, an enum) binds no dunder but __init__/__post_init__ and no name its base has, nor
        inherits one from this file's classes: the host would run the solution's code after the window."""
        bases = self._value_bases(node, frozenset({node.name}))
        if not bases:
            return
        base, how = bases[0]
        names = frozenset().union(*(VALUE_BASE_ATTRIBUTES[b] for b, _ in bases))
        members = any(b.startswith("enum.") for b, _ in bases)  # an enum's class attributes are its members
        fields = any(b == "typing.NamedTuple" for b, _ in bases)  # a NamedTuple's defaults are no class attributes
        for binding in self.class_bindings.get(node, []):
            if self._is_host_callback(binding, names, members, fields):
                detail = f"class {node.name} derives from {base}{how} and defines {binding.name}: {HOST_CALLBACK_WHY}"
                self.flag("host_callback", detail, binding.node)
        for ancestor in self._local_ancestors(node, {node.name}):
            for binding in self.class_bindings.get(ancestor, []):
                if self._is_host_callback(binding, names, members, fields):
                    detail = (
                        f"class {node.name} derives from {base}{how} and inherits {binding.name} from "
                        f"{ancestor.name}: {HOST_CALLBACK_WHY}"
                    )
                    self.flag("host_callback", detail, node)

    def _is_host_callback(self, binding: Binding, names: frozenset[str], members: bool, fields: bool) -> bool:
        """Whether a name bound in a class body can be a method the host calls: a dunder (but __init__,
        __post_init__ and data names) or a name of the base type (``args``, ``index``) bound other than as
        an enum member or a field that leaves no class attribute (``index: int``)."""
        if is_dunder(binding.name):
            return binding.name not in VALUE_CLASS_DUNDERS
        if binding.name not in names:
            return False
        if binding.kind == "def":
            return True
        statement = self.parents.get(binding.node)
        field = isinstance(statement, ast.AnnAssign) and (statement.value is None or fields)
        return not (field or members)

    def _class_base_names(self, node: ast.ClassDef) -> list[tuple[ast.expr, list[str]]]:
        out = []
        for base in node.bases:
            expr = base.value if isinstance(base, ast.Subscript) else base
            out.append((expr, self.names.resolve(expr)))
        return out

    def _value_bases(self, node: ast.ClassDef, seen: frozenset[str]) -> list[tuple[str, str]]:
        """The builtin (but object), NamedTuple and enum bases of a class, directly or through this file's
        classes: (base, how it is reached)."""
        found: list[tuple[str, str]] = []
        for expr, paths in self._class_base_names(node):
            found.extend((path, "") for path in paths if path in VALUE_LIBRARY_BASES)
            if paths or not isinstance(expr, ast.Name):
                continue
            if expr.id in VALUE_BUILTIN_BASES and expr.id not in self.names.bound_anywhere:
                found.append((expr.id, ""))
            elif expr.id in self.names.local_classes and expr.id not in seen:
                for definition in self.classes.get(expr.id, []):
                    inherited = self._value_bases(definition, seen | {expr.id})
                    found.extend((base, how or f" (through {expr.id})") for base, how in inherited)
        return found

    def _local_ancestors(self, node: ast.ClassDef, seen: set[str]) -> list[ast.ClassDef]:
        """Every definition of this file's classes that ``node`` derives from, however far up."""
        found: list[ast.ClassDef] = []
        for expr, paths in self._class_base_names(node):
            if paths or not isinstance(expr, ast.Name) or expr.id not in self.names.local_classes or expr.id in seen:
                continue
            seen.add(expr.id)
            for definition in self.classes.get(expr.id, []):
                found.append(definition)
                found.extend(self._local_ancestors(definition, seen))
        return found

    def _check_base(self, base: ast.expr) -> None:
        expr = base.value if isinstance(base, ast.Subscript) else base
        paths = self.names.resolve(expr)
        for path in paths:
            if path not in SAFE_LIBRARY_BASES:
                allowed = ", ".join(sorted(SAFE_LIBRARY_BASES))
                self.flag("tensor_subclass", f"subclassing {path} is not allowed (library bases: {allowed})", base)
        if paths:
            return
        if isinstance(expr, ast.Name) and (
            expr.id in self.names.local_classes or (expr.id in SAFE_BUILTIN_BASES and expr.id not in self.names.bound_anywhere)
        ):
            return
        self.flag(
            "tensor_subclass",
            f"class base {short(base)} is not allowed (only this file's classes, builtin types, NamedTuple, Generic, enums)",
            base,
        )

    # -- values formatted as text --------------------------------------------------------------------
    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        self._check_formatted(node.value, "an f-string field")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Mod) and self._stringy(node.left):
            self._check_percent_operands(node.right)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.Mod) and self._stringy(node.target):
            self._check_percent_operands(node.value)
        self.generic_visit(node)

    def _check_percent_operands(self, right: ast.expr) -> None:
        if isinstance(right, ast.Tuple):
            operands = right.elts
        elif isinstance(right, ast.Dict):
            operands = right.values
        else:
            operands = [right]
        for operand in operands:
            self._check_formatted(operand, "%-formatting")

    def _check_formatting_call(self, node: ast.Call) -> None:
        """``str(x)`` and ``"...".format(x)``/``.format_map({...})``: their arguments become text."""
        func = node.func
        if isinstance(func, ast.Name) and func.id == "str" and self._scope_of(func).is_builtin("str"):
            for arg in node.args[:1]:
                self._check_formatted(arg, "str(...)")
            for keyword in node.keywords:
                self._check_formatted(keyword.value, "str(...)")
        elif isinstance(func, ast.Attribute) and func.attr in FORMAT_METHODS and _is_str_literal(func.value):
            arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
            if func.attr == "format_map" and len(node.args) == 1 and isinstance(node.args[0], ast.Dict):
                arguments = list(node.args[0].values)
            for arg in arguments:
                self._check_formatted(arg, f".{func.attr}(...)")

    def _check_str_as_value(self, node: ast.Name) -> None:
        """``str`` handed to other code (``map(str, xs)``) formats what it is given: only called on a value
        judged like any formatted one, tested against, or named in types and annotations."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return
        if isinstance(parent, ast.Tuple):  # isinstance(x, (str, int)), dict[str, int]
            parent = self.parents.get(parent)
        if isinstance(parent, ast.Call) and is_isinstance_call(parent):
            return
        if isinstance(parent, (ast.Attribute, ast.Compare, ast.Subscript, ast.ClassDef, ast.MatchClass)):
            return
        if self._in_annotation(node):
            return
        if self._is_lazy_call(parent) and node is parent.args[0] and self._in_raise(node):
            return  # ", ".join(map(str, shape)) in an error message
        self.flag(
            "python_compute",
            f"str may only be called or named as a type, not handed around (map(str, xs) formats what it is given: "
            f"{FORMATTING_WHY})",
            node,
        )

    def _check_formatted(self, value: ast.expr, how: str) -> None:
        if self._plain(value) or self._in_raise(value):
            return
        self.flag(
            "python_compute",
            f"formatting {short(value, 30)} as text ({how}) outside a raise statement is not allowed "
            f"({FORMATTING_WHY}); format only shapes, dtypes, sizes and constants (names only in a raise statement's message)",
            value,
        )

    def _in_raise(self, node: ast.AST) -> bool:
        """Inside the expression of a ``raise`` statement (an error message), evaluated there: not in a
        lambda, a generator or a ``map`` (stored and run later), unless the generator or map is handed
        straight to a string's join (or to tuple, list, sorted)."""
        child, parent = node, self.parents.get(node)
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.Lambda):
                return False
            if (isinstance(parent, ast.GeneratorExp) or self._is_lazy_call(parent)) and not self._joined_at_once(parent):
                return False
            child, parent = parent, self.parents.get(parent)
        return isinstance(parent, ast.Raise) and child in (parent.exc, parent.cause)

    def _is_lazy_call(self, node: ast.AST | None) -> TypeGuard[ast.Call]:
        """``map(f, xs)``/``filter(f, xs)``: f runs when the iterator is read, wherever that is."""
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("map", "filter")
            and self._scope_of(node.func).is_builtin(node.func.id)
        )

    def _joined_at_once(self, node: ast.AST) -> bool:
        call = self.parents.get(node)
        if not (isinstance(call, ast.Call) and call.args == [node] and not call.keywords):
            return False
        func = call.func
        if isinstance(func, ast.Attribute):
            return func.attr == "join" and _is_str_literal(func.value)
        return isinstance(func, ast.Name) and func.id in ("tuple", "list", "sorted") and self._is_builtin_name(func)

    def _in_annotation(self, node: ast.AST) -> bool:
        current: ast.AST | None = node
        while current is not None and not isinstance(current, ast.stmt):
            if current in self.annotations:
                return True
            current = self.parents.get(current)
        return False

    def _scope_of(self, node: ast.Name) -> Scope:
        return self.scopes.name_scope.get(node, self.scopes.module)

    def _is_builtin_name(self, node: ast.Name) -> bool:
        """The builtin for certain: not bound anywhere in the file (a rebinding could return a tensor)."""
        return self._scope_of(node).is_builtin(node.id) and node.id not in self.names.bound_anywhere

    def _plain(self, node: ast.expr) -> bool:
        """Whether a value is plainly not a tensor: constants, sizes, dtypes and devices, and what is built
        from them (a name is never plain: it can hold a tensor)."""
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            return True
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(self._plain(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is not None and self._plain(k) for k in node.keys) and all(map(self._plain, node.values))
        if isinstance(node, ast.Starred):
            return self._plain(node.value)
        if isinstance(node, ast.UnaryOp):
            return self._plain(node.operand)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mod) and self._stringy(node.left):
                return True  # a string (its operands are judged on their own)
            return self._plain(node.left) and self._plain(node.right)
        if isinstance(node, ast.BoolOp):
            return all(map(self._plain, node.values))
        if isinstance(node, ast.Compare):
            return self._plain(node.left) and all(map(self._plain, node.comparators))
        if isinstance(node, ast.IfExp):
            return self._plain(node.body) and self._plain(node.orelse)
        if isinstance(node, ast.Subscript):
            return self._plain(node.value)
        if isinstance(node, ast.Attribute):
            return self._plain_attribute(node)
        if isinstance(node, ast.Call):
            return self._plain_call(node)
        return False

    def _plain_attribute(self, node: ast.Attribute) -> bool:
        if node.attr in self.own.names_defined:
            return False  # the file's own objects may hold anything under that name
        if node.attr in PLAIN_ATTRIBUTES:
            return True
        return node.attr == "value" and self._constant_enum_member(node.value)

    def _constant_enum_member(self, node: ast.expr) -> bool:
        """``E.A`` where E is this file's enum whose member values are all constants."""
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            return False
        name = node.value.id
        definitions = self.classes.get(name, [])
        if name not in self.names.local_classes or not definitions:
            return False
        for definition in definitions:
            if not any(base.startswith("enum.") for base, _ in self._value_bases(definition, frozenset({name}))):
                return False
            for statement in definition.body:
                value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
                if value is not None and not self._immutable_constant(value):
                    return False
        return True

    def _immutable_constant(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.UnaryOp):
            return self._immutable_constant(node.operand)
        if isinstance(node, ast.Tuple):
            return all(map(self._immutable_constant, node.elts))
        return isinstance(node, ast.Call) and not node.args and self.names.resolve(node.func) == ["enum.auto"]

    def _plain_call(self, node: ast.Call) -> bool:
        func = node.func
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        if isinstance(func, ast.Name):
            if not self._is_builtin_name(func):
                return False
            if func.id in PLAIN_BUILTIN_CALLS:
                return True
            return func.id in PLAIN_WHEN_ARGUMENTS_ARE and all(map(self._plain, arguments))
        if isinstance(func, ast.Attribute) and not self.names.resolve(func):
            if func.attr in PLAIN_METHODS and func.attr not in self.own.names_defined:
                return True  # x.size(0), x.numel()
            return self._stringy(func.value)  # "x".join(...), "{}".format(...): text
        paths = self.names.resolve(func)
        library = paths and all(p.startswith(PLAIN_LIBRARY_CALLS) for p in paths)
        return bool(library) and all(map(self._plain, arguments))

    def _stringy(self, node: ast.expr) -> bool:
        """Whether a value is plainly a string (the left side of ``%`` that formats)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (str, bytes))
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)):
            return self._stringy(node.left) or self._stringy(node.right)
        if isinstance(node, ast.IfExp):
            return self._stringy(node.body) or self._stringy(node.orelse)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                return func.id == "str" and self._scope_of(func).is_builtin("str")
            return isinstance(func, ast.Attribute) and self._stringy(func.value)
        return isinstance(node, ast.Name) and node.id in self.string_names

    def _string_names(self) -> frozenset[str]:
        """Names every binding of which is an assignment of a string (``FMT = "%s"``)."""
        values: dict[str, list[ast.expr]] = {}
        for name, value in self.scopes.assignments:
            values.setdefault(name, []).append(value)
        counts: dict[str, int] = {}
        for binding in self.scopes.bindings:
            counts[binding.name] = counts.get(binding.name, 0) + 1
        extended: dict[str, int] = {}  # s += "...", s %= x: a string stays a string
        for node in self.parents:
            if not (isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Mult, ast.Mod))):
                continue
            if isinstance(node.target, ast.Name):
                extended[node.target.id] = extended.get(node.target.id, 0) + 1
        while True:
            found = frozenset(
                name
                for name, assigned in values.items()
                if counts.get(name) == len(assigned) + extended.get(name, 0) and all(map(self._stringy, assigned))
            )
            if found == self.string_names:
                return found
            self.string_names = found

    # -- calls ---------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        self._check_type_call(node)
        self._check_formatting_call(node)
        for keyword in node.keywords:
            self._check_keyword(keyword)
        for path in self.names.resolve(node.func):
            self._check_library_call(path, node)
        self.generic_visit(node)

    def _is_builtin_type(self, node: ast.AST) -> bool:
        if not (isinstance(node, ast.Name) and node.id == "type"):
            return False
        return self.scopes.name_scope.get(node, self.scopes.module).is_builtin("type")

    def _check_type_call(self, node: ast.Call) -> None:
        """``type(name, bases, namespace)`` and ``type(x)(name, bases, namespace)`` build classes."""
        func = node.func
        many = len(node.args) > 1 or node.keywords or any(isinstance(a, ast.Starred) for a in node.args)
        if self._is_builtin_type(func) and many:
            self.flag("dynamic_code", "type(name, bases, namespace) is not allowed (builds a class)", node)
        elif isinstance(func, ast.Call) and self._is_builtin_type(func.func) and len(node.args + node.keywords) > 2:
            self.flag("dynamic_code", "type(x)(name, bases, namespace) is not allowed (builds a class)", node)

    def _check_type_as_value(self, node: ast.Name) -> None:
        """``type`` itself may be called or tested against, not handed around (``t = type``)."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Call) and (parent.func is node or is_isinstance_call(parent)):
            return
        grandparent = self.parents.get(parent) if isinstance(parent, ast.Tuple) else None
        if isinstance(grandparent, ast.Call) and is_isinstance_call(grandparent):
            return
        if not isinstance(parent, ast.Compare):
            self.flag("dynamic_code", "type may only be called as type(x), not used as a value", node)

    def _check_keyword(self, keyword: ast.keyword) -> None:
        if keyword.arg is None:  # **{...}: the literal keys count as keywords
            if isinstance(keyword.value, ast.Dict):
                for key, value in zip(keyword.value.keys, keyword.value.values, strict=False):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        self._check_keyword(
                            ast.keyword(arg=key.value, value=value, lineno=value.lineno, col_offset=value.col_offset)
                        )
            return
        if keyword.arg in HOOK_KEYWORDS:
            self._check_hook(keyword.arg, keyword.value)
        if keyword.arg in KEYWORD_RULES:
            rule = KEYWORD_RULES[keyword.arg]
            self.flag(rule, f"{keyword.arg}= is not allowed ({RULE_REASONS[rule]})", keyword.value)
        if is_dunder(keyword.arg):
            rule = "tensor_subclass" if keyword.arg in TORCH_HOOKS else "introspection"
            self.flag(rule, f"keyword {keyword.arg}= is not allowed", keyword.value)

    def _is_honest_hook(self, value: ast.expr) -> bool:
        if isinstance(value, (ast.Lambda, ast.Constant)):
            return True
        if isinstance(value, ast.Name):
            return value.id in self.names.local_functions
        if isinstance(value, ast.Dict):
            return all(v is not None and self._is_honest_hook(v) for v in value.values)
        if isinstance(value, (ast.List, ast.Tuple)):
            return all(self._is_honest_hook(e) for e in value.elts)
        return False

    def _check_hook(self, name: str, value: ast.expr) -> None:
        if not self._is_honest_hook(value):
            self.flag(
                "torch_compute",
                f"{name}={short(value)} is not allowed (hooks must be lambdas or functions defined in this file)",
                value,
            )

    def _check_library_call(self, path: str, node: ast.Call) -> None:
        if path in HOOK_CALLS:
            first, keywords = HOOK_CALLS[path]
            for i, arg in enumerate(node.args[first:], start=first):
                self._check_hook(f"{path} argument {i + 1}", arg)
            for keyword in node.keywords:
                if keyword.arg in keywords:
                    self._check_hook(keyword.arg, keyword.value)
        if path == "functools.wraps" and (len(node.args) > 1 or node.keywords):
            self.flag("introspection", "functools.wraps with assigned/updated names is not allowed", node)
        if path.startswith("enum.") and any(k.arg == "type" for k in node.keywords):
            self.flag("tensor_subclass", f"{path}(..., type=...) is not allowed (mixes a type into a class)", node)
        if LEGACY_TENSOR_CONSTRUCTOR.fullmatch(path):
            self.flag("python_compute", f"{path}(...) is not allowed (builds a tensor from Python values)", node)


FORMATTING_WHY = "a tensor formatted to text reads its values on the host"
HOST_CALLBACK_WHY = (
    "the harness reads what run returns and formats what it raises, and runs none of the solution's methods "
    "(a class deriving from a builtin type, NamedTuple or an enum may define no dunder method but __init__ and "
    "__post_init__, and no method its base has)"
)


def _is_str_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _annotations(node: ast.AST) -> list[ast.expr]:
    """The annotation expressions a node holds (parameters, returns, annotated assignments)."""
    if isinstance(node, ast.arg):
        return [node.annotation] if node.annotation is not None else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.returns] if node.returns is not None else []
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def check_source(source: str, filename: str = "solution.py") -> list[Violation]:
    """Return the violations in a solution's source, in source order, at most one per (rule, line).

    Raises SyntaxError if the source does not parse.
    """
    tree = ast.parse(source, filename=filename)
    checker = _Checker(tree)
    checker.check_bindings()
    checker.visit(tree)
    return checker.violations()


def has_run_function(source: str) -> bool:
    tree = ast.parse(source)
    return any(isinstance(node, ast.FunctionDef) and node.name == "run" for node in tree.body)
