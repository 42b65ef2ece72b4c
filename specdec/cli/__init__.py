"""The command line, `python -m specdec` (or `specdec` once installed): one module per subcommand group.

  main.py  the parser and generate, bench, fetch, deploy
  tune.py  tune: the measured path of a model on this machine
  vllm.py  vllm serve|stop and the vLLM engine for generate and bench
"""
