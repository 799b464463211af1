"""The static policy: every class of refused construct names its rule and line; honest code passes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from workbench.harness.policy_static import ALLOWED_IMPORTS, check_source, has_run_function, path_rule

REPO = Path(__file__).resolve().parent.parent
SHIPPED = [
    REPO / "tests" / "solutions" / "muon_naive.py",
    REPO / "tasks" / "muon_orthogonalize" / "template.py",
    REPO / "tasks" / "muon_orthogonalize" / "expert.py",
]


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
    "torch_save": ("import torch\ntorch.save(x, 'f')\n", ("files", 2)),
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
    "get_type_hints": ("import typing\ntyping.get_type_hints(f)\n", ("dynamic_code", 2)),
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
    "wraps_assigned": ("import functools\n@functools.wraps(g, assigned=('add',))\ndef f():\n    pass\n", ("introspection", 2)),
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
    "torch_save": ("import torch\ntorch.save(x, 'f')\n", [("files", 2)]),
    "torch_from_file": ("import torch\ntorch.from_file('f')\n", [("files", 2)]),
    "torch_load": ("import torch\ntorch.load('f')\n", [("files", 2)]),
    "get_type_hints": ("import typing\ntyping.get_type_hints(f)\n", [("dynamic_code", 2)]),
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
            print(len(Cache()), Mode.FAST, Shape(1, 2), blocks(64))
        """,
    "type_of_value": """\
        def describe(x):
            if isinstance(x, type) or type(x) is int:
                return type(x).__name__
            return str(type(x))
        """,
    "data_ptr_and_float": """\
        def run(G, steps):
            key = (G.data_ptr(), float(G[0, 0, 0]), int(steps))
            return key
        """,
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_passes(case: str) -> None:
    assert found(HONEST[case]) == []


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_solutions_pass(path: Path) -> None:
    assert check_source(path.read_text()) == []


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


def test_syntax_error_is_raised() -> None:
    with pytest.raises(SyntaxError):
        check_source("def run(G, steps)\n    return G\n")


def test_has_run_function_and_allowed_imports() -> None:
    assert has_run_function("def run(G, steps):\n    return G\n")
    assert not has_run_function("def other(G):\n    return G\n")
    assert {"torch", "triton", "os", "math"} <= ALLOWED_IMPORTS
    assert "numpy" not in ALLOWED_IMPORTS
