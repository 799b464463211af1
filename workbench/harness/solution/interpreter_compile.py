"""Under the interpreter, compile every launched kernel for the GPU before it runs.

The Triton interpreter runs a kernel's Python body on numpy arrays, so it runs things a GPU build never
compiles: a tile's `.handle.data` is a numpy array there, numpy or Python calls on tiles work, and so
does any Python the body contains. Before the interpreter first runs a kernel for a given
specialisation (argument types, constexpr values, launch options), `KernelCompiler.check` compiles it
with Triton's own front end for an H100/H200 (`GPUTarget("cuda", 90, 32)`): AST -> TTIR (the code
generator, where `.handle.data`, numpy on tiles and unsupported constructs fail) -> TTGIR (the NVIDIA
backend's layout and pipelining passes). Neither needs a GPU nor ptxas; later stages (LLVM IR, PTX,
cubin) are not run. A kernel that does not compile raises `CompilationError` naming the kernel and the
line, and the launch fails as it would on the GPU.

Each (kernel, specialisation) is compiled once per process; later launches cost one dictionary lookup
after the specialisation is computed. Only the harness's solution process under TRITON_INTERPRET=1
uses this (`interpreter_fix.install`).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import triton
import triton.language as tl
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import ASTSource, make_backend
from triton.compiler.errors import CompilationError as _TritonCompilationError
from triton.runtime import interpreter
from triton.runtime.jit import JITFunction, create_function_from_signature

CAPABILITY = 90  # the H100/H200 the kernels are judged on
WARP_SIZE = 32


class CompilationError(_TritonCompilationError):  # type: ignore[misc]
    """A launched kernel does not compile for the GPU; the message is one line that names the kernel
    and the line (the harness reports the first line of an error). Named like Triton's own error so the
    harness reports it as `compile_error`."""

    def __init__(self, message: str) -> None:
        self.src = None
        self.node = None
        self.error_message = message
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.message,)


def _unhashable_to_key(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        if isinstance(value, (list, tuple)):
            return tuple(_unhashable_to_key(v) for v in value)
        return ("repr", type(value).__name__, repr(value))
    return value


_DELETE = object()  # an attribute the interpreter added (the class had none): removed while compiling


def _patch_owners() -> list[Any]:
    """What the interpreter's `_patch_lang` patches: triton.language, its core and math modules (their
    builtins and language functions) and four of core's classes."""
    core = tl.core
    return [tl, core, tl.math, core.tensor, core.tensor_descriptor_base, core.condition, core.dtype]


def _is_interpreter_patch(name: str, value: Any) -> bool:
    """Whether `value` is one the interpreter's `_patch_lang` put there (all are defined in
    triton/runtime/interpreter.py, or `print` for static_print)."""
    if name == "static_print" and value is builtins.print:
        return True
    if isinstance(value, functools.partial):
        value = value.func
    elif isinstance(value, property):
        value = value.fget
    code = getattr(value, "__code__", None)
    return code is not None and code.co_filename == interpreter.__file__


def _pristine(owners: list[Any]) -> list[dict[str, Any]]:
    """Each owner's attributes that are not interpreter patches (taken when the compiler is made, which
    in the solution process is before any kernel has run)."""
    return [{k: v for k, v in vars(owner).items() if not _is_interpreter_patch(k, v)} for owner in owners]


def _unpatched_value(name: str, value: Any, index: int, owners: list[Any], pristine: list[dict[str, Any]]) -> Any:
    """What `owners[index].name` was before the interpreter patched it to `value`, `_DELETE`, or None
    if it cannot be told."""
    # a builtin's patch is `lambda *args, member=<the builtin>, **kwargs: ...`
    for _ in range(8):
        member = (getattr(value, "__kwdefaults__", None) or {}).get("member")
        if member is None:
            break
        if not _is_interpreter_patch(name, member):
            return member
        value = member
    if name in pristine[index]:
        return pristine[index][name]
    if index < 2:  # triton.language re-exports core's language functions (range, reduce, static_assert, ...)
        other = vars(owners[1 - index]).get(name)
        if other is not None and not _is_interpreter_patch(name, other):
            return other
    if index >= 3 and name in ("__index__", "__bool__", "__repr__"):
        return _DELETE  # added to tl.tensor and tl.condition by the interpreter
    return None


