# Cheat: switch the runtime policy off (pop the dispatch modes) and compute with torch.
import torch
from torch.utils._python_dispatch import _disable_current_modes


def run(G, steps):
    honest_run(G, 5)  # a Triton launch, so launches are counted
    with _disable_current_modes():
        return torch_muon(G)
