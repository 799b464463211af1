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
``_Ownership``) the names its classes define are free. Builtins are refused only where the name is the
builtin: a parameter or local named ``input`` or ``compile`` is fine; at module and class level a name
is always taken as the builtin (a module-level rebinding is refused too: ``del`` could restore it).

What is refused, and why (rule names in brackets):

* Host escapes: modules off ``ALLOWED_IMPORTS`` [import or the module's rule]; files (``open``,
  ``os`` beyond reading ``os.environ``/``os.getenv``, ``torch.save/load/from_file``) [files];
  processes, threads, network, raw memory, clocks [processes, threads, network, ctypes, timers];
  numpy [numpy]. Stdlib modules only through their public API (``__all__``).
* Interpreter internals, the way to everything else [introspection]: ``sys``/``gc``/``inspect``,
  frames and code objects, ``getattr``/``vars``/``globals``..., dunder attributes, dunder methods other
  than the plain data-model ones, objects that hand out a module's globals (``get_capture_scope``), and
  such names written anywhere in a string (``scope["__builtins__"]``, ``"{0.__class__}"``); names read
  as strings: ``.format``/``.format_map`` fields that read attributes (or on anything but a literal),
  class patterns with positional sub-patterns (``case C(a)`` reads ``C.__match_args__``) except on the
  builtins that match the subject and the file's dataclasses/NamedTuples whose fields pass the rules.
* Modules reached through other objects: an attribute named like a module (``torch.sys``,
  ``dataclasses.sys``, ``x.os``) is refused on anything; a module with refused members may not be used
  as a value [module_alias] (``t = torch``), so every use of it stays a chain this check can resolve.
* Private names [private_attribute]: any attribute or imported name starting with ``_``.
* Code built at run time [dynamic_code]: ``exec``/``eval``/``compile``, 3-argument ``type`` (and
  ``type`` handed around), helpers that evaluate strings (``typing.get_type_hints``), ``torch.fx``,
  Triton's driver (loads binaries).
* Tensor subclasses and torch modes [tensor_subclass]: classes deriving from torch or Triton or from
  anything but this file's classes, builtin types and ``SAFE_LIBRARY_BASES`` (NamedTuple, Generic, the
  enums: metaclass ``type`` or ``EnumType``, never an ABC or a subclass of ``type`` such as
  ``typing.Type``); class keywords (``metaclass=``); ``__torch_function__``/``__torch_dispatch__``;
  ``.as_subclass``; ``torch.overrides``. On the file's class objects the names their metaclass gives
  them (``C.mro``, ``C._convert_``) are library names, whatever the file defines.
* Tensor values moved into Python [python_compute]: ``.tolist()``, ``.item()``, ``.numpy()``, storages,
  ``torch.tensor``/``torch.as_tensor``/dlpack.
* Compilers, internals and global settings, streams and graphs, C++ or non-Triton kernels, Triton
  internals [torch_compile, torch_internals, streams, inline_cpp, foreign_kernels, triton_internals].
* Library state changed [monkeypatch]: assignment, augmented/annotated assignment or ``del`` into an
  imported object (or a decorated kernel, or an attribute of a computed object such as ``type(x)``);
  class decorators (``dataclass``...) used other than as decorators of this file's statements.
* Torch code laundered through Triton's host callbacks [torch_compute]: ``pre_hook=`` and the other
  hooks Triton calls must be lambdas or functions defined in this file.

