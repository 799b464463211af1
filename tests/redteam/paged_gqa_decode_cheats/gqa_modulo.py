# Wrong GQA mapping: query head h reads KV head h % Hkv (heads interleaved) instead of h // (Hq / Hkv)
# (heads grouped, as in Llama/Qwen checkpoints and the reference's repeat_interleave). The naive
# core's kernel with that one line changed (its KV_MODULO switch).
def run(q, k_cache, v_cache, page_table, seq_lens, scale):
    return decode(q, k_cache, v_cache, page_table, seq_lens, scale, kv_modulo=True)
