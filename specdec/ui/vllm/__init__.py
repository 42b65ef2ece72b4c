"""The sidebar's vLLM engine: the choice and its controls, and Generate on a vLLM server (engine.py). The Race and the
Sweep on vLLM servers are their tabs' own (tabs/race/vllm.py, tabs/sweep/vllm.py).
"""
