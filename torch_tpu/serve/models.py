"""The serving engine's own forward passes over a Hugging Face checkpoint's weights.

Llama, Qwen3 and GPT-2 architectures, written against the model's
`state_dict()` (Hugging Face's module code and `generate` are not used).
One call runs a batch laid out as `[B, L]`: B sequences, each with L query
tokens (a prefill chunk, or one decode token padded to L), and attends over
each sequence's keys and values gathered from the paged cache through its
block table. The new keys and values are written into the cache at their
slots first, so a chunk attends to itself as well as to what came before.

Cache layout: per layer one key and one value tensor of shape
`[num_blocks * block_size, kv_heads, head_dim]` (flat slots). Block 0 is
the engine's scratch block: padding tokens write there, and padding entries
of a block table point there (masked out by position).
"""
import math

import torch
import torch.nn.functional as F


class UnsupportedModel(ValueError):
    pass


def _text_config(config):
    if hasattr(config, "get_text_config"):
        return config.get_text_config(decoder=True)
    return config


class Int8Linear:
    """A linear layer's weight in int8, one float scale per output channel
    (symmetric, weight-only): w ~= q * scale[:, None]. The forward converts
    q to the activations' dtype inside the program and scales the product,
    so the weights stay int8 in device memory (a quarter of float32's)."""

    def __init__(self, weight, out_dim=0):
        # out_dim: the axis of output channels (0 for nn.Linear's [out, in],
        # 1 for GPT-2's Conv1D [in, out])
        w = weight.detach().float()
        amax = w.abs().amax(dim=1 - out_dim).clamp(min=1e-12)
        self.scale = (amax / 127.0).to(weight.dtype)
        shape = (-1, 1) if out_dim == 0 else (1, -1)
        self.q = torch.round(w / (amax / 127.0).view(shape)).clamp(-127, 127).to(torch.int8)
        self.out_dim = out_dim

    def to(self, device):
        self.q, self.scale = self.q.to(device), self.scale.to(device)
        return self

    @property
    def shape(self):
        return self.q.shape

    def nbytes(self):
        return self.q.numel() + self.scale.numel() * self.scale.element_size()


def linear(x, w, b=None):
    """F.linear for a float weight [out, in] or an Int8Linear of one."""
    if isinstance(w, Int8Linear):
        y = F.linear(x, w.q.to(x.dtype)) * w.scale
        return y + b if b is not None else y
    return F.linear(x, w, b)


def addmm(b, x, w):
    """torch.addmm(b, x, w) for a float weight [in, out] (GPT-2's Conv1D) or
    an Int8Linear of one."""
    if isinstance(w, Int8Linear):
        return torch.mm(x, w.q.to(x.dtype)) * w.scale + b
    return torch.addmm(b, x, w)


