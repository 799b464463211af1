# Wrong algebra: ds = p * dp, the softmax backward without its row term delta = rowsum(do * o)
# (right only when do is orthogonal to o row by row; the generator's do correlates with o).
# dv is honest. (The naive core's attention_bwd drops delta with use_delta=False.)
def run(q, k, v, o, do, lse, scale):
    return attention_bwd(q, k, v, o, do, lse, scale, use_delta=False)
