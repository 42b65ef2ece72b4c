"""The Race tab: target-only and speculative decoding side by side, then the measured speedup."""
