"""Planning a run before it starts: which drafter and K (or tree) the measured cost model predicts fastest
for this target on this machine (`auto`).

  choice.py        the choice from costs (c, v(K)) and the model cards' acceptance
  costs.py         c and v(K) per drafter, measured once per machine and cached
  auto_drafter.py  the `auto` entry of the drafter list: it plans, then hands the run the drafter it chose
"""
