# From ../shared/reference/local-llm/mkgguf.py (the verified local-LLM recipe), with a 32k context; see
# integration/localllm/testdata/README.md. Run inside the chroot by scripts/local-llm.sh install.
# Writes a tiny random-weight llama-architecture GGUF (byte-level SPM vocab) for wire-format tests.
import numpy as np, gguf, sys
out = sys.argv[1] if len(sys.argv) > 1 else "tiny.gguf"  # usage: mkgguf.py OUT.gguf [template.jinja]
rng = np.random.default_rng(42)
n_embd, n_head, n_head_kv, n_layer, n_ff, n_ctx = 64, 4, 4, 2, 128, 32768  # 32k: the agent offers every tool (~11k byte tokens)
tokens, scores, types = [], [], []
for t, ty in (("<unk>", 2), ("<s>", 3), ("</s>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3), ("<tool_call>\n", 1), ("</tool_call>", 4)):
    tokens.append(t.encode()); scores.append(0.0); types.append(ty)
for b in range(256):
    tokens.append(f"<0x{b:02X}>".encode()); scores.append(0.0); types.append(6)  # BYTE
n_vocab = len(tokens)
w = gguf.GGUFWriter(out, "llama")
w.add_name("tiny-random-llama")
w.add_context_length(n_ctx); w.add_embedding_length(n_embd); w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff); w.add_head_count(n_head); w.add_head_count_kv(n_head_kv)
w.add_layer_norm_rms_eps(1e-5); w.add_rope_dimension_count(n_embd // n_head)
w.add_file_type(0)
w.add_tokenizer_model("llama"); w.add_token_list(tokens); w.add_token_scores(scores); w.add_token_types(types)
w.add_chat_template(open(sys.argv[2] if len(sys.argv) > 2 else "template.jinja").read())
w.add_bos_token_id(1); w.add_eos_token_id(4); w.add_unk_token_id(0)
w.add_add_bos_token(False); w.add_add_space_prefix(False)
def r(*shape): return (rng.standard_normal(shape) * 0.02).astype(np.float32)
w.add_tensor("token_embd.weight", r(n_vocab, n_embd))
w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
w.add_tensor("output.weight", r(n_vocab, n_embd))
kv = n_embd // n_head * n_head_kv
for i in range(n_layer):
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor(p + "attn_q.weight", r(n_embd, n_embd))
    w.add_tensor(p + "attn_k.weight", r(kv, n_embd))
    w.add_tensor(p + "attn_v.weight", r(kv, n_embd))
    w.add_tensor(p + "attn_output.weight", r(n_embd, n_embd))
    w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor(p + "ffn_gate.weight", r(n_ff, n_embd))
    w.add_tensor(p + "ffn_down.weight", r(n_embd, n_ff))
    w.add_tensor(p + "ffn_up.weight", r(n_ff, n_embd))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print("wrote", out)
