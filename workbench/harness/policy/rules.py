"""The policy's rules: the tables of what a solution may not use and the functions that judge one
dotted path or attribute name against them and the allow-list.

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
* Solution code run by the harness after the timed call [host_callback]: a class deriving from a builtin
  type other than ``object`` (``list``, ``tuple``, the exceptions...), from ``NamedTuple`` or from an enum
  (directly or through this file's classes) may define or inherit from this file's classes no dunder
  method but ``__init__``/``__post_init__``, and no method named like an attribute of its base
  (``args``, ``index``): the harness reads what ``run`` returns and formats what it raises, and runs
  none of the solution's methods (``__len__`` computing the answer when the host reads the list).
* Tensor values read as text [python_compute]: the builtins ``print``/``repr``/``ascii``/``format``
  anywhere; ``str(x)``, f-string fields, ``%``-formatting of a string and ``.format``/``.format_map``
  arguments, and ``str`` handed around (``map(str, xs)``), unless the value is plainly not a tensor (a
  constant, ``len(...)``, ``x.shape``/``dtype``/``device``/..., ``x.size()``/``stride()``/``numel()``/...,
  subscripts and arithmetic of those: a name can hold a tensor) or the formatting is in the expression
  of a ``raise`` statement (an error message; not in a lambda or generator there, which run later):
  torch's formatter reads every element on the host with the runtime guard's recording off, so an
  integer view formatted to text is every element's bits.

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

from workbench.harness.policy.allowlist import load as load_allowlist

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
# Builtins that format their arguments as text (torch's formatter reads every element of a tensor).
FORMATTING_BUILTINS = frozenset({"print", "repr", "ascii", "format"})
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
    **dict.fromkeys(FORMATTING_BUILTINS, "python_compute"),
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
# Classes whose instances the harness reads or formats with the base type's own code (what ``run``
# returns, what it raises): a class deriving from one of these (directly or through the file's classes)
# may bind no dunder name but these, and no name its base has (``args``, ``index``) [host_callback].
VALUE_BUILTIN_BASES = SAFE_BUILTIN_BASES - {"object"}
VALUE_LIBRARY_BASES: dict[str, type] = {
    "typing.NamedTuple": tuple,
    "enum.Enum": enum.Enum,
    "enum.IntEnum": enum.IntEnum,
    "enum.StrEnum": enum.StrEnum,
    "enum.Flag": enum.Flag,
    "enum.IntFlag": enum.IntFlag,
}
VALUE_BASE_ATTRIBUTES: dict[str, frozenset[str]] = {
    name: frozenset(n for n in dir(base) if not n.startswith("_"))
    for name, base in [*((b, getattr(builtins, b)) for b in VALUE_BUILTIN_BASES), *VALUE_LIBRARY_BASES.items()]
}
VALUE_CLASS_DUNDERS = frozenset({"__init__", "__post_init__"}) | ALLOWED_DUNDER_NAMES
# Values plainly not tensors, which may be formatted as text anywhere [python_compute]: attributes and
# methods of tensors that give sizes, dtypes and devices (when the file defines no attribute of that
# name), builtins whose result is never a tensor, and calls whose result is plain when their arguments are.
PLAIN_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "name", "__name__"})
PLAIN_METHODS = frozenset({"size", "stride", "dim", "numel", "element_size", "is_contiguous"})
PLAIN_BUILTIN_CALLS = frozenset({"len", "int", "float", "bool", "type", "str", "isinstance", "issubclass"})
PLAIN_WHEN_ARGUMENTS_ARE = frozenset({"tuple", "list", "range", "min", "max", "abs", "sum", "sorted"})
PLAIN_LIBRARY_CALLS = ("math.", "triton.cdiv", "triton.next_power_of_2")  # plain when their arguments are
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
    "host_callback": "solution code run by the harness after the timed call",
}

Finding = tuple[str, str]  # (rule, detail)
MAX_PATH_DEPTH = 12  # aliases of deeper paths are not followed


# ---------------------------------------------------------------------------------------------------
# Rules for names
# ---------------------------------------------------------------------------------------------------


def short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def dunders_in(text: str) -> set[str]:
    """The dunder names a string holds anywhere (``"{0.__class__}"`` -> {"__class__"})."""
    found = set(DUNDER_IN_TEXT.findall(text))
    if is_dunder(text):
        found.add(text)
    return found


def format_fields(text: str) -> list[str] | None:
    """The field names of a format string, those in nested format specs included (None: malformed)."""
    fields: list[str] = []
    try:
        for _literal, name, spec, _conversion in string.Formatter().parse(text):
            if name is not None:
                fields.append(name)
            nested = format_fields(spec) if spec else []
            if nested is None:
                return None
            fields.extend(nested)
    except ValueError:
        return None
    return fields


def field_reads_attribute(name: str) -> bool:
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
    if is_dunder(name):
        return None if name in ALLOWED_DUNDER_ATTRIBUTES else "introspection"
    if name.startswith("_"):
        return "private_attribute"
    return None


def object_attribute_rule(name: str, own: frozenset[str] = frozenset()) -> str | None:
    """The rule ``x.name`` breaks where ``x`` can be a library object (a parameter, a call's result, a
    torch or Triton object): allowed only if the allow-list allows the name on library values, or if
    this file's own classes define it and no library type has it (``own``)."""
    if name in ATTRIBUTE_RULES or name in MODULE_RULES or is_dunder(name):
        return attribute_rule(name)
    allowed = load_allowlist()
    if name in allowed.attributes or (name in own and name not in allowed.library):
        return None
    return "private_attribute" if name.startswith("_") else "attribute"


def own_attribute_rule(name: str) -> str | None:
    """The rule ``x.name`` breaks where ``x`` is this file's own object: only dunders are judged."""
    if not is_dunder(name):
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
