"""The "Under load" tab: speculation as concurrent requests share a vLLM server, measured and predicted."""
