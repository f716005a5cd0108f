"""The layer stacks `validate --models` trains (Llama decoder layers, GPT-2 blocks) and its step harness.

The Llama stack uses transformers' own ``LlamaDecoderLayer``, ``LlamaRMSNorm`` and
``LlamaRotaryEmbedding`` when transformers is importable (the code users compile), else the plain
PyTorch copy below of the same pattern: RMSNorm computed in float32 and cast back, rotary embeddings,
grouped-query attention through ``F.scaled_dot_product_attention``, a SwiGLU MLP and pre-norm
residuals.  GPT-2 blocks are always the plain ones (pre-LN, LayerNorm with bias, GELU MLP).

Imported lazily by ``models`` (it imports torch), so that a worker process sets
CUDA_VISIBLE_DEVICES before torch is loaded.
"""

from __future__ import annotations

import importlib.util
import inspect
import statistics
import time
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

RMS_EPS = 1e-5
ROPE_THETA = 10000.0


class ModelBuildError(RuntimeError):
    """The stack cannot be built with this software (e.g. an unexpected transformers API)."""


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = RMS_EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, theta: float = ROPE_THETA):
        super().__init__()
        inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :].float()
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _repeat_kv(x, n_rep: int):
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class LlamaAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, x, position_embeddings):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        cos, sin = (t.unsqueeze(1) for t in position_embeddings)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        n_rep = self.heads // self.kv_heads
        out = F.scaled_dot_product_attention(q, _repeat_kv(k, n_rep), _repeat_kv(v, n_rep), is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    """Called like transformers' LlamaDecoderLayer (keyword position embeddings)."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv_heads: int):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden)
        self.self_attn = LlamaAttention(hidden, heads, kv_heads)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.mlp = SwiGLU(hidden, intermediate)

    def forward(self, x, position_ids=None, position_embeddings=None):
        x = x + self.self_attn(self.input_layernorm(x), position_embeddings)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaStack(nn.Module):
    """Decoder layers and the final norm, as LlamaModel runs them (minus embedding and head)."""

    def __init__(self, layers, norm, rotary):
        super().__init__()
        self.layers, self.norm, self.rotary = nn.ModuleList(layers), norm, rotary

    def forward(self, x):
        position_ids = torch.arange(x.shape[1], device=x.device).unsqueeze(0).expand(x.shape[0], -1)
        position_embeddings = self.rotary(x, position_ids)
        for layer in self.layers:
            out = layer(x, position_ids=position_ids, position_embeddings=position_embeddings)
            x = out[0] if isinstance(out, tuple) else out  # transformers 4 returned a tuple
        return self.norm(x)


class GPT2Block(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.attn_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in self.c_attn(self.ln_1(x)).split(h, dim=-1))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(attn.transpose(1, 2).reshape(b, s, h))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2Stack(nn.Module):
    def __init__(self, hidden: int, heads: int, layers: int):
        super().__init__()
        self.blocks = nn.ModuleList(GPT2Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)


def transformers_available() -> bool:
    return importlib.util.find_spec("transformers") is not None


def _transformers_llama(spec) -> LlamaStack:
    import transformers
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as hf

    expected = "transformers 5's LlamaRotaryEmbedding(config) and LlamaDecoderLayer(..., position_embeddings=...)"
    if "position_embeddings" not in inspect.signature(hf.LlamaDecoderLayer.forward).parameters:
        raise ModelBuildError(f"transformers {transformers.__version__}: LlamaDecoderLayer takes no "
                              f"position_embeddings; validate --models expects {expected}")
    try:
        config = LlamaConfig(
            hidden_size=spec.hidden, intermediate_size=spec.intermediate, num_attention_heads=spec.heads,
            num_key_value_heads=spec.kv_heads, num_hidden_layers=spec.layers, rms_norm_eps=RMS_EPS,
            max_position_embeddings=max(spec.seq, 2048),
        )
        config._attn_implementation = "sdpa"
        layers = [hf.LlamaDecoderLayer(config, layer_idx=i) for i in range(spec.layers)]
        rotary = hf.LlamaRotaryEmbedding(config=config)
        norm = hf.LlamaRMSNorm(spec.hidden, eps=RMS_EPS)
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        raise ModelBuildError(f"transformers {transformers.__version__}: {type(exc).__name__}: {exc}; "
                              f"validate --models expects {expected}") from exc
    if getattr(config, "_attn_implementation", None) != "sdpa":
        raise ModelBuildError(f"transformers {transformers.__version__} ignored attn_implementation='sdpa'")
    return LlamaStack(layers, norm, rotary)


def build(spec, device: Any, dtype: torch.dtype, impl: str = "auto", seed: int = 0) -> tuple[nn.Module, str]:
    """The stack for ``spec`` with random weights from ``seed``, and which implementation it is.

    ``impl``: "auto" (transformers' layers for Llama when importable), "transformers" or "plain".
    """
    if impl not in ("auto", "transformers", "plain"):
        raise ValueError(f"impl {impl!r} is not auto, transformers or plain")
    torch.manual_seed(seed)
    with torch.device(device):
        if spec.family == "gpt2":
            model, used = GPT2Stack(spec.hidden, spec.heads, spec.layers), "plain"
        elif impl == "transformers" or (impl == "auto" and transformers_available()):
            model, used = _transformers_llama(spec), "transformers"
        else:
            layers = [LlamaLayer(spec.hidden, spec.intermediate, spec.heads, spec.kv_heads) for _ in range(spec.layers)]
            model, used = LlamaStack(layers, RMSNorm(spec.hidden), RotaryEmbedding(spec.hidden // spec.heads)), "plain"
    for name, child in model.named_children():
        # The rotary frequencies stay float32, as in LlamaModel (which computes them in float32).
        if name != "rotary":
            child.to(dtype)
    return model, used


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())



# -- the training step and its timing ------------------------------------------------------------


class TrainStep:
    """One variant: its model copy, its input and its compiled forward and loss; ``step()`` is a training
    step (no optimizer: the gradients are dropped before the next one)."""

    def __init__(self, fn: Callable, model: nn.Module, x: torch.Tensor, backend: Any = "inductor"):
        self.model, self.x = model, x
        self.fn = torch.compile(fn, backend=backend, fullgraph=True)

    def step(self) -> torch.Tensor:
        self.model.zero_grad(set_to_none=True)
        self.x.grad = None
        loss = self.fn(self.model, self.x)
        loss.backward()
        return loss


def synchronize(device: Any) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def median_step_ms(step: Callable, reps: int, device: Any) -> float:
    """Median of ``reps`` steps, each timed on its own (CUDA events; wall clock on the CPU)."""
    if not str(device).startswith("cuda"):
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        start.record()
        step()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


def profile_kernels(step: Callable, device: Any) -> list[tuple[str, float]]:
    """(name, µs) of every GPU kernel, memcpy and memset of one step (none on the CPU)."""
    from torch.profiler import ProfilerActivity, profile

    cuda = str(device).startswith("cuda")
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        step()
        synchronize(device)
    return [(e.name, float(e.time_range.elapsed_us())) for e in prof.events()
            if getattr(e.device_type, "name", str(e.device_type)).upper() == "CUDA"]
