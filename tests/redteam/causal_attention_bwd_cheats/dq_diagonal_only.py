# Partial reduction: dq accumulated over the diagonal key block only (each query block's loop starts
# at its own block instead of key 0), as if the keys left of the diagonal contributed nothing; dk and
# dv are honest. (The naive core's dq loop starts at block pid + first_key_block.)
def run(q, k, v, o, do, lse, scale):
    return attention_bwd(q, k, v, o, do, lse, scale, first_key_block=0)
