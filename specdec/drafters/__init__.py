"""Drafters: what proposes tokens for the target to verify. One file per family, each a Drafter subclass that is
its own spec, listed by one line in registry.FAMILIES.

  base.py           the Drafter interface, DrafterSpec (a named drafter) and CostShape (its cost for the model)
  registry.py       drafters by name: FAMILIES, the named drafters they ship, and load_drafter
  prompt_lookup.py  prompt lookup (no weights)
  suffix.py         suffix decoding: frequency trees from this request and earlier outputs (no weights)
  draft_model.py    a draft model with the target's tokenizer (any model; ships smollm2-135m-draft)
  retokenised.py    a draft model with another tokenizer (greedy only)
  early_exit.py     the target's first layers + a trained adapter
  medusa.py         Medusa heads on the target's last feature
  eagle.py          the EAGLE head, its chains and EAGLE-2 trees
  eagle3.py         the EAGLE-3 head (a fusion of three of the target's layers)
  draft_vocab.py    the draft vocabulary's head rows, shared by the trained drafters
  heads.py          the trained heads as torch modules
  shipped.py        the shipped weights in assets/drafters/ and the helpers that read them
  families.py       How it works' paragraphs, from the specs and the model cards
"""