class PagedCausalLM:
    """Weights on `device` plus the forward over a paged cache."""

    def __init__(self, hf_model, device, quantization=None):
        if quantization not in (None, "int8"):
            raise ValueError(f"torch_tpu.serve: quantization {quantization!r} is not supported "
                             "(supported: int8)")
        self.quantization = quantization
        cfg = _text_config(hf_model.config)
        self.config = cfg
        self.device = torch.device(device)
        self.model_type = getattr(cfg, "model_type", "")
        sd = hf_model.state_dict()
        self.dtype = next(iter(sd.values())).dtype
        if self.model_type in ("llama", "qwen3", "mistral", "qwen2"):
            self.arch = "llama"
            self._load_llama(hf_model, cfg, sd)
        elif self.model_type == "gpt2":
            self.arch = "gpt2"
            self._load_gpt2(cfg, sd)
        else:
            raise UnsupportedModel(
                f"torch_tpu.serve: model_type {self.model_type!r} is not supported "
                "(supported: llama, qwen3, gpt2)")

    # ---- weights ---------------------------------------------------------
    def _w(self, sd, name):
        t = sd[name]
        return t.detach().to(self.device)

    def _lw(self, sd, name, out_dim=0):
        """A linear layer's weight: int8 per output channel under
        quantization="int8" (embeddings, norms, biases and the LM head stay
        in the checkpoint's dtype)."""
        if self.quantization == "int8":
            return Int8Linear(sd[name], out_dim).to(self.device)
        return self._w(sd, name)

    def _load_llama(self, hf_model, cfg, sd):
        if getattr(cfg, "use_sliding_window", False) and getattr(cfg, "sliding_window", None):
            raise UnsupportedModel("torch_tpu.serve: sliding-window attention is not supported")
        rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
        rope_type = rope.get("rope_type", rope.get("type", "default")) if isinstance(rope, dict) else "default"
        if rope_type == "dynamic":
            raise UnsupportedModel("torch_tpu.serve: dynamic RoPE scaling is not supported")
        self.n_layers = cfg.num_hidden_layers
        self.n_heads = cfg.num_attention_heads
        self.n_kv = getattr(cfg, "num_key_value_heads", None) or self.n_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.n_heads
        self.eps = cfg.rms_norm_eps
        self.qk_norm = "model.layers.0.self_attn.q_norm.weight" in sd
        rot = hf_model.model.rotary_emb
        # the checkpoint's own inverse frequencies and scaling (every static RoPE type)
        self.inv_freq = rot.inv_freq.detach().float().to(self.device)
        self.rope_scale = float(getattr(rot, "attention_scaling", 1.0))
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.embed = self._w(sd, "model.embed_tokens.weight")
        self.norm = self._w(sd, "model.norm.weight")
        self.lm_head = self._w(sd, "lm_head.weight") if "lm_head.weight" in sd else self.embed
        self.layers = []
        for i in range(self.n_layers):
            p = f"model.layers.{i}."
            a = p + "self_attn."
            layer = {
                "ln1": self._w(sd, p + "input_layernorm.weight"),
                "ln2": self._w(sd, p + "post_attention_layernorm.weight"),
                "gate": self._lw(sd, p + "mlp.gate_proj.weight"),
                "up": self._lw(sd, p + "mlp.up_proj.weight"),
                "down": self._lw(sd, p + "mlp.down_proj.weight"),
                "o": self._lw(sd, a + "o_proj.weight"),
                "o_b": self._w(sd, a + "o_proj.bias") if a + "o_proj.bias" in sd else None,
            }
            for n in ("q", "k", "v"):
                layer[n] = self._lw(sd, a + f"{n}_proj.weight")
                b = a + f"{n}_proj.bias"
                layer[n + "_b"] = self._w(sd, b) if b in sd else None
            if self.qk_norm:
                layer["q_norm"] = self._w(sd, a + "q_norm.weight")
                layer["k_norm"] = self._w(sd, a + "k_norm.weight")
            self.layers.append(layer)
        self.vocab_size = self.lm_head.shape[0]

    def _load_gpt2(self, cfg, sd):
        pre = "transformer." if "transformer.wte.weight" in sd else ""
        if getattr(cfg, "scale_attn_by_inverse_layer_idx", False) or getattr(cfg, "reorder_and_upcast_attn", False):
            raise UnsupportedModel("torch_tpu.serve: GPT-2 attention variants are not supported")
        act = getattr(cfg, "activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
            raise UnsupportedModel(f"torch_tpu.serve: GPT-2 activation {act!r} is not supported")
        self.act_tanh = act != "gelu"
        self.n_layers = cfg.n_layer
        self.n_heads = cfg.n_head
        self.n_kv = cfg.n_head
        self.head_dim = cfg.n_embd // cfg.n_head
        self.eps = cfg.layer_norm_epsilon
        self.scale = 1.0 / math.sqrt(self.head_dim) if getattr(cfg, "scale_attn_weights", True) else 1.0
        self.wte = self._w(sd, pre + "wte.weight")
        self.wpe = self._w(sd, pre + "wpe.weight")
        self.ln_f = (self._w(sd, pre + "ln_f.weight"), self._w(sd, pre + "ln_f.bias"))
        self.lm_head = self._w(sd, "lm_head.weight") if "lm_head.weight" in sd else self.wte
        self.layers = []
        for i in range(self.n_layers):
            p = f"{pre}h.{i}."
            layer = {k: self._w(sd, p + k) for k in (
                "ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias",
                "attn.c_attn.bias", "attn.c_proj.bias", "mlp.c_fc.bias", "mlp.c_proj.bias")}
            for k in ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"):
                layer[k] = self._lw(sd, p + k, out_dim=1)  # Conv1D: [in, out]
            self.layers.append(layer)
        self.vocab_size = self.lm_head.shape[0]

    @property
    def max_positions(self):
        cfg = self.config
        return getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)

    def new_cache(self, num_slots):
        shape = (num_slots, self.n_kv, self.head_dim)
        return ([torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(self.n_layers)],
                [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(self.n_layers)])

    # ---- pieces ------------------------------------------------------------
    def _rms(self, x, w):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return w * xf.to(x.dtype)

    @staticmethod
    def _rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    def _attend(self, q, k, v, layer_k, layer_v, slots, block_tables, positions, block_size):
        """q [B,L,H,D], k/v [B,L,Hkv,D]: writes k/v at their slots, attends over
        the gathered blocks; returns [B,L,H*D]."""
        B, L = q.shape[0], q.shape[1]
        flat = slots.reshape(-1)
        layer_k.index_copy_(0, flat, k.reshape(-1, self.n_kv, self.head_dim))
        layer_v.index_copy_(0, flat, v.reshape(-1, self.n_kv, self.head_dim))
        nb = block_tables.shape[1]
        blocks_k = layer_k.view(-1, block_size, self.n_kv, self.head_dim)
        blocks_v = layer_v.view(-1, block_size, self.n_kv, self.head_dim)
        S = nb * block_size
        kg = blocks_k[block_tables].reshape(B, S, self.n_kv, self.head_dim)
        vg = blocks_v[block_tables].reshape(B, S, self.n_kv, self.head_dim)
        rep = self.n_heads // self.n_kv
        if rep > 1:
            kg = kg[:, :, :, None, :].expand(B, S, self.n_kv, rep, self.head_dim).reshape(
                B, S, self.n_heads, self.head_dim)
            vg = vg[:, :, :, None, :].expand(B, S, self.n_kv, rep, self.head_dim).reshape(
                B, S, self.n_heads, self.head_dim)
        qh = q.transpose(1, 2)                     # [B,H,L,D]
        kh = kg.permute(0, 2, 3, 1)                # [B,H,D,S]
        vh = vg.transpose(1, 2)                    # [B,H,S,D]
        scores = torch.matmul(qh, kh) * self.scale  # [B,H,L,S]
        key_pos = torch.arange(S, device=q.device)
        allowed = key_pos.view(1, 1, S) <= positions.view(B, L, 1)
        scores = scores.masked_fill(~allowed.view(B, 1, L, S), float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        out = torch.matmul(probs, vh)              # [B,H,L,D]
        return out.transpose(1, 2).reshape(B, L, self.n_heads * self.head_dim)

    # ---- forward -----------------------------------------------------------
    def forward(self, cache, input_ids, positions, slots, block_tables, last_idx, block_size):
        """All arguments tpu tensors: input_ids/positions/slots [B,L] int64,
        block_tables [B,NB] int64, last_idx [B] int64 (the query index whose
        logits are returned). Returns float32 logits [B, vocab]."""
        if self.arch == "gpt2":
            return self._forward_gpt2(cache, input_ids, positions, slots, block_tables, last_idx, block_size)
        return self._forward_llama(cache, input_ids, positions, slots, block_tables, last_idx, block_size)

    def _forward_llama(self, cache, input_ids, positions, slots, block_tables, last_idx, block_size):
        ks, vs = cache
        B, L = input_ids.shape
        x = F.embedding(input_ids, self.embed)
        freqs = positions[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * self.rope_scale).to(self.dtype)[:, :, None, :]
        sin = (emb.sin() * self.rope_scale).to(self.dtype)[:, :, None, :]
        for i, w in enumerate(self.layers):
            h = self._rms(x, w["ln1"])
            q = linear(h, w["q"], w["q_b"]).view(B, L, self.n_heads, self.head_dim)
            k = linear(h, w["k"], w["k_b"]).view(B, L, self.n_kv, self.head_dim)
            v = linear(h, w["v"], w["v_b"]).view(B, L, self.n_kv, self.head_dim)
            if self.qk_norm:
                q = self._rms(q, w["q_norm"])
                k = self._rms(k, w["k_norm"])
            q = q * cos + self._rotate_half(q) * sin
            k = k * cos + self._rotate_half(k) * sin
            a = self._attend(q, k, v, ks[i], vs[i], slots, block_tables, positions, block_size)
            x = x + linear(a, w["o"], w["o_b"])
            h = self._rms(x, w["ln2"])
            x = x + linear(F.silu(linear(h, w["gate"])) * linear(h, w["up"]), w["down"])
        last = x[torch.arange(B, device=x.device), last_idx]
        last = self._rms(last, self.norm)
        return F.linear(last, self.lm_head).float()

    def _forward_gpt2(self, cache, input_ids, positions, slots, block_tables, last_idx, block_size):
        ks, vs = cache
        B, L = input_ids.shape
        d = self.n_heads * self.head_dim
        x = F.embedding(input_ids, self.wte) + F.embedding(positions, self.wpe)
        act = "tanh" if self.act_tanh else "none"
        for i, w in enumerate(self.layers):
            h = F.layer_norm(x, (d,), w["ln_1.weight"], w["ln_1.bias"], self.eps)
            qkv = addmm(w["attn.c_attn.bias"], h.reshape(B * L, d), w["attn.c_attn.weight"])
            q, k, v = qkv.view(B, L, 3 * d).split(d, dim=-1)
            q = q.reshape(B, L, self.n_heads, self.head_dim)
            k = k.reshape(B, L, self.n_kv, self.head_dim)
            v = v.reshape(B, L, self.n_kv, self.head_dim)
            a = self._attend(q, k, v, ks[i], vs[i], slots, block_tables, positions, block_size)
            x = x + addmm(w["attn.c_proj.bias"], a.reshape(B * L, d), w["attn.c_proj.weight"]).view(B, L, d)
            h = F.layer_norm(x, (d,), w["ln_2.weight"], w["ln_2.bias"], self.eps)
            m = addmm(w["mlp.c_fc.bias"], h.reshape(B * L, d), w["mlp.c_fc.weight"])
            m = F.gelu(m, approximate=act)
            x = x + addmm(w["mlp.c_proj.bias"], m, w["mlp.c_proj.weight"]).view(B, L, d)
        last = x[torch.arange(B, device=x.device), last_idx]
        last = F.layer_norm(last, (d,), self.ln_f[0], self.ln_f[1], self.eps)
        return F.linear(last, self.lm_head).float()
