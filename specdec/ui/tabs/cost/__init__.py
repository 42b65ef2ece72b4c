"""The "Why this speedup?" tab: the cost model's prediction beside c, v(K) and the speedup measured here."""