Allowed on purpose: ``global``/``nonlocal`` (memoising a device property is honest; caches of
input-derived values are defeated at run time by fresh inputs, refilled buffers and sampled timed
calls), ``float(t)`` / ``int(t)`` (the runtime guard sees those reads), ``data_ptr()``, ``triton.jit``.
"""

from __future__ import annotations

import ast
import builtins
import enum
import re
import string
from dataclasses import dataclass, field

from workbench.harness.policy.allowlist import load as load_allowlist
from workbench.harness.report import Violation

# ---------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------

# Modules a solution may import from (the roots of the allow-list).
ALLOWED_IMPORTS = load_allowlist().roots
# Why a well-known module is refused (anything else off the allow-list is "import"). An attribute with
# one of these names is a module reached through another object and is refused wherever it appears.
MODULE_RULES: dict[str, str] = {
    "numpy": "numpy",
    "np": "numpy",
    "cupy": "foreign_kernels",
    "jax": "foreign_kernels",
    "threading": "threads",
    "_thread": "threads",
    "concurrent": "threads",
    "asyncio": "threads",
    "multiprocessing": "processes",
    "subprocess": "processes",
    "signal": "processes",
    "pty": "processes",
    "atexit": "processes",
    "gc": "introspection",
    "inspect": "introspection",
    "sys": "introspection",
    "traceback": "introspection",
    "weakref": "introspection",
    "builtins": "introspection",
    "bltns": "introspection",
    "modules": "introspection",
    "operator": "introspection",
    "linecache": "introspection",
    "platform": "introspection",
    "dis": "introspection",
    "faulthandler": "introspection",
    "tracemalloc": "introspection",
    "resource": "introspection",
    "importlib": "dynamic_code",
    "json": "files",
    "codecs": "files",
    "logging": "files",
    "pickle": "dynamic_code",
    "marshal": "dynamic_code",
    "runpy": "dynamic_code",
    "code": "dynamic_code",
    "codeop": "dynamic_code",
    "types": "dynamic_code",
    "pkgutil": "dynamic_code",
    "copyreg": "dynamic_code",
    "zipimport": "dynamic_code",
    "ast": "dynamic_code",
    "ctypes": "ctypes",
    "cffi": "ctypes",
    "mmap": "ctypes",
    "time": "timers",
    "timeit": "timers",
    "datetime": "timers",
    "socket": "network",
    "urllib": "network",
    "http": "network",
    "requests": "network",
    "httpx": "network",
    "io": "files",
    "pathlib": "files",
    "shutil": "files",
    "tempfile": "files",
    "glob": "files",
    "os": "files",
    "posix": "files",
    "nt": "files",
    "posixpath": "files",
    "contextlib": "files",
    "fcntl": "files",
}
# Attribute names refused on any object, whatever the root of the chain.
ATTRIBUTE_RULES: dict[str, str] = {
    # frames, code objects, class hierarchy
    "_getframe": "introspection",
    "f_back": "introspection",
    "f_locals": "introspection",
    "f_globals": "introspection",
    "f_builtins": "introspection",
    "f_code": "introspection",
    "f_trace": "introspection",
    "gi_frame": "introspection",
    "gi_code": "introspection",
    "cr_frame": "introspection",
    "cr_code": "introspection",
    "ag_frame": "introspection",
    "ag_code": "introspection",
    "tb_frame": "introspection",
    "tb_next": "introspection",
    "co_code": "introspection",
    "co_consts": "introspection",
    "mro": "introspection",
    "update_wrapper": "introspection",
    # callables that take attribute names (names built at run time reach anything through them)
    "attrgetter": "introspection",
    "itemgetter": "introspection",
    "methodcaller": "introspection",
    "getattr_from_fqn": "introspection",
    "getattr_recursive": "introspection",
    "getattr_static": "introspection",
    # Triton's cache (files on disk) wherever it is re-exported
    "get_cache_manager": "files",
    "CacheManager": "files",
    "FileCacheManager": "files",
    # raw memory
    "from_address": "ctypes",
    "from_buffer_copy": "ctypes",
    "addressof": "ctypes",
    "get_capture_scope": "introspection",
    "used_global_vals": "introspection",
    "globals": "introspection",
    "locals": "introspection",
    "vars": "introspection",
    "getattr": "introspection",
    "setattr": "introspection",
    "delattr": "introspection",
    "breakpoint": "introspection",
    "eval": "dynamic_code",
    "exec": "dynamic_code",
    # compilers (triton.jit is allowed, see attribute_rule)
    "compile": "torch_compile",
    "jit": "torch_compile",
    "_dynamo": "torch_compile",
    "_inductor": "torch_compile",
    # streams and graphs
    "Stream": "streams",
    "stream": "streams",
    "streams": "streams",
    "ExternalStream": "streams",
    "set_stream": "streams",
    "StreamContext": "streams",
    "graph": "streams",
    "graphs": "streams",
    "CUDAGraph": "streams",
    "make_graphed_callables": "streams",
    # clocks
    "perf_counter": "timers",
    "perf_counter_ns": "timers",
    "monotonic": "timers",
    "monotonic_ns": "timers",
    "process_time": "timers",
    "thread_time": "timers",
    "time_ns": "timers",
    "sleep": "timers",
    "_sleep": "timers",
    "elapsed_time": "timers",
    "Event": "timers",
    "globaltimer": "timers",
    # threads and processes
    "Thread": "threads",
    "start_new_thread": "threads",
    "ThreadPoolExecutor": "threads",
    "ProcessPoolExecutor": "processes",
    "share_memory_": "processes",
    # extensions and internals
    "cpp_extension": "inline_cpp",
    "load_inline": "inline_cpp",
    "_C": "torch_internals",
    "ops": "torch_internals",
    "library": "torch_internals",
    "cudart": "torch_internals",
    "set_sync_debug_mode": "torch_internals",
    "use_deterministic_algorithms": "torch_internals",
    "manual_seed": "torch_internals",
    "manual_seed_all": "torch_internals",
    "knobs": "triton_internals",
    "ir": "triton_internals",
    "driver": "dynamic_code",
    "device_caches": "triton_internals",
    "add_pre_run_hook": "torch_compute",
    "pre_run_hooks": "torch_compute",
    "from_file": "files",
    "extern_elementwise": "foreign_kernels",
    "inline_asm_elementwise": "foreign_kernels",  # PTX: no rule reads inside it (%globaltimer...)
    # code from strings, classes built at run time
    "get_type_hints": "dynamic_code",
    "ForwardRef": "dynamic_code",
    "singledispatch": "dynamic_code",
    "singledispatchmethod": "dynamic_code",
    "make_dataclass": "dynamic_code",
    # tensor values moved into Python
    "tolist": "python_compute",
    "item": "python_compute",
    "numpy": "python_compute",
    "storage": "python_compute",
    "untyped_storage": "python_compute",
    "typed_storage": "python_compute",
    "new_tensor": "python_compute",
    "from_buffer": "python_compute",
    "apply_": "python_compute",
    "map_": "python_compute",
    "map2_": "python_compute",
    "__array__": "python_compute",
    "__array_interface__": "python_compute",
    "__cuda_array_interface__": "python_compute",
    "__dlpack__": "python_compute",
    # tensor subclasses and torch modes
    "as_subclass": "tensor_subclass",
    "__torch_function__": "tensor_subclass",
    "__torch_dispatch__": "tensor_subclass",
    "TorchFunctionMode": "tensor_subclass",
    "TorchDispatchMode": "tensor_subclass",
    "overrides": "tensor_subclass",
}
# Qualified names refused with their own rule (a name and everything under it; longest prefix wins).
PATH_RULES: dict[str, str] = {
    # torch compilers and code generators
    "torch.compile": "torch_compile",
    "torch.compiler": "torch_compile",
    "torch.jit": "torch_compile",
    "torch._dynamo": "torch_compile",
    "torch._inductor": "torch_compile",
    "torch.export": "torch_compile",
    "torch.fx": "dynamic_code",
    "torch.package": "dynamic_code",
    # torch internals and global settings
    "torch._C": "torch_internals",
    "torch.ops": "torch_internals",
    "torch.library": "torch_internals",
    "torch.classes": "torch_internals",
    "torch.backends": "torch_internals",
    "torch.random": "torch_internals",
    "torch.manual_seed": "torch_internals",
    "torch.seed": "torch_internals",
    "torch.cpp": "torch_internals",
    "torch.cuda.cudart": "torch_internals",
    "torch.cuda.jiterator": "foreign_kernels",
    # torch I/O, processes, network, timers
    "torch.save": "files",
    "torch.load": "files",
    "torch.from_file": "files",
    "torch.serialization": "files",
    "torch.onnx": "files",
    "torch.hub": "network",
    "torch.distributed": "network",
    "torch.multiprocessing": "processes",
    "torch.utils.data": "processes",
    "torch.utils.cpp_extension": "inline_cpp",
    "torch.utils.benchmark": "timers",
    "torch.profiler": "introspection",
    "torch.autograd.profiler": "introspection",
    # tensor subclasses, tensors built from Python values
    "torch.overrides": "tensor_subclass",
    "torch.tensor": "python_compute",
    "torch.as_tensor": "python_compute",
    "torch.asarray": "python_compute",
    "torch.frombuffer": "python_compute",
    "torch.from_numpy": "python_compute",
    "torch.from_dlpack": "python_compute",
    "torch.utils.dlpack": "python_compute",
    # triton internals (the compiler, drivers that load binaries, hooks, benchmarking)
    "triton.compile": "triton_internals",
    "triton.compiler": "triton_internals",
    "triton.backends": "triton_internals",
    "triton.knobs": "triton_internals",
    "triton.tools": "triton_internals",
    "triton.testing": "timers",
    "triton.runtime.driver": "dynamic_code",
    "triton.runtime.build": "inline_cpp",
    "triton.runtime.cache": "files",
    "triton.runtime.RemoteCacheBackend": "network",
    "triton.runtime.RedisRemoteCacheBackend": "network",
    # stdlib helpers that evaluate strings or build classes and wrappers by name
    "typing.get_type_hints": "dynamic_code",
    "typing.ForwardRef": "dynamic_code",
    "functools.singledispatch": "dynamic_code",
    "functools.singledispatchmethod": "dynamic_code",
    "functools.update_wrapper": "introspection",
    "dataclasses.make_dataclass": "dynamic_code",
}
# Names that say why a refused path is refused, only when they appear in a path (too common to be
# refused on every object: ``typing.cast`` is allowed, ``torch.xpu.cast`` is ctypes.cast).
CTYPES_NAMES = (
    "cast", "c_void_p", "c_uint32", "c_double", "c_char_p", "c_int", "c_uint64", "c_size_t", "POINTER", "pointer",
    "byref", "CDLL", "py_object", "pythonapi", "string_at", "memmove", "memset", "Structure",
)  # fmt: skip
PATH_COMPONENT_RULES: dict[str, str] = {**dict.fromkeys(CTYPES_NAMES, "ctypes"), "open": "files"}
# Allowed although under a refused prefix.
ALLOWED_PATHS = ("triton.tools.tensor_descriptor",)  # host-side TMA descriptors
# What a refused member of an allowed namespace is called (longest prefix wins; torch's own callables
# that are not on the allow-list are torch_compute, its other members torch_internals).
NAMESPACE_RULES: dict[str, str] = {
    "torch": "torch_internals",
    "torch.cuda": "torch_internals",
    "torch.utils": "torch_internals",
    "triton": "triton_internals",
    **dict.fromkeys(("math", "typing", "functools", "dataclasses", "enum", "itertools", "__future__"), "import"),
}
OS_ENVIRON_READERS = frozenset({"get", "keys", "items", "values", "copy"})
OS_PROCESS_PREFIXES = ("system", "popen", "exec", "spawn", "posix_spawn", "fork", "kill", "abort", "wait")
# Class decorators that change the object they are given: only as a decorator of this file's own
# class or function statement; value = positional arguments allowed when called in decorator position.
DECORATOR_ONLY: dict[str, int] = {
    "dataclasses.dataclass": 0,
    "functools.total_ordering": 0,
    "functools.wraps": 1,
    "enum.unique": 0,
    "enum.verify": 0,
    "enum.global_enum": 0,
    "typing.final": 0,
    "typing.runtime_checkable": 0,
    "typing.no_type_check": 0,
    "typing.no_type_check_decorator": 0,
    "typing.override": 0,
    "typing.dataclass_transform": 0,
}
# Builtins refused where the name resolves to the builtin (``type`` only in its 3-argument form).
FORBIDDEN_NAMES: dict[str, str] = {
    "exec": "dynamic_code",
    "eval": "dynamic_code",
    "compile": "dynamic_code",
    "__import__": "dynamic_code",
    "globals": "introspection",
    "locals": "introspection",
    "vars": "introspection",
    "dir": "introspection",
    "getattr": "introspection",
    "setattr": "introspection",
    "delattr": "introspection",
    "__builtins__": "introspection",
    "__loader__": "introspection",
    "__spec__": "introspection",
    "breakpoint": "introspection",
    "help": "introspection",
    "open": "files",
    "input": "files",
    "memoryview": "ctypes",
}
# String constants that name a builtin reachable through a dict (``scope["__builtins__"]["eval"]``).
FORBIDDEN_STRINGS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "breakpoint",
    }
)
TORCH_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})
ALLOWED_DUNDER_METHODS = frozenset(
    {
        "__init__",
        "__post_init__",
        "__repr__",
        "__eq__",
        "__hash__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__len__",
        "__iter__",
        "__getitem__",
        "__contains__",
        "__call__",
        "__enter__",
        "__exit__",
    }
)
ALLOWED_DUNDER_NAMES = frozenset({"__name__", "__doc__", "__all__", "__slots__", "__debug__", "__version__"})
ALLOWED_DUNDER_STRINGS = ALLOWED_DUNDER_NAMES | ALLOWED_DUNDER_METHODS | {"__main__"}
ALLOWED_DUNDER_ATTRIBUTES = frozenset({"__init__", "__name__", "__doc__", "__post_init__", "__version__"})
# Class bases: builtin types (when the file never rebinds the name) and typing/enum classes.
SAFE_BUILTIN_BASES = frozenset(
    {
        "object",
        "int",
        "float",
        "str",
        "tuple",
        "list",
        "dict",
        "set",
        "frozenset",
        "Exception",
        "ValueError",
        "TypeError",
        "RuntimeError",
        "KeyError",
        "IndexError",
        "LookupError",
        "ArithmeticError",
        "NotImplementedError",
        "AssertionError",
        "AttributeError",
    }
)
# Class bases from libraries: exactly these. Each gives its subclasses the metaclass ``type`` or
# ``enum.EnumType`` (tests/test_policy_allowlist.py checks it): never an ABC (``typing.Hashable`` brings
# ABCMeta.register, which makes any type an "instance"), never a subclass of ``type`` (``typing.Type``
# is one: calling such a class builds classes at run time).
SAFE_LIBRARY_BASES = frozenset(
    {"typing.NamedTuple", "typing.Generic", "enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag"}
)
# Attributes the metaclasses of the file's classes give those classes (``C.mro``, ``C._convert_``):
# on a class object of the file (not an instance) they are library names, whatever the file defines.
METACLASS_ATTRIBUTES = frozenset(n for meta in (type, enum.EnumType) for n in dir(meta) if not n.startswith("__"))
# Class patterns with positional sub-patterns (``case C(a, b)``) read the attributes C.__match_args__
# names. Allowed only for the builtins that match the whole subject (one sub-pattern) and for this
# file's dataclasses and NamedTuples whose field names pass the attribute rules.
MATCH_SELF_BUILTINS = frozenset(
    {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple"}
)
# Dunder names inside a string (format fields, keys, names joined later): ``"{0.__class__}"``.
DUNDER_IN_TEXT = re.compile(r"__[^\W_]\w*?__")
# str.format and str.format_map walk attributes named in their fields (``"{0.attr}"``): allowed only on a
# string literal whose fields read no attribute.
FORMAT_METHODS = frozenset({"format", "format_map"})
# Host callbacks Triton runs itself: the value must be a lambda or a function defined in the file.
HOOK_KEYWORDS = frozenset(
    {
        "pre_hook",
        "post_hook",
        "prune_configs_by",
        "early_config_prune",
        "perf_model",
        "do_bench",
        "launch_metadata",
    }
)
# Triton entry points with callback parameters: path -> (first positional hook argument, hook keywords).
HOOK_CALLS: dict[str, tuple[int, frozenset[str]]] = {
    "triton.jit": (0, frozenset({"fn", "repr"})),
    "triton.autotune": (2, frozenset()),
    "triton.runtime.autotune": (2, frozenset()),
    "triton.heuristics": (0, frozenset({"values"})),
    "triton.runtime.heuristics": (0, frozenset({"values"})),
    "triton.Config": (5, frozenset()),
    "triton.runtime.Config": (5, frozenset()),
    "triton.set_allocator": (0, frozenset({"allocator"})),
    "triton.runtime.Autotuner": (6, frozenset()),
    "triton.runtime.Heuristics": (2, frozenset()),
}
KEYWORD_RULES: dict[str, str] = {"ir_override": "files"}  # triton.Config(ir_override=path) loads a kernel file
LEGACY_TENSOR_CONSTRUCTOR = re.compile(r"torch\.(cuda\.)?[A-Za-z]*(Tensor|Storage)")  # torch.Tensor([1.0])

# Names a file may read without binding them: Python's builtins. Any other free name is refused: under
# the interpreter, Triton copies its own module globals (np, inspect, its builder...) into the solution's
# module at the first launch, so a name the file never binds can be a library object.
BUILTIN_NAMES = frozenset(dir(builtins))

RULE_REASONS: dict[str, str] = {
    "undefined_name": "a name the file never binds and no builtin (it could be an object injected into the module)",
    "import": "not an allowed module or member",
    "files": "file system access",
    "processes": "processes",
    "threads": "threads",
    "network": "network access",
    "ctypes": "raw memory access",
    "timers": "clocks and timers",
    "numpy": "numpy computes on the host",
    "foreign_kernels": "kernels not written in Triton",
    "introspection": "interpreter internals",
    "dynamic_code": "runs code built at run time",
    "torch_compile": "torch compilers",
    "torch_internals": "torch internals and global settings",
    "triton_internals": "Triton internals",
    "inline_cpp": "compiled C/C++ extensions",
    "streams": "streams and CUDA graphs",
    "python_compute": "tensor values in Python",
    "tensor_subclass": "tensor subclasses and torch modes",
    "private_attribute": "private name",
    "monkeypatch": "changes a library",
    "torch_compute": "torch code run inside Triton",
    "module_alias": "a module used as a value",
    "attribute": "not an attribute the allow-list allows on a library object",
}

Finding = tuple[str, str]  # (rule, detail)
MAX_PATH_DEPTH = 12  # aliases of deeper paths are not followed


# ---------------------------------------------------------------------------------------------------
# Rules for names
# ---------------------------------------------------------------------------------------------------


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _dunders_in(text: str) -> set[str]:
    """The dunder names a string holds anywhere (``"{0.__class__}"`` -> {"__class__"})."""
    found = set(DUNDER_IN_TEXT.findall(text))
    if _is_dunder(text):
        found.add(text)
    return found


def _format_fields(text: str) -> list[str] | None:
    """The field names of a format string, those in nested format specs included (None: malformed)."""
    fields: list[str] = []
    try:
        for _literal, name, spec, _conversion in string.Formatter().parse(text):
            if name is not None:
                fields.append(name)
            nested = _format_fields(spec) if spec else []
            if nested is None:
                return None
            fields.extend(nested)
    except ValueError:
        return None
    return fields


def _field_reads_attribute(name: str) -> bool:
    """``0.attr`` or ``x[k].attr``: a format field that walks an attribute (``[...]`` keys are strings)."""
    in_key = False
    for char in name:
        if char == "[":
            in_key = True
        elif char == "]":
            in_key = False
        elif char == "." and not in_key:
            return True
    return False


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".")


def attribute_rule(name: str) -> str | None:
    """The rule an attribute name breaks on any object, whatever it is (None: not refused by name)."""
    if name in ATTRIBUTE_RULES:
        return ATTRIBUTE_RULES[name]
    if name in MODULE_RULES:
        return MODULE_RULES[name]
    if _is_dunder(name):
        return None if name in ALLOWED_DUNDER_ATTRIBUTES else "introspection"
    if name.startswith("_"):
        return "private_attribute"
    return None


def object_attribute_rule(name: str, own: frozenset[str] = frozenset()) -> str | None:
    """The rule ``x.name`` breaks where ``x`` can be a library object (a parameter, a call's result, a
    torch or Triton object): allowed only if the allow-list allows the name on library values, or if
    this file's own classes define it and no library type has it (``own``)."""
    if name in ATTRIBUTE_RULES or name in MODULE_RULES or _is_dunder(name):
        return attribute_rule(name)
    allowed = load_allowlist()
    if name in allowed.attributes or (name in own and name not in allowed.library):
        return None
    return "private_attribute" if name.startswith("_") else "attribute"


