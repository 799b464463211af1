# Wrong lse: the saved natural-log lse used as if it were base 2 (p = exp2(s log2(e) - lse)), the
# convention of kernels whose forward saves m log2(e) + log2(l). p is then off by exp(0.31 lse) per
# row. (The naive core reads lse as base 2 with lse_log2=True.)
def run(q, k, v, o, do, lse, scale):
    return attention_bwd(q, k, v, o, do, lse, scale, lse_log2=True)
