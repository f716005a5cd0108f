"""Record what Inductor generates on this GPU: each reduction kernel's signature and envelope.

For every catalog kernel at a few shapes (bf16) and for a transformers Llama decoder stack's training
step, logs one JSON line per reduction kernel Inductor builds: graph (forward/backward), mix-order,
sizes, hint, ``torch_rules.kernel_signature``, ``torch_rules.envelope_of_features`` (with what the
reductions compute) and the whole kernel's op counts.  With
``--heuristics FILE`` the model step is also compiled with the rules installed, and its outcome logged.
Usage: python3 experiments/probe_envelopes.py OUT.jsonl [--heuristics heuristics/h200.yaml] [--hidden 4096]
       [--shapes 8192x2048,32768x4096] [--no-catalog]
"""

import argparse
import json
import traceback

import torch

from inductor_tune import choices, kernels, torch_rules
from inductor_tune.evaluate import Problem, ProblemState, CompiledCall
from inductor_tune.kernels import Shape

LOG: list = []


def _hooked():
    original = choices.TrialChoices.triton_kernel_kwargs

    def triton_kernel_kwargs(self, kernel_cls, features, groups, kernel_kwargs):
        try:
            rnumel, xnumel = int(features.reduction_numel), int(features.numel)
            if rnumel > 1:
                LOG.append({
                    "backward": torch_rules.graph_is_backward(), "mix_order": bool(kernel_kwargs.get("mix_order_reduction")),
                    "xnumel": xnumel, "rnumel": rnumel, "hint": str(features.get_reduction_hint()).split(".")[-1],
                    "signature": torch_rules.reduction_signature(features),
                    "envelope": torch_rules.envelope_of_features(features),
                    "op_counts": dict(sorted(features.op_counts().items())),
                })
        except Exception as exc:  # noqa: BLE001 - a probe records what it can
            LOG.append({"error": repr(exc)[:300]})
        return original(self, kernel_cls, features, groups, kernel_kwargs)

    choices.TrialChoices.triton_kernel_kwargs = triton_kernel_kwargs
    choices.install()


def _catalog(out, shapes):
    for name, spec in kernels.CATALOG.items():
        for shape in shapes:
            LOG.clear()
            try:
                state = ProblemState(Problem(name, shape, "bf16"))
                call = CompiledCall(state.problem, state.inputs, state.grad_output)
                import torch._inductor.config as ic
                with ic.patch(force_disable_caches=True):
                    call.compile()
                status = "ok"
            except Exception as exc:  # noqa: BLE001
                status = repr(exc)[:300]
            for k in LOG:
                out.write(json.dumps({"what": "catalog", "kernel": name, "shape": str(shape), "status": status, **k}) + "\n")
            torch.cuda.empty_cache()


def _llama(out, hidden, heuristics):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRMSNorm, LlamaRotaryEmbedding

    inter = {2048: 8192, 4096: 14336, 8192: 28672}.get(hidden, hidden * 7 // 2)
    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=inter, num_attention_heads=hidden // 128,
                      num_key_value_heads=max(1, hidden // 512), num_hidden_layers=2, attn_implementation="sdpa")

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(LlamaDecoderLayer(cfg, i) for i in range(2))
            self.norm = LlamaRMSNorm(hidden, eps=cfg.rms_norm_eps)
            self.rotary = LlamaRotaryEmbedding(cfg)

        def forward(self, h, pos):
            pe = self.rotary(h, pos)
            for layer in self.layers:
                out = layer(h, position_embeddings=pe, position_ids=pos)
                h = out[0] if isinstance(out, tuple) else out
            return self.norm(h)

    def step(variant, install=None):
        import torch._dynamo
        torch._dynamo.reset()
        LOG.clear()
        model = Stack().cuda().to(torch.bfloat16)
        h = torch.randn(2, 2048, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        pos = torch.arange(2048, device="cuda").unsqueeze(0).expand(2, -1)
        compiled = torch.compile(model, fullgraph=True)
        handle = None
        try:
            if install:
                import inductor_tune
                handle = inductor_tune.install(install)
            import torch._inductor.config as ic
            with ic.patch(force_disable_caches=True):
                compiled(h, pos).float().pow(2).mean().backward()
            torch.cuda.synchronize()
            status = "ok"
        except Exception as exc:  # noqa: BLE001
            status = "".join(traceback.format_exception_only(type(exc), exc))[-600:]
        finally:
            if handle is not None:
                handle.uninstall()
        for k in LOG:
            out.write(json.dumps({"what": f"llama{hidden}", "variant": variant, "status": status, **k}) + "\n")
        out.write(json.dumps({"what": f"llama{hidden}", "variant": variant, "status": status, "summary": True}) + "\n")
        out.flush()

    step("default")
    if heuristics:
        step("rules", heuristics)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--heuristics")
    ap.add_argument("--hidden", default="4096")
    ap.add_argument("--no-catalog", action="store_true")
    ap.add_argument("--shapes", default="8192x2048,32768x4096", help="catalog shapes, comma-separated")
    args = ap.parse_args()
    _hooked()
    with open(args.out, "w") as out:
        if not args.no_catalog:
            _catalog(out, [Shape.parse(s) for s in args.shapes.split(",")])
        for hidden in filter(None, args.hidden.split(",")):
            _llama(out, int(hidden), args.heuristics)


if __name__ == "__main__":
    main()