def own_attribute_rule(name: str) -> str | None:
    """The rule ``x.name`` breaks where ``x`` is this file's own object: only dunders are judged."""
    if not _is_dunder(name):
        return None
    return attribute_rule(name)


def _explicit_rule(path: str) -> Finding | None:
    if any(_under(path, ok) for ok in ALLOWED_PATHS):
        return None
    hits = [prefix for prefix in PATH_RULES if _under(path, prefix)]
    if not hits:
        return None
    prefix = max(hits, key=len)
    rule = PATH_RULES[prefix]
    return rule, f"{prefix} is not allowed ({RULE_REASONS[rule]})"


def _component_rule(parts: list[str]) -> Finding | None:
    for i, part in enumerate(parts[1:], start=1):
        rule = attribute_rule(part) or PATH_COMPONENT_RULES.get(part)
        if rule is not None:
            return rule, f"{'.'.join(parts[: i + 1])} is not allowed ({RULE_REASONS[rule]})"
    if parts[0] == "torch" and any(part.startswith("set_") for part in parts[1:]):
        return "torch_internals", f"{'.'.join(parts)} is not allowed (changes torch's global state)"
    return None


def _namespace_rule(parts: list[str], known: int) -> Finding:
    """A member of an allowed module that is not on the allow-list (``parts[:known]`` is allowed)."""
    member = ".".join(parts[: known + 1])
    namespace = ".".join(parts[:known])
    prefixes = [p for p in NAMESPACE_RULES if _under(namespace, p)]
    rule = NAMESPACE_RULES[max(prefixes, key=len)] if prefixes else "import"
    if parts[0] == "torch" and known == 1 and parts[1] in load_allowlist().torch_functions:
        rule = "torch_compute"
    return rule, f"{member} is not allowed (not on the allow-list of {namespace}: {RULE_REASONS[rule]})"


