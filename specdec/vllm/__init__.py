"""vLLM servers as an engine of the lab (docs/vllm.md). Imports neither gradio nor plotly.

The Python API:

    from specdec.vllm import connect, encode, run, measure_speedup
    lead = connect("http://127.0.0.1:8000", speculative=True)
    base = connect("http://127.0.0.1:8001", speculative=False)
    ids = encode(lead, "Explain photosynthesis.")
    done = run(lead, ids, DecodeSettings(max_new_tokens=64))   # done.result: a RunResult with coloured StepEvents
    for estimate in measure_speedup(lead, base, ids, DecodeSettings(max_new_tokens=64)):
        print(estimate.describe())
"""
from specdec.vllm.client import VllmClient, VllmError
from specdec.vllm.engine import Server, VllmRun, check_same_model, connect, encode, measure_speedup, run, stream_run

__all__ = ["Server", "VllmClient", "VllmError", "VllmRun", "check_same_model", "connect", "encode",
           "measure_speedup", "run", "stream_run"]
