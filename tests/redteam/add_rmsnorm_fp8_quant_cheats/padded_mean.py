# Wrong divisor: the mean square is the sum over the row divided by the padded power-of-two block
# width instead of N. Exact at N = 256 or 1024 (and 4096, 8192); rstd is 15% too large at N = 384
# (7% at 7168), so only a workload whose N is not a power of two exposes it.
def run(x, residual, weight, eps):
    rstd = add_and_rstd(x, residual, residual, triton.next_power_of_2(x.shape[1]), eps)
    return quantize(residual, rstd, weight)