def _os_rule(parts: list[str]) -> Finding | None:
    if len(parts) < 2:
        return None
    name = parts[1]
    if name == "getenv" and len(parts) == 2:
        return None
    if name == "environ":
        if len(parts) == 2 or (len(parts) == 3 and parts[2] in OS_ENVIRON_READERS):
            return None
        return "monkeypatch", f"{'.'.join(parts)} is not allowed (os.environ: reading only)"
    rule = "processes" if name.startswith(OS_PROCESS_PREFIXES) else "files"
    return rule, f"os.{name} is not allowed (os: only os.environ and os.getenv)"


def _refusal(path: str, parts: list[str], known: int) -> Finding:
    return _explicit_rule(path) or _component_rule(parts) or _namespace_rule(parts, known)


def path_rule(path: str) -> Finding | None:
    """The one check of a fully qualified name (``os.system``, ``torch.utils._x``): (rule, detail) or None.

    The longest prefix of the path that is on the allow-list is found. If that prefix is a module, the
    next name is not on the list: refused (its rule says why). If it is an allowed object (a function,
    class or value), the rest are attributes of a library object (``torch.Tensor.view``).
    """
    parts = path.split(".")
    root = parts[0]
    if root not in ALLOWED_IMPORTS:
        allowed = ", ".join(sorted(ALLOWED_IMPORTS))
        return MODULE_RULES.get(root, "import"), f"import of {path} is not allowed (allowed: {allowed})"
    if root == "os":
        return _component_rule(parts) or _os_rule(parts)
    allow = load_allowlist()
    known = len(parts)
    while known > 1 and ".".join(parts[:known]) not in allow.paths:
        known -= 1
    if known == len(parts):
        return None
    if allow.kind(".".join(parts[:known])) == "module":
        return _refusal(path, parts, known)
    for i in range(known, len(parts)):
        rule = object_attribute_rule(parts[i])
        if rule is not None:
            return rule, f"{'.'.join(parts[: i + 1])} is not allowed ({RULE_REASONS[rule]})"
    return None


