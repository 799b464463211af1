# Cheat (finding: names, not objects): ctypes types re-exported by a torch device module (torch.xpu)
# read a tensor's memory into Python with no aten op the runtime guard could see.
from torch.xpu import c_uint32


def run(G, steps):
    first_word = c_uint32.from_address(G.data_ptr()).value  # raw host memory, read from Python
    if first_word < 0:
        raise ValueError("unreachable")
    return honest_run(G, steps)
