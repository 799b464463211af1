"""Static policy: read the solution's source (AST) and name every construct it may not use.

The runtime guard catches what slips past (torch compute, patched timers, missing launches); this
check gives early, line-precise reasons for the obvious ways to cheat or to escape the sandbox.
"""

from __future__ import annotations

import ast

from workbench.harness.report import Violation

# Modules a solution may import (the root of a dotted name), and submodules it may not.
ALLOWED_IMPORTS = frozenset(
    {"torch", "triton", "math", "typing", "functools", "dataclasses", "__future__", "os", "enum", "itertools"}
)
FORBIDDEN_SUBMODULES: dict[str, str] = {
    "torch.utils.cpp_extension": "inline_cpp",
    "torch._C": "torch_internals",
    "torch._dynamo": "torch_compile",
    "torch._inductor": "torch_compile",
    "torch.library": "torch_internals",
    "torch.profiler": "introspection",
    "torch.multiprocessing": "processes",
    "triton.testing": "timers",
    "triton.tools": "triton_internals",
}
ALLOWED_SUBMODULES = frozenset({"triton.tools.tensor_descriptor"})  # host-side TMA descriptors
# Why a well-known module is refused (anything else off the allow-list is "import").
MODULE_RULES: dict[str, str] = {
    "numpy": "numpy", "cupy": "foreign_kernels", "jax": "foreign_kernels",
    "threading": "threads", "_thread": "threads", "concurrent": "threads", "asyncio": "threads",
    "multiprocessing": "processes", "subprocess": "processes", "signal": "processes",
    "gc": "introspection", "inspect": "introspection", "sys": "introspection", "traceback": "introspection",
    "weakref": "introspection", "builtins": "introspection",
    "importlib": "dynamic_code", "pickle": "dynamic_code", "marshal": "dynamic_code", "runpy": "dynamic_code",
    "ctypes": "ctypes", "cffi": "ctypes", "mmap": "ctypes",
    "time": "timers", "timeit": "timers", "datetime": "timers",
    "socket": "network", "urllib": "network", "http": "network", "requests": "network", "httpx": "network",
    "io": "files", "pathlib": "files", "shutil": "files", "tempfile": "files", "glob": "files",
}
FORBIDDEN_NAMES: dict[str, str] = {
    "exec": "dynamic_code", "eval": "dynamic_code", "compile": "dynamic_code", "__import__": "dynamic_code",
    "globals": "introspection", "locals": "introspection", "vars": "introspection",
    "getattr": "introspection", "setattr": "introspection", "delattr": "introspection",
    "__builtins__": "introspection", "__loader__": "introspection", "__spec__": "introspection",
    "open": "files", "breakpoint": "introspection", "input": "files", "memoryview": "ctypes",
}
FORBIDDEN_ATTRIBUTES: dict[str, str] = {
    "_getframe": "introspection", "f_back": "introspection", "f_locals": "introspection",
    "f_globals": "introspection", "f_code": "introspection", "gi_frame": "introspection",
    "cr_frame": "introspection", "tb_frame": "introspection",
    "compile": "torch_compile", "jit": "torch_compile",  # torch.compile, torch.jit (triton.jit is allowed)
    "Stream": "streams", "stream": "streams", "ExternalStream": "streams", "set_stream": "streams",
    "StreamContext": "streams", "graph": "streams", "CUDAGraph": "streams", "make_graphed_callables": "streams",
    "cpp_extension": "inline_cpp", "load_inline": "inline_cpp", "_C": "torch_internals",
    "ops": "torch_internals", "library": "torch_internals", "cudart": "torch_internals", "_sleep": "timers",
    "set_sync_debug_mode": "torch_internals", "use_deterministic_algorithms": "torch_internals",
}
ALLOWED_DUNDERS = frozenset({"__init__", "__name__", "__doc__", "__post_init__"})
OS_ATTRIBUTES = frozenset({"environ", "getenv"})


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.module_aliases: dict[str, str] = {}  # local name -> module it refers to

    def flag(self, rule: str, detail: str, node: ast.AST) -> None:
        self.violations.append(Violation(rule=rule, detail=detail, line=getattr(node, "lineno", None)))

    def _check_module(self, module: str, node: ast.AST) -> bool:
        """Flag a disallowed module; True when it is allowed."""
        root = module.split(".")[0]
        if any(module == ok or module.startswith(ok + ".") for ok in ALLOWED_SUBMODULES):
            return True
        for forbidden, rule in FORBIDDEN_SUBMODULES.items():
            if module == forbidden or module.startswith(forbidden + "."):
                self.flag(rule, f"import of {module} is not allowed", node)
                return False
        if root not in ALLOWED_IMPORTS:
            rule = MODULE_RULES.get(root, "import")
            self.flag(rule, f"import of {module} is not allowed (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})", node)
            return False
        return True

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(alias.name, node)
            local = alias.asname or alias.name.split(".")[0]
            self.module_aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag("import", "relative imports are not allowed", node)
            return
        module = node.module or ""
        module_ok = self._check_module(module, node)
        for alias in node.names:
            if alias.name == "*":
                self.flag("import", f"from {module} import * is not allowed", node)
                continue
            if module_ok:
                self._check_module(f"{module}.{alias.name}", node)
            if alias.name in FORBIDDEN_ATTRIBUTES and not (module == "triton" and alias.name == "jit"):
                self.flag(FORBIDDEN_ATTRIBUTES[alias.name], f"from {module} import {alias.name} is not allowed", node)
            self.module_aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self.flag(FORBIDDEN_NAMES[node.id], f"use of {node.id} is not allowed", node)
        self.generic_visit(node)

    def _root_module(self, node: ast.AST) -> str | None:
        while isinstance(node, ast.Attribute):
            node = node.value
        if isinstance(node, ast.Name):
            return self.module_aliases.get(node.id)
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        root = self._root_module(node)
        if attr.startswith("__") and attr.endswith("__") and attr not in ALLOWED_DUNDERS:
            self.flag("introspection", f"access to {attr} is not allowed", node)
        elif attr in FORBIDDEN_ATTRIBUTES:
            is_triton_jit = attr == "jit" and root is not None and root.startswith("triton")
            if not is_triton_jit:
                self.flag(FORBIDDEN_ATTRIBUTES[attr], f"use of .{attr} is not allowed", node)
        elif root == "os" and isinstance(node.value, ast.Name) and attr not in OS_ATTRIBUTES:
            self.flag("files", f"os.{attr} is not allowed (only os.environ and os.getenv)", node)
        if root == "triton" and isinstance(node.value, ast.Name) and attr == "testing":
            self.flag("timers", "triton.testing is not allowed", node)
        self.generic_visit(node)

    def _check_target(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_target(element)
        elif isinstance(target, (ast.Attribute, ast.Subscript)) and self._root_module(target.value):
            self.flag("monkeypatch", f"assigning to {ast.unparse(target)} changes a library", target)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.flag("caching", "global statements are not allowed (no state across calls)", node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.flag("caching", "nonlocal statements are not allowed (no state across calls)", node)


def check_source(source: str, filename: str = "solution.py") -> list[Violation]:
    """Return the violations in a solution's source. Raises SyntaxError if it does not parse."""
    tree = ast.parse(source, filename=filename)
    checker = _Checker()
    checker.visit(tree)
    return checker.violations


def has_run_function(source: str) -> bool:
    tree = ast.parse(source)
    return any(isinstance(node, ast.FunctionDef) and node.name == "run" for node in tree.body)
