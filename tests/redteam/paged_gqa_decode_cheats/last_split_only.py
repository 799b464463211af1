# Wrong split merging: a split-KV design with two splits per sequence whose "merge" keeps only the
# last split's normalised partial output instead of weighting every split by its log-sum-exp. The
# naive core's kernel with each program's token loop started at the second split (n // 2, its
# SECOND_HALF switch): exactly the partial that such a merge returns.
def run(q, k_cache, v_cache, page_table, seq_lens, scale):
    return decode(q, k_cache, v_cache, page_table, seq_lens, scale, second_half=True)
