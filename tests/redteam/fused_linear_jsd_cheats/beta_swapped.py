# Wrong algebra: beta weights the student's divergence from the mixture instead of the teacher's (m = (1 - b) p + b q,
# and the KL ends exchanged: b = 0 gives reverse KL). Right only at b = 0.5, where the JSD is symmetric.
def run(hs, Ws, ht, Wt, labels, beta, temperature):
    return honest_run(hs, Ws, ht, Wt, labels, 1.0 - beta, temperature)
