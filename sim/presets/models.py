"""Model shapes from the published Hugging Face ``config.json`` files, and what follows from them.

Parameter counts are derived from the shapes (attention, MLP or experts, norms, embeddings), not
copied: the tests check them against hand calculations and against the published totals.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int                  # dense MLP width
    tie_embeddings: bool = False
    qkv_bias: bool = False
    # Mixture of experts (experts == 0: dense)
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate: int = 0
    dense_layers: int = 0              # the first layers keep a dense MLP (DeepSeek's first_k_dense_replace)
    # Multi-head latent attention (kv_lora_rank == 0: ordinary GQA attention)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_dim: int = 0
    nope_dim: int = 0
    v_head_dim: int = 0
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def attention_params(self) -> int:
        """Weights of one layer's attention block."""
        h = self.hidden
        if self.kv_lora_rank:
            q_dim = self.heads * (self.nope_dim + self.rope_dim)
            q = (h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * q_dim) if self.q_lora_rank else h * q_dim
            kv = (h * (self.kv_lora_rank + self.rope_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * self.heads * (self.nope_dim + self.v_head_dim))
            return q + kv + self.heads * self.v_head_dim * h
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        bias = (q + 2 * kv) if self.qkv_bias else 0
        return h * q + 2 * h * kv + q * h + bias

    def mlp_params(self, width: int) -> int:
        """A gated (SwiGLU) MLP: gate, up and down projections."""
        return 3 * self.hidden * width

    def _layer_params(self, experts_counted: int) -> int:
        """All layers, with ``experts_counted`` routed experts per MoE layer."""
        norms = 2 * self.hidden
        attention = self.attention_params()
        if not self.is_moe:
            return self.layers * (attention + self.mlp_params(self.intermediate) + norms)
        moe_layers = self.layers - self.dense_layers
        width = self.moe_intermediate or self.intermediate
        moe = (experts_counted + self.shared_experts) * self.mlp_params(width) + self.hidden * self.experts
        return (self.dense_layers * (attention + self.mlp_params(self.intermediate) + norms)
                + moe_layers * (attention + moe + norms))

    def _embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tie_embeddings else 2) + self.hidden

    @property
    def total_params(self) -> int:
        """Every weight: what memory must hold."""
        return self._layer_params(self.experts) + self._embedding_params()

    @property
    def active_params(self) -> int:
        """Weights one token is multiplied by (routed experts: only its top-k): what FLOPs scale with."""
        return self._layer_params(self.experts_per_token if self.is_moe else 0) + self._embedding_params()

    @property
    def embedding_params(self) -> int:
        """The input embedding table: a lookup, no FLOPs (the LM head, a matmul, is counted)."""
        return self.vocab * self.hidden

    def attention_flops_per_pair(self) -> int:
        """FLOPs of attention for one (query, key) pair over all layers: QK^T and PV, 2 each per
        multiply-add, over every query head's dimensions."""
        if self.kv_lora_rank:
            return 2 * self.layers * self.heads * (self.nope_dim + self.rope_dim + self.v_head_dim)
        return 4 * self.layers * self.heads * self.head_dim

    def kv_values_per_token(self) -> int:
        """Numbers cached per token over all layers: K and V per KV head, or MLA's compressed latent
        (kv_lora_rank) plus the shared RoPE key (rope_dim), one copy per layer."""
        if self.kv_lora_rank:
            return self.layers * (self.kv_lora_rank + self.rope_dim)
        return 2 * self.layers * self.kv_heads * self.head_dim


HF = "https://huggingface.co/{}/blob/main/config.json"

MODELS = {
    # Llama-2-7B: multi-head attention (32 KV heads), the model of older engine benchmarks.
    "llama-2-7b": Model("Llama-2-7B", 32, 4096, 32, 32, 128, 32000, 11008,
                        source=HF.format("meta-llama/Llama-2-7b-hf")),
    "llama-3-8b": Model("Llama-3-8B", 32, 4096, 32, 8, 128, 128256, 14336,
                        source=HF.format("meta-llama/Meta-Llama-3-8B")),
    "llama-3-70b": Model("Llama-3-70B", 80, 8192, 64, 8, 128, 128256, 28672,
                         source=HF.format("meta-llama/Meta-Llama-3-70B")),
    "llama-3.1-405b": Model("Llama-3.1-405B", 126, 16384, 128, 8, 128, 128256, 53248,
                            source=HF.format("meta-llama/Llama-3.1-405B")),
    # Llama-2-70B: the model of the MLPerf Inference rows used to validate the presets.
    "llama-2-70b": Model("Llama-2-70B", 80, 8192, 64, 8, 128, 32000, 28672,
                         source=HF.format("meta-llama/Llama-2-70b-hf")),
    "qwen2.5-7b": Model("Qwen2.5-7B", 28, 3584, 28, 4, 128, 152064, 18944, qkv_bias=True,
                        source=HF.format("Qwen/Qwen2.5-7B")),
    "qwen2.5-72b": Model("Qwen2.5-72B", 80, 8192, 64, 8, 128, 152064, 29568, qkv_bias=True,
                         source=HF.format("Qwen/Qwen2.5-72B")),
    "mixtral-8x7b": Model("Mixtral-8x7B", 32, 4096, 32, 8, 128, 32000, 14336, experts=8,
                          experts_per_token=2, source=HF.format("mistralai/Mixtral-8x7B-v0.1")),
    # DeepSeek-V3: MLA (q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim
    # 128, v_head_dim 128), 256 routed experts (8 per token) + 1 shared of width 2048, the first 3
    # layers dense (18432 wide). The multi-token-prediction module (14B) is not counted.
    "deepseek-v3": Model("DeepSeek-V3", 61, 7168, 128, 128, 128, 129280, 18432, experts=256,
                         experts_per_token=8, shared_experts=1, moe_intermediate=2048, dense_layers=3,
                         q_lora_rank=1536, kv_lora_rank=512, rope_dim=64, nope_dim=128, v_head_dim=128,
                         source=HF.format("deepseek-ai/DeepSeek-V3")),
}
