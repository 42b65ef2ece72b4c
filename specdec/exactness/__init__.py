"""Is it exact? Checks that speculative output follows the target's law, and broken verifiers to show
that the checks catch them.

  lossless.py         greedy identity and the sampling test on one prompt
  first_tokens.py     the first tokens of a sampled run, drawn many times, exactly and cheaply
  verifier_faults.py  broken verifiers, on purpose
  chi_square.py       goodness of fit without scipy
"""
