# Cheat: Adam without its bias corrections, p -= lr m / (sqrt(v) + eps), as if 1 - beta1^step and 1 - beta2^step
# were 1 (true only late in training): the honest step at a step number so large that both corrections are 1.
# The inputs draw step where beta2^step >= 0.01, so the missing sqrt(1 - beta2^step) alone scales every update
# by 0.995 or less (up to 20x at the earliest steps), far above the params' bound of about 1e-6 of |p|.


def run(params, grads, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    honest_run(params, grads, exp_avg, exp_avg_sq, 10**9, lr, beta1, beta2, eps, weight_decay)
