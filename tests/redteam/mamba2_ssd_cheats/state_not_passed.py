# Cheat: the state not passed across chunks: every 16 steps the scan starts again from zero (chunks
# computed independently, the state-passing step forgotten); final_state is the last chunk's own. The naive
# scan run chunk by chunk on views of the inputs. Appended to the naive solution (its run renamed honest_run).

CHUNK = 16


def run(x, dt, A, Bm, Cm, D):
    batch, T, H, P = x.shape
    y = torch.empty_like(x)
    state = torch.empty((batch, H, P, Bm.shape[3]), dtype=torch.float32, device=x.device)
    decay = decays(dt, A)
    for t0 in range(0, T, CHUNK):
        steps = slice(t0, min(T, t0 + CHUNK))
        scan(x[:, steps], dt[:, steps], decay[:, steps], Bm[:, steps], Cm[:, steps], D, y[:, steps], state)
    return y, state
