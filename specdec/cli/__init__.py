"""The command line, `python -m specdec` (or `specdec` once installed): one module per subcommand.

  main.py      the parser (each command adds its own) and the dispatch; the one-line error rule
  generate.py  generate: one generation, speculative or the target alone
  bench.py     bench: this engine against transformers; --suite, this machine's benchmark table
  tune.py      tune: the measured path of a model on this machine
  fetch.py     fetch: a fetchable model into the model cache
  deploy.py    deploy: this working tree to a Hugging Face Space
  vllm.py      vllm serve|stop|sweep|setup, and the vLLM engine for generate
  llamacpp.py  llamacpp setup|status: llama.cpp built from its PyPI sdist, a measured peer
  versus.py    bench --vs llama.cpp: the lab and llama.cpp side by side on the same GGUF file
  shared.py    what several commands use: the usage error, the model and prompt arguments, loading the pair
"""
