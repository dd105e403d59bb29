"""python -m torch_tpu.serve --model PATH [--host H] [--port P]: an
OpenAI-compatible server for a Hugging Face causal LM directory."""
import argparse
import os
import sys


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m torch_tpu.serve", description=__doc__)
    ap.add_argument("--model", required=True, help="a Hugging Face causal LM directory (weights + tokenizer)")
    ap.add_argument("--served-model-name", default=None, help="the model id clients name (default: the path)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--device", default="tpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--num-blocks", type=int, default=0, help="KV blocks (0: max-num-seqs full contexts)")
    ap.add_argument("--max-num-seqs", type=int, default=8)
    ap.add_argument("--max-model-len", type=int, default=0)
    ap.add_argument("--chunk-size", type=int, default=64, help="prompt tokens per sequence per step")
    ap.add_argument("--max-num-batched-tokens", type=int, default=256)
    ap.add_argument("--min-batch-bucket", type=int, default=1)
    ap.add_argument("--min-ctx-blocks", type=int, default=16)
    ap.add_argument("--no-prefix-cache", action="store_true")
    ap.add_argument("--quantization", default=None, choices=["int8"],
                    help="int8: weight-only int8 linear layers, one scale per output channel")
    ap.add_argument("--role", default="both", choices=["both", "prefill", "decode"],
                    help="prefill/decode disaggregation: prefill serves only /internal/prefill, decode only "
                         "/internal/decode (the router pairs them); both serves everything")
    ap.add_argument("--log-level", default="warning")
    return ap.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import uvicorn
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import torch_tpu  # noqa: F401  (registers the device)
    from .engine import Engine, EngineConfig
    from .server import build_app

    if not os.path.isdir(a.model):
        sys.exit(f"torch_tpu.serve: --model {a.model!r} is not a directory")
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=getattr(torch, a.dtype)).eval()
    cfg = EngineConfig(block_size=a.block_size, num_blocks=a.num_blocks, max_num_seqs=a.max_num_seqs,
                       max_model_len=a.max_model_len, chunk_size=a.chunk_size,
                       max_num_batched_tokens=a.max_num_batched_tokens, prefix_cache=not a.no_prefix_cache,
                       device=a.device, min_batch_bucket=a.min_batch_bucket, min_ctx_blocks=a.min_ctx_blocks,
                       quantization=a.quantization)
    engine = Engine(model, cfg)
    del model
    app = build_app(engine, tok, a.served_model_name or a.model, role=a.role)
    print(f"torch_tpu.serve: {a.model} on {a.device}, role {a.role}, http://{a.host}:{a.port}/v1", flush=True)
    uvicorn.run(app, host=a.host, port=a.port, log_level=a.log_level)


if __name__ == "__main__":
    main()
