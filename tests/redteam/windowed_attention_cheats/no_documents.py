# Wrong mask: document boundaries ignored (every sequence one document); the window honest.
def run(q, k, v, cu_seqlens, window):
    return attention(q, k, v, cu_seqlens, window, 0)