@contextmanager
def _unpatched_language(pristine: list[dict[str, Any]]) -> Iterator[None]:
    """triton.language without the interpreter's patches for the duration (they are put back after).

    A launch restores what it patched, but a `@triton.jit` helper called inside a kernel patches again
    and never restores (`InterpretedFunction.__call__`): under the plain interpreter (and before
    `interpreter_fix` was installed) a helper of triton.language's own, such as `tl.sum`, leaves
    `triton.language.core` patched, and the code generator then calls the interpreter's builtins."""
    owners = _patch_owners()
    replaced: list[tuple[Any, str, Any]] = []
    try:
        for index, owner in enumerate(owners):
            for name, value in list(vars(owner).items()):
                if not _is_interpreter_patch(name, value):
                    continue
                original = _unpatched_value(name, value, index, owners, pristine)
                if original is None:
                    continue
                replaced.append((owner, name, value))
                if original is _DELETE:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)
        yield
    finally:
        for owner, name, value in reversed(replaced):
            setattr(owner, name, value)


class KernelCompiler:
    """Compiles interpreted kernels with Triton's front end, once per kernel and specialisation."""

    def __init__(self) -> None:
        self.interpreted_type: type = interpreter.InterpretedFunction
        self.target = GPUTarget("cuda", CAPABILITY, WARP_SIZE)
        self.backend = make_backend(self.target)
        self.jit_base: type = JITFunction
        self.compiling_jit = self._compiling_jit_class()
        self.jits: dict[Any, Any] = {}  # Python function -> its JITFunction for compiling
        self.binders: dict[Any, Callable[..., Any]] = {}
        self.compiled: set[Any] = set()
        self.failures: dict[Any, str] = {}
        self.library: list[tuple[Any, str, Any]] | None = None  # triton.language's interpreted functions
        self.pristine = _pristine(_patch_owners())

    # -- interpreted functions -> JITFunctions -------------------------------------------------------

    def _compiling_jit_class(self) -> type:
        compiler = self

        class JitGlobals(dict):  # type: ignore[type-arg]
            """A kernel module's globals as the compiler must see them: every InterpretedFunction read
            through it is the JITFunction of the same Python function. Both the code generator (through
            `get_capture_scope`) and the cache key's dependency walk (`__globals__` itself) read it."""

            def __getitem__(self, name: str) -> Any:
                return compiler.as_jit(super().__getitem__(name))

            def get(self, name: str, default: Any = None) -> Any:
                return compiler.as_jit(super().get(name, default))

        class CompilingJITFunction(self.jit_base):  # type: ignore[name-defined,misc]
            """A JITFunction whose globals show the compiler JITFunctions where the interpreter has
            InterpretedFunctions (the kernel's own @triton.jit helpers)."""

            def __init__(self, fn: Any, *args: Any, **kwargs: Any) -> None:
                super().__init__(fn, *args, **kwargs)
                self.__globals__ = JitGlobals(fn.__globals__)

            def get_capture_scope(self) -> dict[str, Any]:
                return {name: compiler.as_jit(value) for name, value in super().get_capture_scope().items()}

        return CompilingJITFunction

    def as_jit(self, value: Any) -> Any:
        """`value` with any InterpretedFunction replaced by a JITFunction of the same Python function."""
        if isinstance(value, self.interpreted_type):
            return self.jit(value)
        if type(value) is tuple:
            return tuple(self.as_jit(v) for v in value)
        return value

    def jit(self, interpreted: Any) -> Any:
        fn = interpreted.fn
        jitted = self.jits.get(fn)
        if jitted is None:
            accepted = inspect.signature(self.jit_base).parameters
            kwargs = {k: v for k, v in getattr(interpreted, "kwargs", {}).items() if k in accepted}
            jitted = self.jits[fn] = self.compiling_jit(fn, **kwargs)
        return jitted

    def _library_functions(self) -> list[tuple[Any, str, Any]]:
        """(owner, name, JITFunction) for triton.language's own @jit functions (tl.sum, tl.cdiv, ...):
        under the interpreter they are InterpretedFunctions in their modules and, as methods, wrappers
        on tl.tensor; the code generator must find JITFunctions there."""
        if self.library is None:
            found: list[tuple[Any, str, Any]] = []
            for name, module in list(sys.modules.items()):
                if (name == "triton.language" or name.startswith("triton.language.")) and isinstance(module, types.ModuleType):
                    for attr, value in list(vars(module).items()):
                        if isinstance(value, self.interpreted_type):
                            found.append((module, attr, self.jit(value)))
            for attr, value in list(vars(tl.tensor).items()):
                for cell in getattr(value, "__closure__", None) or ():
                    try:
                        contents = cell.cell_contents
                    except ValueError:
                        continue
                    if isinstance(contents, self.interpreted_type):
                        found.append((tl.tensor, attr, self.jit(contents)))
                        break
            self.library = found
        return self.library

    @contextmanager
    def _compiling(self) -> Iterator[None]:
        """triton.language as a GPU build sees it, for the duration of one compile: without the
        interpreter's patches, with JITFunctions for its own @jit functions."""
        with _unpatched_language(self.pristine), self._library_as_jit():
            knobs = triton.knobs.runtime
            had_interpret = "interpret" in knobs.__dict__
            interpret = knobs.__dict__.get("interpret")
            try:
                knobs.__dict__["interpret"] = False  # ConstexprFunction results stay constexprs
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    yield
            finally:
                if had_interpret:
                    knobs.__dict__["interpret"] = interpret
                else:
                    knobs.__dict__.pop("interpret", None)

    @contextmanager
    def _library_as_jit(self) -> Iterator[None]:
        saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in self._library_functions()]
        try:
            for owner, name, jitted in self._library_functions():
                setattr(owner, name, jitted)
            yield
        finally:
            for owner, name, value in saved:
                setattr(owner, name, value)

    # -- the check ------------------------------------------------------------------------------------

    def check(self, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Compile `kernel` (an InterpretedFunction) for these launch arguments unless done before;
        raise CompilationError if it does not compile for the GPU."""
        jitted = self.jit(kernel)
        binder = self.binders.get(kernel.fn)
        if binder is None:
            binder = self.binders[kernel.fn] = create_function_from_signature(jitted.signature, jitted.params, self.backend)
        converted = {k: self.as_jit(v) for k, v in kwargs.items()}
        bound_args, specialization, options = binder(*(self.as_jit(a) for a in args), **converted)
        key = (
            kernel.fn,
            _unhashable_to_key([tuple(s) for s in specialization]),
            _unhashable_to_key(sorted(options.items())),
        )
        if key in self.compiled:
            return
        failure = self.failures.get(key)
        if failure is None:
            try:
                self._compile(jitted, converted, bound_args, specialization, options)
            except CompilationError as exc:
                failure = self.failures[key] = exc.message
            except _TritonCompilationError as exc:
                failure = self.failures[key] = self._describe(jitted, exc)
            except Exception as exc:  # a pass failure (e.g. an unsupported layout) or a bad launch option
                failure = self.failures[key] = self._describe(jitted, exc)
            else:
                self.compiled.add(key)
                return
        raise CompilationError(failure)

    def _compile(self, jitted: Any, kwargs: dict[str, Any], bound_args: Any, specialization: Any, options: Any) -> None:
        backend = self.backend
        with self._compiling():
            options, signature, constexprs, attrs = jitted._pack_args(backend, kwargs, bound_args, specialization, options)
            source = ASTSource(jitted, signature, constexprs, attrs)
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            codegen = backend.get_codegen_implementation(options)
            module = source.make_ir(self.target, options, codegen, backend.get_module_map(), context)
            metadata: dict[str, Any] = {}
            module = backend.make_ttir(module, metadata, options, CAPABILITY)
            backend.make_ttgir(module, metadata, options, CAPABILITY)

    def _describe(self, jitted: Any, exc: BaseException) -> str:
        """One line: the kernel, the innermost line of the solution that failed, and why."""
        where = ""
        reason = f"{type(exc).__name__}: {exc}"
        chain: list[BaseException] = []
        current: BaseException | None = exc
        while current is not None and len(chain) < 32:
            chain.append(current)
            current = current.__cause__
        for error in chain:
            if not isinstance(error, _TritonCompilationError):
                continue
            located = self._locate(error)
            if located is not None:
                where = located
            if error.error_message:
                reason = str(error.error_message).strip().splitlines()[-1] if str(error.error_message).strip() else reason
        reason = " ".join(reason.split())
        if len(reason) > 300:
            reason = reason[:297] + "..."
        return f"kernel {jitted.__name__} does not compile for the GPU (sm_{CAPABILITY}){where}: {reason}"

    def _locate(self, error: Any) -> str | None:
        node = getattr(error, "node", None)
        lineno = getattr(node, "lineno", None)
        if lineno is None or error.src is None:
            return None
        for jitted in list(self.jits.values()):
            if jitted.src == error.src:
                line = jitted.def_file_line_number + lineno - 1
                text = error.src.split("\n")[lineno - 1].strip()
                return f" at {Path(jitted.file_name).name} line {line} (in {jitted.__name__}: {text})"
        return None


_compiler: KernelCompiler | None = None


def compiler() -> KernelCompiler:
    global _compiler
    if _compiler is None:
        _compiler = KernelCompiler()
    return _compiler