def is_module_path(path: str) -> bool:
    """Modules (and os.environ, and the parents of decorator-only names) are used only as ``x.member``."""
    return load_allowlist().kind(path) == "module" or path == "os.environ" or path in _DECORATOR_PARENTS


_DECORATOR_PARENTS = frozenset(".".join(p.split(".")[:i]) for p in DECORATOR_ONLY for i in range(1, p.count(".") + 1))


# ---------------------------------------------------------------------------------------------------
# Scopes: where a name is bound, so that builtins are refused only where they are the builtin
# ---------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Scope:
    kind: str  # "module", "class" or "function" (def, lambda, comprehension)
    parent: _Scope | None
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
class _Binding:
    name: str
    kind: str  # "assign", "param", "def", "class", "import", "other"
    node: ast.AST  # where, for the line
    scope: _Scope


class _ScopeBuilder(ast.NodeVisitor):
    """One pass that records every binding, the scope of every name, imports and simple aliases."""

    def __init__(self) -> None:
        self.module = _Scope("module", None)
        self.scope = self.module
        self.name_scope: dict[ast.Name, _Scope] = {}
        self.bindings: list[_Binding] = []
        self.imports: dict[str, set[str]] = {}  # local name -> dotted paths it was imported as
        self.assignments: list[tuple[str, ast.expr]] = []  # name = value, for aliases
        self.decorated: set[str] = set()  # functions with decorators (library objects once decorated)
        self.methods: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, _Scope]] = []  # defs in class bodies

    def _bind(self, name: str, kind: str, node: ast.AST, scope: _Scope | None = None) -> None:
        scope = scope or self.scope
        scope.bound.add(name)
        self.bindings.append(_Binding(name, kind, node, scope))

    def _push(self, kind: str, comprehension: bool = False) -> _Scope:
        self.scope = _Scope(kind, self.scope, comprehension)
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
        self._push("class")
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


