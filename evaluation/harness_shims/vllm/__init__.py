"""Import-only stand-in for ``vllm``, put on ACEBench's ``PYTHONPATH`` by ``python -m evaluation acebench``.

ACEBench's ``model_inference`` imports ``vllm`` when it loads, for its local-model handlers.
Models reached over an OpenAI-compatible URL (every run of ours) never use it, and the pinned
``vllm==0.6.1.post1`` does not install on CPU-only Python 3.11. Using it fails loudly.
"""


class _Unavailable:
    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "vllm is not installed: ACEBench local models are not supported here; "
            "serve the model behind an OpenAI-compatible URL instead"
        )


class LLM(_Unavailable):
    pass


class SamplingParams(_Unavailable):
    pass
