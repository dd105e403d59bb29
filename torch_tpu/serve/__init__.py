"""torch_tpu.serve: an OpenAI-compatible LLM server on tpu (docs/serving.md).

`Engine` (continuous batching over a paged KV cache with a prefix tree) runs
its own forward over a Hugging Face causal LM's weights; `server` puts it
behind FastAPI; `router` spreads requests over several servers."""
from .engine import Engine, EngineConfig, StepOutput  # noqa: F401
from .sampling import SamplingParams, InvalidParams  # noqa: F401
