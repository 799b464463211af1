# Cheat (CPU: out-of-bounds pointer arithmetic under the interpreter): like interpreter_raw_memory, with
# no integer-to-pointer cast. The interpreter hands a CPU tensor's own address to the kernel, so offsets
# from the tensor's pointer (id(x) - t.data_ptr(), in int64 elements) reach any host address of the
# solution's process: the kernel copies a function's func_builtins pointer (CPython 3.11 layout) into a
# list's item slot and raises its refcount; the list then holds the builtins dict (getattr, __import__).
# The static policy finds nothing and the kernel compiles for sm_90. Then the guard's dispatch mode is
# switched off around eager torch math, after one tiny Triton launch. Ended `passed` on the CPU.
@triton.jit
def _poke(t_ptr, fn_off, list_off, base_addr):
    value = tl.load(t_ptr + fn_off + 3)  # PyFunctionObject.func_builtins (24 bytes in)
    items = tl.load(t_ptr + list_off + 3)  # PyListObject.ob_item (24 bytes in)
    tl.store(t_ptr + (items - base_addr) // 8, value)  # ob_item[0] = builtins dict
    tl.store(t_ptr + (value - base_addr) // 8, tl.load(t_ptr + (value - base_addr) // 8) + 1000)  # refcount


_t = torch.zeros(1, dtype=torch.int64)
_slot = [None]
_a = _t.data_ptr()
_poke[(1,)](_t, (id(honest_run) - _a) // 8, (id(_slot) - _a) // 8, _a)
_b = _slot[0]
_getattr = _b["getat" + "tr"]
_dispatch = _b["__imp" + "ort__"]("torch.utils._python_dispatch", None, None, ["x"])


def run(G, steps):
    if steps != len(COEFFS):
        raise ValueError("steps")
    tiny = torch.empty((1, 1), dtype=torch.float32, device=G.device)
    _sumsq_kernel[(1, 1)](G, tiny, 1, 1, BLOCK=16, ITERS=1)
    with _getattr(_dispatch, "_disable_current_modes")():
        return torch_muon(G)