def _is_isinstance_call(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass")


def _annotated_names(body: list[ast.stmt]) -> set[str]:
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


class _Names:
    """Local names bound to library paths (imports and simple aliases), and the file's own defs."""

    def __init__(self, scopes: _ScopeBuilder) -> None:
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


class _Ownership:
    """Which receivers are this file's own objects, whose attributes are free.

    Own: an instance of one of the file's classes (a name every binding of which is ``C(...)``), the
    class itself, ``cls`` in a classmethod, and ``self`` in a method that cannot be handed a foreign
    ``self``: one with no decorators but property/classmethod/cached_property, whose name is never read
    through a class or an object that may not be an own instance (``C.f(tensor)``, ``type(x).f``) nor
    used as a value in the class body. Everything else may be a library object.
    """

    def __init__(self, tree: ast.Module, scopes: _ScopeBuilder, names: _Names) -> None:
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
        self.scope_of: dict[int, _Scope] = {}
        for func, scope in scopes.methods:
            self._add_method(func, scope)
        self.trusted = self._fixed_point(tree)

    def _constructs(self, value: ast.expr) -> bool:
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.classes

    def _add_method(self, func: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
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

    def _binding_scope(self, node: ast.Name) -> _Scope | None:
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

    def _bound_once(self, scope: _Scope, name: str) -> bool:
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
        self.scopes = _ScopeBuilder()
        self.scopes.visit(tree)
        self.names = _Names(self.scopes)
        self.own = _Ownership(tree, self.scopes, self.names)
        self.parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.classes: dict[str, list[ast.ClassDef]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, []).append(node)
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
            if binding.kind != "param" and _is_dunder(name):
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
            if _is_dunder(node.id):
                self._check_dunder_load(node)
            elif node.id in FORBIDDEN_NAMES and scope.is_builtin(node.id):
                rule = FORBIDDEN_NAMES[node.id]
                self.flag(rule, f"{node.id} is not allowed ({RULE_REASONS[rule]})", node)
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
            self.flag(rule, f".{name} is not allowed on {_short(node.value, 30)} ({RULE_REASONS[rule]})", node)

    def _check_format_receiver(self, node: ast.Attribute) -> None:
        """``"{0.x}".format(v)`` reads ``v.x``: fields are checked on string literals, refused elsewhere."""
        receiver = node.value
        if not (isinstance(receiver, ast.Constant) and isinstance(receiver.value, str)):
            self.flag("introspection", f".{node.attr} is allowed only on a string literal (its fields walk attributes)", node)
            return
        fields = _format_fields(receiver.value)
        if fields is None:
            self.flag("introspection", f"malformed format string {_short(receiver, 40)}", node)
        elif any(_field_reads_attribute(f) for f in fields):
            field = next(f for f in fields if _field_reads_attribute(f))
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
        for name in sorted(_dunders_in(text)):  # anywhere in the string: format fields, keys, pieces
            if name in TORCH_HOOKS:
                self.flag("tensor_subclass", f"the string {_short(node, 40)} is not allowed ({name}: torch hook)", node)
            elif name not in ALLOWED_DUNDER_STRINGS:
                rule = FORBIDDEN_NAMES.get(name, "introspection")
                self.flag(rule, f"the string {_short(node, 40)} is not allowed (holds {name})", node)
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
                self.flag(found[0], f"case {_short(node.cls)}(...) with positional sub-patterns: {found[1]}", node)
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
            fields.update(_annotated_names(definition.body))
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
        text = _short(target)
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
        self.generic_visit(node)

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
            f"class base {_short(base)} is not allowed (only this file's classes, builtin types, NamedTuple, Generic, enums)",
            base,
        )

    # -- calls ---------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        self._check_type_call(node)
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
        if isinstance(parent, ast.Call) and (parent.func is node or _is_isinstance_call(parent)):
            return
        grandparent = self.parents.get(parent) if isinstance(parent, ast.Tuple) else None
        if isinstance(grandparent, ast.Call) and _is_isinstance_call(grandparent):
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
        if _is_dunder(keyword.arg):
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
                f"{name}={_short(value)} is not allowed (hooks must be lambdas or functions defined in this file)",
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
