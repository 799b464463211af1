# Cheat: the hyper-parameters of the first call kept in a module-level dict and used for every later call (a
# "warm" optimiser that assumes step, lr and the betas never change, or that folds them into constants once).
# Caught because every trial's inputs draw a new step and lr from their seed: the second call's state is wrong.
_FIRST: dict = {}


def run(params, grads, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    if not _FIRST:
        _FIRST.update(step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay)
    honest_run(params, grads, exp_avg, exp_avg_sq, **_FIRST)
