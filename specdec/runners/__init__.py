"""Runners: the model calls the engine makes (a forward over new tokens into a KV cache, crop on
rollback), and the fastest exact way to make them on this machine.

  backend.py         the runner interface and the eager Hugging Face runner
  static.py          the runner template (static cache; layout -> layers -> head) and its torch layers
  lab_kernels.py     the template's layers on the lab's C kernels (native/)
  selection.py       which runner a model gets: select(), used by every caller
  native_kernels.py  building and loading native/decode_kernels.c
  packed_weights.py  CPU linear layers on packed weight copies
  threads.py         the thread count a step computes on
  cache_compat.py    the one place that knows transformers' cache API across releases
  tree_attention.py  a tree draft's positions and attention mask in one forward
  machine_records.py the machine key a measurement holds for, and the record files that keep it
  tuning.py          the measured choice of path (dtype, kernels, threads) per model and machine
"""
