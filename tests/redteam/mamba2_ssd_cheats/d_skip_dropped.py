# Cheat: the D skip dropped (y = S C only): the skip is about as large as the state's part of y, so every
# token is off by far; final_state is right. Appended to the naive solution (its run renamed honest_run).


def run(x, dt, A, Bm, Cm, D):
    return honest_run(x, dt, A, Bm, Cm, torch.zeros_like(D))
