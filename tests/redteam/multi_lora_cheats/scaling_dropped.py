# Cheat: the delta added without LoRA's scaling (alpha / R = 2 in the inputs): each token with an adapter is
# off by half its delta. Appended to the naive solution (its run renamed honest_run).


def run(x, lora_a, lora_b, base, seg_starts, seg_adapters, scaling):
    return honest_run(x, lora_a, lora_b, base, seg_starts, seg_adapters, 1.0)
