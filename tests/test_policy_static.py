"""The static policy: every class of refused construct names its rule and line; honest code passes."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from workbench.harness.policy.checker import check_source, has_run_function
from workbench.harness.policy.rules import ALLOWED_IMPORTS, path_rule

REPO = Path(__file__).resolve().parent.parent
REDTEAM = REPO / "tests" / "redteam"


def _appended(core: Path, *parts: Path) -> str:
    """A red-team file as the red-team tests build it: the honest core, its run renamed, then the parts."""
    text = core.read_text().replace("\ndef run(", "\ndef honest_run(")
    return "\n\n".join([text, *(part.read_text() for part in parts)])


def _honest_corpus() -> dict[str, str]:
    """Every honest solution the repository holds: experts, templates, the naive solutions, the honest
    red-team variants, and the wrong-math cheats (honest constructs, wrong answers: they must reach the
    checker's comparison, so the static policy must pass them)."""
    corpus = {str(p.relative_to(REPO)): p.read_text() for p in sorted(REPO.glob("tasks/*/expert.py"))}
    corpus.update({str(p.relative_to(REPO)): p.read_text() for p in sorted(REPO.glob("tasks/*/template.py"))})
    corpus.update({str(p.relative_to(REPO)): p.read_text() for p in sorted(REPO.glob("tests/solutions/*.py"))})
    naive = REPO / "tests" / "solutions" / "muon_naive.py"
    for path in sorted((REDTEAM / "honest").glob("*.py")):
        corpus[str(path.relative_to(REPO))] = _appended(naive, REDTEAM / "torch_muon.py", path)
    for folder in sorted(REDTEAM.glob("*_cheats")):
        core = REPO / "tests" / "solutions" / f"{folder.name.removesuffix('_cheats')}_naive.py"
        if core.exists():
            for path in sorted(folder.glob("*.py")):
                corpus[str(path.relative_to(REPO))] = _appended(core, path)
    return corpus


HONEST_CORPUS = _honest_corpus()


def found(source: str) -> list[tuple[str, int | None]]:
    return [(v.rule, v.line) for v in check_source(textwrap.dedent(source))]


# (source, a (rule, line) it must produce). Sources are dedented; line 1 is the first line.
REFUSED: dict[str, tuple[str, tuple[str, int]]] = {
    # qualified names: the same rule however os.system is reached
    "from_os_import_system": ("from os import system; system('id')\n", ("processes", 1)),
    "os_alias_system": ("import os as o; o.system('x')\n", ("processes", 1)),
    "os_system": ("import os\nos.system('x')\n", ("processes", 2)),
    "os_popen_usage": ("from os import popen as p\n\ndef f():\n    return p('x')\n", ("processes", 4)),
    "from_os_import_path": ("from os import path\n", ("files", 1)),
    "os_listdir": ("import os\nos.listdir('.')\n", ("files", 2)),
    "os_environ_write": ("import os\nos.environ['X'] = '1'\n", ("monkeypatch", 2)),
    "os_environ_update": ("import os\nos.environ.update(X='1')\n", ("monkeypatch", 2)),
    "assigned_alias": ("import torch\nt = torch.save\nt(1, 'f')\n", ("files", 2)),
    # module objects reached through attributes of anything
    "torch_sys": ("import torch\nx = torch.sys.modules\n", ("introspection", 2)),
    "dataclasses_sys": ("import dataclasses\nx = dataclasses.sys\n", ("introspection", 2)),
    "typing_sys": ("import typing\nx = typing.sys\n", ("introspection", 2)),
    "from_os_import_sys": ("from os import sys\n", ("introspection", 1)),
    "from_os_import_sys_alias": ("from os import sys as _s\n_s.modules['x'] = 1\n", ("introspection", 1)),
    "object_os": ("def f(x):\n    return x.os\n", ("files", 2)),
    "object_builtins": ("def f(foo):\n    return foo.builtins\n", ("introspection", 2)),
    "object_modules": ("def f(x):\n    return x.modules\n", ("introspection", 2)),
    "object_subprocess": ("def f(x):\n    return x.subprocess\n", ("processes", 2)),
    "object_importlib": ("def f(x):\n    return x.importlib\n", ("dynamic_code", 2)),
    "object_ctypes": ("def f(x):\n    return x.ctypes\n", ("ctypes", 2)),
    "object_time": ("def f(x):\n    return x.time\n", ("timers", 2)),
    "object_socket": ("def f(x):\n    return x.socket\n", ("network", 2)),
    "object_np": ("import torch\nx = torch.nn.functional.np\n", ("numpy", 2)),
    "enum_bltns": ("import enum\nb = enum.bltns\n", ("introspection", 2)),
    "stdlib_private_api": ("import functools\nlock = functools.RLock\n", ("import", 2)),
    "module_as_value": ("import torch\nt = torch\n", ("module_alias", 2)),
    "module_in_container": ("import os\nmods = [os]\n", ("module_alias", 2)),
    "module_as_argument": ("import torch\n\ndef f(m):\n    return m\n\nf(torch)\n", ("module_alias", 6)),
    # private attributes
    "private_chain": ("import torch\ntorch.utils._python_dispatch._disable_current_modes()\n", ("private_attribute", 2)),
    "private_import": ("from torch.utils._python_dispatch import _disable_current_modes\n", ("private_attribute", 1)),
    "private_import_module": ("import torch.utils._python_dispatch as d\n", ("private_attribute", 1)),
    "private_self": ("class C:\n    def f(self):\n        return self._x\n", ("private_attribute", 3)),
    "private_alias": ("import torch as t\nx = t._base\n", ("private_attribute", 2)),
    "private_triton": ("import triton\nx = triton.runtime._x\n", ("private_attribute", 2)),
    "dunder_attribute": ("def f(x):\n    return x.__class__\n", ("introspection", 2)),
    "dunder_name": ("b = __builtins__\n", ("introspection", 1)),
    "torch_c": ("import torch._C\n", ("torch_internals", 1)),
    "torch_dynamo": ("import torch._dynamo\n", ("torch_compile", 1)),
    # tensor subclasses and torch modes
    "tensor_subclass": ("import torch\nclass T(torch.Tensor):\n    pass\n", ("tensor_subclass", 2)),
    "tensor_subclass_from_import": ("from torch import Tensor\nclass T(Tensor):\n    pass\n", ("tensor_subclass", 2)),
    "tensor_subclass_alias": ("import torch\nBase = torch.Tensor\nclass T(Base):\n    pass\n", ("tensor_subclass", 3)),
    "torch_function_mode": ("import torch\nclass M(torch.overrides.TorchFunctionMode):\n    pass\n", ("tensor_subclass", 2)),
    "triton_subclass": ("import triton\nclass A(triton.runtime.Autotuner):\n    pass\n", ("tensor_subclass", 2)),
    "computed_base": ("def f(x):\n    class T(type(x)):\n        pass\n", ("tensor_subclass", 2)),
    "metaclass": ("class X(metaclass=type):\n    pass\n", ("tensor_subclass", 1)),
    "torch_function_def": ("def __torch_function__(cls, f, t, a=(), k=None): ...\n", ("tensor_subclass", 1)),
    "torch_dispatch_method": (
        "class C:\n    @classmethod\n    def __torch_dispatch__(cls, f, t, a=(), k=None):\n        pass\n",
        ("tensor_subclass", 3),
    ),
    "torch_function_assigned": ("class C:\n    __torch_function__ = staticmethod(print)\n", ("tensor_subclass", 2)),
    "torch_function_string": ("ns = {'__torch_function__': print}\n", ("tensor_subclass", 1)),
    "other_dunder_method": ("class C:\n    def __getattribute__(self, name):\n        pass\n", ("introspection", 2)),
    "module_getattr": ("def __getattr__(name):\n    return 1\n", ("introspection", 1)),
    "as_subclass": ("def f(x, T):\n    return x.as_subclass(T)\n", ("tensor_subclass", 2)),
    "type_three_args": ("X = type('X', (object,), {})\n", ("dynamic_code", 1)),
    "make_dataclass": ("import dataclasses\nX = dataclasses.make_dataclass('X', [])\n", ("dynamic_code", 2)),
    # Python-side extraction of tensor values
    "tolist": ("def f(x):\n    return x.tolist()\n", ("python_compute", 2)),
    "item": ("def f(x):\n    return x.item()\n", ("python_compute", 2)),
    "numpy_method": ("def f(x):\n    return x.numpy()\n", ("python_compute", 2)),
    "untyped_storage": ("def f(x):\n    return x.untyped_storage()\n", ("python_compute", 2)),
    "array_dunder": ("def f(x):\n    return x.__array__()\n", ("python_compute", 2)),
    "torch_tensor": ("import torch\nx = torch.tensor([1.0])\n", ("python_compute", 2)),
    "torch_from_dlpack": ("from torch import from_dlpack\n", ("python_compute", 1)),
    "torch_utils_dlpack": ("import torch.utils.dlpack\n", ("python_compute", 1)),
    "legacy_constructor": ("import torch\nx = torch.Tensor([1.0, 2.0])\n", ("python_compute", 2)),
    # torch and triton I/O, processes, code loading, internals
    "torch_save": ("import torch\ntorch.save(len, 'f')\n", ("files", 2)),
    "torch_from_file": ("import torch\ntorch.from_file('f')\n", ("files", 2)),
    "torch_load": ("import torch\ntorch.load('f')\n", ("files", 2)),
    "storage_from_file": ("def f(S):\n    return S.from_file('f')\n", ("files", 2)),
    "torch_hub": ("import torch\ntorch.hub.load('a', 'b')\n", ("network", 2)),
    "torch_distributed": ("import torch.distributed as dist\n", ("network", 1)),
    "torch_multiprocessing": ("import torch.multiprocessing\n", ("processes", 1)),
    "torch_package": ("from torch import package\n", ("dynamic_code", 1)),
    "torch_fx": ("import torch\ng = torch.fx.Graph()\n", ("dynamic_code", 2)),
    "cpp_extension": ("from torch.utils.cpp_extension import load_inline\n", ("inline_cpp", 1)),
    "torch_benchmark": ("import torch\nt = torch.utils.benchmark.Timer\n", ("timers", 2)),
    "torch_utils_data": ("from torch.utils.data import DataLoader\n", ("processes", 1)),
    "torch_utils_other": ("import torch\nh = torch.utils.hooks\n", ("torch_internals", 2)),
    "torch_ops": ("import torch\ny = torch.ops.aten.mm\n", ("torch_internals", 2)),
    "torch_library": (
        "import torch\n@torch.library.custom_op('x::y', mutates_args=())\ndef f(x):\n    pass\n",
        ("torch_internals", 2),
    ),
    "torch_classes": ("import torch\ntorch.classes.load_library('x.so')\n", ("torch_internals", 2)),
    "cudart": ("import torch\ntorch.cuda.cudart()\n", ("torch_internals", 2)),
    "torch_cuda_other": ("import torch\ntorch.cuda.caching_allocator_alloc(8)\n", ("torch_internals", 2)),
    "torch_global_state": ("import torch\ntorch.set_default_dtype(torch.float16)\n", ("torch_internals", 2)),
    "torch_backends": ("import torch\nx = torch.backends.cuda.matmul.allow_tf32\n", ("torch_internals", 2)),
    "jiterator": ("import torch\nf = torch.cuda.jiterator\n", ("foreign_kernels", 2)),
    "triton_driver": ("import triton\nn = triton.runtime.driver.active.utils\n", ("dynamic_code", 2)),
    "triton_build": ("from triton.runtime import build\n", ("inline_cpp", 1)),
    "triton_compiler": ("import triton.compiler\n", ("triton_internals", 1)),
    "triton_compile": ("import triton\ntriton.compile(src)\n", ("triton_internals", 2)),
    "triton_backends": ("from triton.backends import backends\n", ("triton_internals", 1)),
    "triton_knobs": ("import triton\ntriton.knobs.runtime.launch_enter_hook = None\n", ("triton_internals", 2)),
    "triton_knobs_store": ("import triton\ntriton.knobs.runtime.launch_enter_hook = None\n", ("monkeypatch", 2)),
    "triton_testing": ("import triton.testing\n", ("timers", 1)),
    "triton_tools": ("from triton.tools import disasm\n", ("triton_internals", 1)),
    "triton_unlisted": ("import triton\nm = triton.AsyncCompileMode\n", ("triton_internals", 2)),
    "ir_override": ("import triton\nc = triton.Config({}, ir_override='k.ptx')\n", ("files", 2)),
    "get_type_hints": ("import typing\ntyping.get_type_hints(len)\n", ("dynamic_code", 2)),
    "forward_ref": ("from typing import ForwardRef\n", ("dynamic_code", 1)),
    "singledispatch": ("import functools\n@functools.singledispatch\ndef f(x):\n    pass\n", ("dynamic_code", 2)),
    # Triton hooks laundering library code
    "pre_hook_torch": (
        """\
        import torch
        import triton

        @triton.autotune(configs=[triton.Config({}, pre_hook=torch.mm)], key=[])
        @triton.jit
        def k(x):
            pass
        """,
        ("torch_compute", 4),
    ),
    "post_hook_imported": (
        "from torch import mm\nimport triton\nd = triton.autotune([], [], post_hook=mm)\n",
        ("torch_compute", 3),
    ),
    "prune_configs_library": (
        "import torch, triton\nd = triton.autotune([], [], prune_configs_by={'early_config_prune': torch.sort})\n",
        ("torch_compute", 2),
    ),
    "heuristics_library": ("import torch, triton\nh = triton.heuristics({'X': torch.mm})\n", ("torch_compute", 2)),
    "config_positional_hook": ("import torch, triton\nc = triton.Config({}, 4, 3, 1, None, torch.mm)\n", ("torch_compute", 2)),
    "hook_attribute_store": ("import torch\n\ndef f(config):\n    config.pre_hook = torch.mm\n", ("torch_compute", 4)),
    "set_allocator_library": ("import torch, triton\ntriton.set_allocator(torch.empty)\n", ("torch_compute", 2)),
    # builtins, where they are the builtin
    "eval_in_function": ("def f(x):\n    return eval('1')\n", ("dynamic_code", 2)),
    "eval_module": ("eval('1')\n", ("dynamic_code", 1)),
    "exec_class_body": ("class C:\n    exec('x = 1')\n", ("dynamic_code", 2)),
    "getattr_default": ("def f(g=getattr):\n    return g\n", ("introspection", 1)),
    "compile_first_iterable": ("def f():\n    return [c for c in compile('1', 'f', 'eval').co_names]\n", ("dynamic_code", 2)),
    "global_eval": ("def f():\n    global eval\n    return eval('1')\n", ("dynamic_code", 3)),
    "module_rebinding": ("open = 1\n", ("files", 1)),
    "module_import_rebinding": ("from os import environ as input\n", ("files", 1)),
    "global_rebinding": ("def f():\n    global vars\n    vars = 1\n", ("introspection", 3)),
    "open_in_function": ("def f(p):\n    return open(p)\n", ("files", 2)),
    "memoryview": ("def f(x):\n    return memoryview(x)\n", ("ctypes", 2)),
    # objects that hand out a module's globals, names passed as strings, classes built by hand
    "capture_scope": ("import triton\n@triton.jit\ndef k(x):\n    pass\ng = k.get_capture_scope()\n", ("introspection", 5)),
    "dunder_string": ("def f(scope):\n    return scope['__builtins__']\n", ("introspection", 2)),
    "builtin_name_string": ("def f(b):\n    return b['exec']\n", ("dynamic_code", 2)),
    "eval_attribute": ("def f(b):\n    return b.eval('1')\n", ("dynamic_code", 2)),
    "match_class_attribute": (
        "def f(x):\n    match x:\n        case object(tolist=t):\n            return t\n",
        ("python_compute", 3),
    ),
    "type_as_value": ("t = type\n", ("dynamic_code", 1)),
    "metaclass_call": ("X = type(type(0))('X', (), {})\n", ("dynamic_code", 1)),
    "loop_alias": ("import torch\nfor T in (torch.Tensor,):\n    T.add = None\n", ("monkeypatch", 3)),
    "triton_runtime_internal": ("import triton\nk = triton.runtime.interpreter\n", ("triton_internals", 2)),
    "pre_run_hook": ("def f(k, g):\n    k.add_pre_run_hook(g)\n", ("torch_compute", 2)),
    "cuda_pluggable_allocator": (
        "import torch\na = torch.cuda.memory.CUDAPluggableAllocator('x.so', 'a', 'f')\n",
        ("torch_internals", 2),
    ),
    # everything else that was refused before
    "import_numpy": ("import numpy as np\n", ("numpy", 1)),
    "import_unknown": ("import requests_toolbelt\n", ("import", 1)),
    "relative_import": ("from . import x\n", ("import", 1)),
    "star_import": ("from torch import *\n", ("import", 1)),
    "import_threading": ("import threading\n", ("threads", 1)),
    "import_gc": ("import gc\n", ("introspection", 1)),
    "torch_compile": ("import torch\nf = torch.compile(g)\n", ("torch_compile", 2)),
    "torch_jit_decorator": ("import torch\n@torch.jit.script\ndef f(x):\n    return x\n", ("torch_compile", 2)),
    "compile_any_object": ("def f(t):\n    return t.compile(g)\n", ("torch_compile", 2)),
    "streams": ("import torch\ns = torch.cuda.Stream()\n", ("streams", 2)),
    "graphs": ("import torch\ng = torch.cuda.CUDAGraph()\n", ("streams", 2)),
    "cuda_event": ("import torch\ne = torch.cuda.Event(enable_timing=True)\n", ("timers", 2)),
    "frames": ("def f(g):\n    return g.gi_frame.f_back\n", ("introspection", 2)),
    "monkeypatch_module": ("import torch\ntorch.matmul = None\n", ("monkeypatch", 2)),
    "monkeypatch_augassign": ("import torch\ntorch.x += 1\n", ("monkeypatch", 2)),
    "monkeypatch_annassign": ("import torch\ntorch.x: int = 1\n", ("monkeypatch", 2)),
    "monkeypatch_del": ("import torch\ndel torch.x\n", ("monkeypatch", 2)),
    "monkeypatch_for_target": ("import torch\nfor torch.x in [1]:\n    pass\n", ("monkeypatch", 2)),
    "monkeypatch_from_import": ("from torch import Tensor\nTensor.add = None\n", ("monkeypatch", 2)),
    "monkeypatch_default_alias": ("import torch\n\ndef f(T=torch.Tensor):\n    T.add = None\n", ("monkeypatch", 4)),
    "monkeypatch_computed": ("def f(x):\n    type(x).add = None\n", ("monkeypatch", 2)),
    "monkeypatch_kernel": ("import triton\n@triton.jit\ndef k(x):\n    pass\nk.run = print\n", ("monkeypatch", 5)),
    "decorator_applied_to_library": (
        "import torch\nfrom dataclasses import dataclass\ndataclass(torch.Tensor)\n",
        ("monkeypatch", 3),
    ),
    "decorator_as_value": ("import functools\nto = functools.total_ordering\n", ("monkeypatch", 2)),
    "update_wrapper": ("import functools, torch\nfunctools.update_wrapper(torch.Tensor, f, ('add',))\n", ("introspection", 2)),
    # names, not objects: dangerous objects re-exported under innocent paths (the allow-list is of
    # objects' paths; nothing off it resolves), and callables that take attribute names
    "reexport_attrgetter": ("from torch.autograd.profiler_util import attrgetter\n", ("introspection", 1)),
    "reexport_attrgetter_chain": (
        "import torch\nb = torch.autograd.profiler_util.attrgetter('_' * 2 + 'self' + '_' * 2)(len)\n",
        ("introspection", 2),
    ),
    "getattr_from_fqn": ("import torch.ao.quantization.utils as u\nb = u.getattr_from_fqn(len, 'x')\n", ("introspection", 2)),
    "reexport_ctypes": ("from torch.xpu import cast, c_void_p\n", ("ctypes", 1)),
    "reexport_ctypes_module": ("import torch\nc = torch.cuda.memory.ctypes\n", ("ctypes", 2)),
    "json_codecs_open": ("import triton\nf = triton.runtime.autotuner.json.codecs.open\n", ("files", 2)),
    "cache_manager_reexport": ("from triton.runtime.autotuner import get_cache_manager\n", ("files", 1)),
    "triton_language_core_builtins": ("import triton.language as tl\nb = tl.core.builtins\n", ("introspection", 2)),
    "triton_runtime_module": ("import triton\na = triton.runtime.autotuner\n", ("triton_internals", 2)),
    "cached_property_lock": ("import triton.language as tl\nk = tl.tuple_type.name.lock\n", ("attribute", 2)),
    "torch_math_function": ("import torch\ny = torch.matmul(a, b)\n", ("torch_compute", 2)),
    "torch_unlisted_module": ("import torch.nn.functional as F\n", ("torch_internals", 1)),
    "unknown_attribute": ("def f(x):\n    return x.some_library_attribute\n", ("attribute", 2)),
    "tensor_private": ("def f(x):\n    return x._base\n", ("private_attribute", 2)),
    "tensor_hook": ("def f(x, g):\n    x.register_hook(g)\n", ("attribute", 2)),
    "library_store": ("def f(x):\n    x.requires_grad = True\n", ("monkeypatch", 2)),
    # the file's own names help only on the file's own objects
    "own_name_on_unknown_receiver": (
        "class P:\n    def item(self):\n        return 1\n\ndef f(x):\n    return x.item()\n",
        ("python_compute", 6),
    ),
    "method_with_library_self": (
        "class C:\n    def f(self):\n        return self.item()\n    def item(self):\n        return 1\n\ndef g(t):\n"
        "    return C.f(t)\n",
        ("python_compute", 3),
    ),
    "method_through_type": (
        "class C:\n    def f(self):\n        return self.tolist()\n    def tolist(self):\n        return []\n\n"
        "def g(c, t):\n    return type(c).f(t)\n",
        ("python_compute", 3),
    ),
    "method_as_class_value": (
        "class C:\n    def f(self):\n        return self.item()\n    def item(self):\n        return 1\n    g = f\n",
        ("python_compute", 3),
    ),
    "method_decorated": (
        "def deco(fn):\n    return fn\n\nclass C:\n    @deco\n    def f(self):\n        return self.item()\n"
        "    def item(self):\n        return 1\n",
        ("python_compute", 7),
    ),
    "wraps_assigned": ("import functools\n@functools.wraps(g, assigned=('add',))\ndef f():\n    pass\n", ("introspection", 2)),
    # class patterns read the attributes __match_args__ names (round three)
    "match_positional_plain_class": (
        "class C:\n    pass\n\ndef f(x):\n    match x:\n        case C(a):\n            return a\n",
        ("introspection", 6),
    ),
    "match_positional_frame_field": (
        "import dataclasses\n@dataclasses.dataclass\nclass G:\n    gi_frame: object = None\n\ndef f(x):\n"
        "    match x:\n        case G(frame):\n            return frame\n",
        ("introspection", 8),
    ),
    "match_positional_inherited_field": (
        "from dataclasses import dataclass\n@dataclass\nclass A:\n    f_back: object = None\n@dataclass\n"
        "class B(A):\n    ok: int = 0\n\ndef f(x):\n    match x:\n        case B(a, b):\n            return a\n",
        ("introspection", 11),
    ),
    "match_positional_library_class": (
        "import torch\n\ndef f(x):\n    match x:\n        case torch.Size(a):\n            return a\n",
        ("introspection", 5),
    ),
    "match_positional_shadowed_builtin": (
        "class int:\n    pass\n\ndef f(x):\n    match x:\n        case int(a):\n            return a\n",
        ("introspection", 6),
    ),
    "match_args_assignment": ("class C:\n    __match_args__ = ('gi_frame',)\n", ("introspection", 2)),
    # library bases: an explicit list (no ABCs, no subclasses of type)
    "abc_base": ("import typing\n\nclass C(typing.Hashable):\n    pass\n", ("tensor_subclass", 3)),
    "typing_type_base": ("from typing import Type\n\nclass M(Type):\n    pass\n", ("tensor_subclass", 3)),
    "protocol_base": ("import typing\n\nclass P(typing.Protocol):\n    pass\n", ("tensor_subclass", 3)),
    "metaclass_name_on_own_class": (
        "import enum\n\nclass E(enum.Enum):\n    A = 1\n\nclass N:\n    _convert_ = None\n\n"
        "X = E._convert_('X', 'm', lambda n: True)\n",
        ("private_attribute", 9),
    ),
    # format fields walk attributes; dunder names anywhere in a string
    "format_attribute_field": ("def f(x):\n    return '{0.real}'.format(x)\n", ("introspection", 2)),
    "format_nested_attribute_field": ("def f(x):\n    return '{0:{1.real}}'.format(x, x)\n", ("introspection", 2)),
    "format_map_attribute_field": ("def f(x):\n    return '{g.f_back}'.format_map({'g': x})\n", ("introspection", 2)),
    "format_non_literal": ("def f(s, x):\n    return s.format(x)\n", ("introspection", 2)),
    "format_unbound": ("def f(x):\n    return str.format('{0}', x)\n", ("introspection", 2)),
    "format_as_value": ("F = '{0.real}'.format\n", ("introspection", 1)),
    "dunder_inside_string": ("def f(x):\n    return '{0[__builtins__]}'.format(x)\n", ("introspection", 2)),
    "dunder_inside_fstring": ("def f(x):\n    return f'{x}.__class__'\n", ("introspection", 2)),
    "dunder_inside_bytes": ("K = b'x.__globals__'\n", ("introspection", 1)),
    # PTX is not Triton
    "inline_asm": ("import triton.language as tl\n\nf = tl.inline_asm_elementwise\n", ("foreign_kernels", 3)),
    "inline_asm_imported": ("from triton.language import inline_asm_elementwise\n", ("foreign_kernels", 1)),
    # classes whose instances the host reads or formats with their base's code run none of the file's
    # methods (round four: run returned a list whose __len__ computed the answer after the window)
    "list_subclass_len": ("class Out(list):\n    def __len__(self):\n        return 1\n", ("host_callback", 2)),
    "tuple_subclass_iter": ("class Out(tuple):\n    def __iter__(self):\n        yield 1\n", ("host_callback", 2)),
    "list_subclass_getitem": ("class Out(list):\n    def __getitem__(self, i):\n        return i\n", ("host_callback", 2)),
    "exception_repr": ("class Boom(RuntimeError):\n    def __repr__(self):\n        return 'x'\n", ("host_callback", 2)),
    "dict_subclass_eq": ("class D(dict):\n    def __eq__(self, other):\n        return True\n", ("host_callback", 2)),
    "namedtuple_len": (
        "from typing import NamedTuple\n\nclass P(NamedTuple):\n    a: int\n\n    def __len__(self):\n        return 1\n",
        ("host_callback", 6),
    ),
    "enum_hash": (
        "import enum\n\nclass E(enum.IntEnum):\n    A = 1\n    def __hash__(self):\n        return 1\n",
        ("host_callback", 5),
    ),
    "dunder_assigned_in_value_class": ("def f(self):\n    return 1\n\nclass Out(list):\n    __len__ = f\n", ("host_callback", 5)),
    "dunder_in_nested_block": (
        "class Out(tuple):\n    if True:\n        def __iter__(self):\n            yield 1\n",
        ("host_callback", 3),
    ),
    "value_class_through_own_base": (
        "class Base(list):\n    pass\n\nclass Out(Base):\n    def __len__(self):\n        return 1\n",
        ("host_callback", 5),
    ),
    "value_class_inherits_from_mixin": (
        "class Sized:\n    def __len__(self):\n        return 1\n\nclass Out(Sized, list):\n    pass\n",
        ("host_callback", 5),
    ),
    "exception_args_property": (
        "class E(ValueError):\n    @property\n    def args(self):\n        return ()\n",
        ("host_callback", 3),
    ),
    "list_subclass_index_method": ("class Out(list):\n    def index(self, x):\n        return 0\n", ("host_callback", 2)),
    # tensor values read as text: torch's formatter runs with the guard's recording off (round four)
    "print_builtin": ("def f(x):\n    print(x)\n", ("python_compute", 2)),
    "print_as_value": ("def f(xs):\n    return list(map(print, xs))\n", ("python_compute", 2)),
    "print_rebound_at_module_level": ("def print(x):\n    return x\n", ("python_compute", 1)),
    "repr_builtin": ("def f(x):\n    return repr(x)\n", ("python_compute", 2)),
    "repr_in_raise": ("def f(x):\n    raise ValueError(repr(x))\n", ("python_compute", 2)),
    "ascii_builtin": ("def f(x):\n    return ascii(x)\n", ("python_compute", 2)),
    "format_builtin": ("def f(x):\n    return format(x, '')\n", ("python_compute", 2)),
    "str_of_name": ("def f(x):\n    return str(x)\n", ("python_compute", 2)),
    "str_keyword": ("def f(x):\n    return str(object=x)\n", ("python_compute", 2)),
    "str_of_tensor_arithmetic": ("def f(x):\n    return str(x.shape[0] + x)\n", ("python_compute", 2)),
    "str_as_value": ("def f(xs):\n    return ','.join(map(str, xs))\n", ("python_compute", 2)),
    "str_assigned": ("S = str\n", ("python_compute", 1)),
    "fstring_of_name": ("def f(x):\n    s = f'{x}'\n", ("python_compute", 2)),
    "fstring_of_method_result": ("import torch\n\ndef f(x):\n    s = f'{x.view(torch.int32)}'\n", ("python_compute", 4)),
    "fstring_repr_conversion": ("def f(x):\n    return f'{x!r}'\n", ("python_compute", 2)),
    "fstring_debug_specifier": ("def f(x):\n    return f'{x=}'\n", ("python_compute", 2)),
    "fstring_name_in_format_spec": ("def f(w):\n    return f'{1:{w}}'\n", ("python_compute", 2)),
    "fstring_in_list_comprehension": ("def f(x):\n    return [f'{row}' for row in x]\n", ("python_compute", 2)),
    "fstring_own_attribute_named_shape": (
        "class Box:\n    def __init__(self, t):\n        self.shape = t\n\ndef f(t):\n    return f'{Box(t).shape}'\n",
        ("python_compute", 6),
    ),
    "fstring_enum_value_mutable": (
        "import enum\n\nclass E(enum.Enum):\n    A = []\n\ndef f():\n    return f'{E.A.value}'\n",
        ("python_compute", 7),
    ),
    "percent_tuple": ("def f(x):\n    return '%s' % (x,)\n", ("python_compute", 2)),
    "percent_single": ("def f(x):\n    return '%r' % x\n", ("python_compute", 2)),
    "percent_dict": ("def f(x):\n    return '%(a)s' % {'a': x}\n", ("python_compute", 2)),
    "percent_string_name": ("FMT = '%s'\n\ndef f(x):\n    return FMT % x\n", ("python_compute", 4)),
    "percent_augmented": ("def f(x):\n    s = '%s'\n    s %= x\n    return s\n", ("python_compute", 3)),
    "format_method_argument": ("def f(x):\n    return '{}'.format(x)\n", ("python_compute", 2)),
    "format_method_starred": ("def f(xs):\n    return '{}{}'.format(*xs)\n", ("python_compute", 2)),
    "format_method_keyword": ("def f(x):\n    return '{a}'.format(a=x)\n", ("python_compute", 2)),
    "format_map_argument": ("def f(x):\n    return '{a}'.format_map({'a': x})\n", ("python_compute", 2)),
    "format_method_as_value": ("F = '{}'.format\n", ("python_compute", 1)),
    "fstring_in_lambda_inside_raise": ("def f(x):\n    raise ValueError((lambda: f'{x}')())\n", ("python_compute", 2)),
    "fstring_in_generator_inside_raise": (
        "LEAK = []\n\ndef f(xs):\n    raise ValueError(LEAK.append(f'{x}' for x in xs))\n",
        ("python_compute", 4),
    ),
    "str_in_map_stored_inside_raise": (
        "LEAK = []\n\ndef f(x):\n    raise ValueError(LEAK.append(map(str, x)))\n",
        ("python_compute", 4),
    ),
    "str_in_partial_inside_raise": (
        "import functools\n\ndef f(x):\n    raise ValueError(functools.partial(str, x))\n",
        ("python_compute", 4),
    ),
    "fstring_message_outside_raise": (
        "def f(x):\n    message = f'bad {x}'\n    raise ValueError(message)\n",
        ("python_compute", 2),
    ),
    "fstring_in_assert_message": ("def f(x):\n    assert x.dim() == 2, f'{x}'\n", ("python_compute", 2)),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused(case: str) -> None:
    source, expected = REFUSED[case]
    result = found(source)
    assert expected in result, result


# The attack snippets of the brief, with their complete answer.
EXACT: dict[str, tuple[str, list[tuple[str, int]]]] = {
    "from_os_import_system": ("from os import system; system('id')\n", [("processes", 1)]),
    "os_alias_system": ("import os as o; o.system('x')\n", [("processes", 1)]),
    "torch_sys_modules": ("import torch\ntorch.sys.modules\n", [("introspection", 2)]),
    "dataclasses_sys": ("import dataclasses\ndataclasses.sys\n", [("introspection", 2)]),
    "from_os_import_sys": ("from os import sys\n", [("introspection", 1)]),
    "disable_current_modes": (
        "import torch\ntorch.utils._python_dispatch._disable_current_modes()\n",
        [("private_attribute", 2)],
    ),
    "tensor_subclass": ("import torch\nclass T(torch.Tensor): pass\n", [("tensor_subclass", 2)]),
    "torch_function": ("def __torch_function__(cls, f, t, a=(), k=None): ...\n", [("tensor_subclass", 1)]),
    "tolist": ("def f(x):\n    return x.tolist()\n", [("python_compute", 2)]),
    "float_is_fine": ("def f(x):\n    return float(x[0, 0])\n", []),
    "torch_save": ("import torch\ntorch.save(len, 'f')\n", [("files", 2)]),
    "torch_from_file": ("import torch\ntorch.from_file('f')\n", [("files", 2)]),
    "torch_load": ("import torch\ntorch.load('f')\n", [("files", 2)]),
    "get_type_hints": ("import typing\ntyping.get_type_hints(len)\n", [("dynamic_code", 2)]),
    # names the file never binds: under the interpreter Triton injects np, inspect and its builder
    "injected_numpy": ("def run(G):\n    return np.add(G, G)\n", [("undefined_name", 2)]),
    "injected_builder": ("def run(G):\n    return TensorHandle\n", [("undefined_name", 2)]),
    "type_three_args": ("type('X', (object,), {})\n", [("dynamic_code", 1)]),
    "knobs_hook": (
        "import triton\ntriton.knobs.runtime.launch_enter_hook = None\n",
        [("triton_internals", 2), ("monkeypatch", 2)],
    ),
    "eval_in_function": ("def f(x):\n    return eval('1')\n", [("dynamic_code", 2)]),
    "tensor_subclass_mode": ("import torch\nclass M(torch.overrides.TorchFunctionMode):\n    pass\n", [("tensor_subclass", 2)]),
    "autotuner_subclass": ("import triton\nclass A(triton.runtime.Autotuner):\n    pass\n", [("tensor_subclass", 2)]),
}


@pytest.mark.parametrize("case", sorted(EXACT))
def test_refused_exactly(case: str) -> None:
    source, expected = EXACT[case]
    assert found(source) == expected


def test_pre_hook_library_function_is_torch_compute() -> None:
    source = """\
        import torch
        import triton
        import triton.language as tl

        @triton.autotune(configs=[triton.Config({'BLOCK': 64})], key=['n'], pre_hook=torch.mm)
        @triton.jit
        def kernel(x, n, BLOCK: tl.constexpr):
            pass
        """
    assert found(source) == [("torch_compute", 5)]


HONEST: dict[str, str] = {
    "input_parameter": """\
        def kernel(x):
            return x


        def run(input, steps):
            return kernel(input)
        """,
    "local_compile_and_vars": """\
        def helper(x):
            compile = x + 1
            vars = [compile, 2]
            return vars

        def other(open, getattr=None):
            return [input for input in range(3)], open, getattr
        """,
    "closure_binds_builtin_name": """\
        def outer(eval):
            def inner():
                return eval(1)
            return inner
        """,
    "global_memo": """\
        import torch

        _SM_COUNT = None


        def sm_count():
            global _SM_COUNT
            if _SM_COUNT is None:
                _SM_COUNT = torch.cuda.get_device_properties(0).multi_processor_count
            return _SM_COUNT
        """,
    "nonlocal_counter": """\
        def make():
            count = 0
            def bump():
                nonlocal count
                count += 1
                return count
            return bump
        """,
    "autotune": """\
        import torch
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({'BLOCK': 64}, num_warps=4),
                                  triton.Config({'BLOCK': 128}, num_warps=8)],
                         key=['n'], pre_hook=lambda nargs: nargs['C'].zero_())
        @triton.jit
        def kernel(C, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(C + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


        def _prune(configs, nargs, **kwargs):
            return configs


        @triton.autotune(configs=[triton.Config({'BLOCK': 64})], key=['n'],
                         prune_configs_by={'early_config_prune': _prune, 'perf_model': None, 'top_k': 2},
                         reset_to_zero=['C'], do_bench=lambda fn, quantiles: [1.0, 1.0, 1.0])
        @triton.heuristics(values={'EVEN': lambda args: args['n'] % args['BLOCK'] == 0})
        @triton.jit(do_not_specialize=['n'])
        def kernel2(C, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            pass


        def run(G, steps):
            out = torch.empty_like(G)
            kernel[lambda meta: (triton.cdiv(G.numel(), meta['BLOCK']),)](out, G.numel())
            return out
        """,
    "dataclasses": """\
        import dataclasses
        from dataclasses import dataclass, field


        @dataclass(frozen=True)
        class Tile:
            block_m: int
            block_n: int = 64
            stages: list = field(default_factory=list)


        @dataclasses.dataclass
        class Plan:
            tile: Tile
            warps: int = 4

            def __post_init__(self):
                self.total = self.tile.block_m * self.warps


        PLANS = {(64, 200): Plan(Tile(64))}
        PLAN = dataclasses.replace(PLANS[(64, 200)], warps=8)
        """,
    "tensor_descriptor": """\
        from triton.tools.tensor_descriptor import TensorDescriptor


        def desc(t, rows, cols):
            return TensorDescriptor.from_tensor(t, [rows, cols])
        """,
    "environ": """\
        import os

        _INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
        _DEBUG = "D2K_DEBUG" in os.environ or os.getenv("X", "0") == "1"
        """,
    "plain_python": """\
        from __future__ import annotations

        import enum
        import functools
        import itertools
        import math
        from typing import NamedTuple, Optional

        import torch
        import triton


        class Mode(enum.Enum):
            FAST = 1
            EXACT = 2


        class Shape(NamedTuple):
            m: int
            n: int


        class Cache:
            def __init__(self):
                self.entries = {}

            def __len__(self):
                return len(self.entries)


        class TooBig(ValueError):
            pass


        @functools.lru_cache(maxsize=None)
        def blocks(n: int) -> int:
            return triton.next_power_of_2(math.isqrt(n))


        def check(G: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
            if not isinstance(G, torch.Tensor) or G.dtype not in (torch.bfloat16, torch.float16):
                raise TooBig(f"bad input {type(G).__name__}")
            props = torch.cuda.get_device_properties(G.device)
            pairs = list(itertools.product(range(2), repeat=2))
            return torch.empty(G.shape, dtype=torch.float16, device=G.device) if out is None else out


        if __name__ == "__main__":
            SUMMARY = (len(Cache()), Mode.FAST, Shape(1, 2), blocks(64))
        """,
    "type_of_value": """\
        def describe(x):
            if isinstance(x, type) or type(x) is int:
                return type(x).__name__
            return str(type(x))
        """,
    "own_plan": """\
        class Plan:
            def __init__(self, block_m):
                self._block_m = block_m

            def item(self):
                return self._block_m

            def compile(self):
                return Plan(self._block_m * 2)

            def describe(self):
                return self.compile().block_m if self.item() else self._block_m

            @property
            def block_m(self):
                return self._block_m


        class Tuned(Plan):
            def __init__(self, block_m, warps):
                super().__init__(block_m)
                self._warps = warps

            def item(self):
                return super().item() * self._warps


        PLAN = Plan(64)
        TUNED = Tuned(64, 4)


        def run(G, steps):
            return PLAN.item() + PLAN.compile().block_m + TUNED.item() + TUNED._warps
        """,
    "own_private_names_on_unknown_receivers": """\
        class Plan:
            def __init__(self, block_m):
                self._block_m = block_m


        def blocks(plan):
            return plan._block_m
        """,
    "libdevice": """\
        import triton
        import triton.language as tl
        from triton.language.extra import libdevice
        from triton.language.extra.libdevice import fma as fused


        @triton.jit
        def kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            y = libdevice.fma(x, x, 1.0) + tl.extra.libdevice.fma(x, 2.0, x) + fused(x, x, x)
            tl.store(x_ptr + offs, tl.math.exp2(y) + tl.sum(y, axis=0))
        """,
    "match_and_format": """\
        import dataclasses
        import enum
        import typing

        T = typing.TypeVar("T")


        @dataclasses.dataclass(frozen=True)
        class Tile:
            "A tile; __init__ and __repr__ come from the dataclass."

            block_m: int
            block_n: int = 64


        class Shape(typing.NamedTuple):
            m: int
            n: int


        class Box(typing.Generic[T]):
            pass


        class Kind(enum.IntFlag):
            A = 1
            B = 2


        def describe(x) -> None:
            "Names are formatted only into error messages (a name can hold a tensor)."
            match x:
                case Tile(m, n) if m == n:
                    raise ValueError("square {}x{}".format(m, n))
                case Tile(block_m=m):
                    raise ValueError("{0}/{k}".format(m, k=Kind.A.name))
                case Shape(m, n):
                    raise ValueError("{0:>6}x{1:<6}|{0!r:{1}}".format(m, n))
                case int(v) | float(v):
                    raise ValueError("{v}".format_map({"v": v}))
                case [a, b, *_]:
                    raise ValueError(f"{a}, {b} {'__main__'}")
                case {"key": value}:
                    raise ValueError("{0[key]}".format({"key": value}))
            raise ValueError(str(x))
        """,
    "data_ptr_and_float": """\
        def run(G, steps):
            key = (G.data_ptr(), float(G[0, 0, 0]), int(steps))
            return key
        """,
    # round four: value classes with fields only, plain classes with their dunders, formatting of
    # shapes, dtypes and constants anywhere and of names in error messages
    "namedtuple_config_fields_only": """\
        from typing import NamedTuple


        class Config(NamedTuple):
            block_m: int
            block_n: int
            index: int = 0
            count: int = 1
            num_warps: int = 4


        CONFIGS = (Config(64, 64), Config(128, 64, num_warps=8))


        def pick(n):
            return CONFIGS[0] if n < 4096 else CONFIGS[1]
        """,
    "frozen_dataclass_from_lru_cache": """\
        import functools
        from dataclasses import dataclass

        import torch


        @dataclass(frozen=True)
        class Plan:
            block: int
            warps: int

            def __post_init__(self):
                if self.block <= 0:
                    raise ValueError(f"block must be positive, got {self.block}")


        @functools.lru_cache(maxsize=None)
        def plan_for(n: int, dtype: torch.dtype) -> Plan:
            return Plan(128 if n >= 4096 else 64, 8 if dtype == torch.float16 else 4)


        def run(G, steps):
            plan = plan_for(G.shape[-1], G.dtype)
            return plan.block * plan.warps
        """,
    "enum_with_match": """\
        import enum


        class Mode(enum.Enum):
            SMALL = 1
            LARGE = 2

            @classmethod
            def for_size(cls, n):
                return cls.SMALL if n < 4096 else cls.LARGE


        class Kind(str, enum.Enum):
            A = "a"


        def blocks(n):
            match Mode.for_size(n):
                case Mode.SMALL:
                    return 64
                case Mode.LARGE:
                    return 128
            raise ValueError(f"no mode for {n}: {Mode.SMALL.value}, {Kind.A.name}")


        NAMES = f"{Mode.SMALL.name}/{Mode.LARGE.value}/{Kind.A.value}"
        """,
    "launcher_with_private_state_and_call": """\
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


        class Launcher:
            def __init__(self, block):
                self._block = block
                self._grid = None

            def __call__(self, x):
                out = torch.empty_like(x)
                self._grid = (triton.cdiv(x.numel(), self._block),)
                _copy[self._grid](x, out, x.numel(), BLOCK=self._block)
                return out

            def __len__(self):
                return self._block

            def __repr__(self):
                return "Launcher()"


        LAUNCH = Launcher(128)


        def run(G, steps):
            return LAUNCH(G)
        """,
    "value_error_with_only_init": """\
        class ShapeError(ValueError):
            def __init__(self, message, shape):
                super().__init__(message)
                self.shape_seen = shape


        def check(G):
            if G.dim() != 3:
                raise ShapeError(f"G must be 3-d, got shape {tuple(G.shape)} ({G.dim()} dims)", G.shape)
        """,
    "fstring_in_raise_with_names": """\
        EPS = 1e-7


        def check(G, eps, steps):
            if eps != EPS:
                raise ValueError(f"eps must be {EPS}, got {eps}")
            if steps not in (1, 5):
                raise ValueError("steps must be 1 or 5, got %d (%s)" % (steps, G.dtype))
            if G.dtype is None:
                raise TypeError("bad dtype {} for {!r}".format(G.dtype, G))
            if not G.is_contiguous():
                raise ValueError(str(G.stride()) + ", ".join(f"{s}" for s in G.stride()) + str(G))
            if G.numel() == 0:
                raise RuntimeError(", ".join(map(str, G.shape))) from None
        """,
    "shape_fstring_outside_raise": """\
        import math

        import triton


        def describe(x):
            key = f"{x.shape[0]}x{x.shape[1]}"
            sizes = f"{len(x)} {x.numel()} {x.size(0) * 2} {x.stride()} {x.dim()} {x.ndim} {x.element_size()}"
            where = f"{x.device} {x.dtype} {x.is_cuda} {x.layout} {x.is_contiguous()} {tuple(x.shape)!r}"
            blocks = f"{triton.cdiv(x.numel(), 128)} {math.prod(x.shape[1:])} {max(x.shape)} {-x.shape[0]:>6}"
            return key + sizes + where + blocks + "%d-%s" % (x.shape[0], x.dtype) + "{}".format(len(x))
        """,
    "dtype_str_outside_raise": """\
        def key(x):
            return str(x.dtype) + str(len(x)) + str(type(x)) + f"{type(x).__name__}" + str(3) + str()
        """,
    "str_as_type": """\
        import enum
        from typing import Optional


        class Kind(str, enum.Enum):
            A = "a"


        def describe(x: Optional[str], table: dict[str, int]) -> str:
            name: str = "x"
            if isinstance(x, (str, bytes)) or type(x) is str or issubclass(type(x), str):
                return name
            match x:
                case str():
                    return str.lower(name)
            return name
        """,
    "print_of_the_files_own": """\
        def run(G, steps):
            def print(*args):
                return args

            return print(G)
        """,
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_passes(case: str) -> None:
    assert found(HONEST[case]) == []


@pytest.mark.parametrize("name", sorted(HONEST_CORPUS))
def test_honest_corpus_passes(name: str) -> None:
    assert check_source(HONEST_CORPUS[name]) == []


def test_honest_corpus_is_complete() -> None:
    assert len([n for n in HONEST_CORPUS if n.endswith("expert.py")]) >= 11
    assert len(HONEST_CORPUS) >= 70


def test_session_example_solutions_pass(tmp_path: Path) -> None:
    """The solutions of the recorded example sessions (their workspace is a git bundle)."""
    bundles = sorted((REPO / "sessions" / "examples").glob("*/workspace.bundle"))
    if not bundles or shutil.which("git") is None:
        pytest.skip("no example sessions or no git")
    checked = 0
    for bundle in bundles:
        dest = tmp_path / bundle.parent.name
        subprocess.run(["git", "clone", "-q", str(bundle), str(dest)], check=True, capture_output=True)
        for solution in dest.glob("solution.py"):
            assert check_source(solution.read_text()) == [], bundle.parent.name
            checked += 1
    assert checked >= 1


def test_one_violation_per_rule_and_line_in_source_order() -> None:
    source = "import torch\n\ndef run(G, steps):\n    x = G.tolist() + G.item()\n    return eval('x')\n\nimport gc\n"
    assert found(source) == [("python_compute", 4), ("dynamic_code", 5), ("introspection", 7)]


def test_the_same_rule_for_every_spelling_of_a_path() -> None:
    spellings = [
        "import os\nos.system('x')\n",
        "import os as o\no.system('x')\n",
        "from os import system\nsystem('x')\n",
        "from os import system as run_it\nrun_it('x')\n",
    ]
    for source in spellings:
        assert {rule for rule, _ in found(source)} == {"processes"}, source
    assert path_rule("os.system") == ("processes", "os.system is not allowed (os: only os.environ and os.getenv)")
    assert path_rule("os.environ") is None and path_rule("os.getenv") is None


def test_violations_name_the_construct() -> None:
    (violation,) = check_source("import os\nos.system('id')\n")
    assert violation.line == 2
    assert "os.system" in violation.detail
    (violation,) = check_source("import torch\nx = torch.sys\n")
    assert "torch.sys" in violation.detail


def test_round_four_details_say_what_to_do() -> None:
    (violation,) = check_source("class Out(list):\n    def __len__(self):\n        return 1\n")
    assert (violation.rule, violation.line) == ("host_callback", 2)
    assert violation.detail.startswith("class Out derives from list and defines __len__: the harness reads what run")
    (violation,) = check_source("class Sized:\n    def __len__(self):\n        return 1\n\nclass Out(Sized, list):\n    pass\n")
    assert "class Out derives from list and inherits __len__ from Sized" in violation.detail
    (violation,) = check_source(
        "import typing\n\nclass B(typing.NamedTuple):\n    a: int\n\nclass C(B):\n    def __iter__(self):\n        yield 1\n"
    )
    assert "class C derives from typing.NamedTuple (through B) and defines __iter__" in violation.detail
    (violation,) = check_source("def f(x):\n    return f'{x}'\n")
    assert violation.rule == "python_compute"
    assert "formatting x as text (an f-string field) outside a raise statement is not allowed" in violation.detail
    assert "reads its values on the host" in violation.detail and "shapes, dtypes, sizes and constants" in violation.detail
    (violation,) = check_source("def f(x):\n    print(x)\n")
    assert violation.detail.startswith("print is not allowed (it formats values as text")


def test_syntax_error_is_raised() -> None:
    with pytest.raises(SyntaxError):
        check_source("def run(G, steps)\n    return G\n")


def test_has_run_function_and_allowed_imports() -> None:
    assert has_run_function("def run(G, steps):\n    return G\n")
    assert not has_run_function("def other(G):\n    return G\n")
    assert {"torch", "triton", "os", "math"} <= ALLOWED_IMPORTS
    assert "numpy" not in ALLOWED_IMPORTS
