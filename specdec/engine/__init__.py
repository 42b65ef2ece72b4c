"""The engine: one speculative step (draft, verify in one target forward, accept or resample), the run loop
around it, and the plain records it emits.

  decoding.py   Generation: the step on one screen, and the target-only baseline
  verify.py     modified rejection sampling (greedy: the argmax rule) for chains and trees
  sampling.py   warping p and q the same way, and drawing tokens
  tree.py       tree drafts: shapes, ancestor masks, the greedy walk
  schedules.py  how many tokens to draft each step (constant, confidence, optimal, auto)
  events.py     the glossary and the records: DecodeSettings, StepEvent, RunMetrics, RunResult
  trace.py      one step's tensors -> a StepEvent
  metrics.py    a run's metrics from its events, and memory measurement
  theory.py     the closed-form maths (Leviathan et al.) the schedules and every view share
  gate.py       the process's compute gate: steps of many runs interleave, a timed pair runs alone

The engine imports neither gradio nor plotly. It is handed a loaded model (models/) and a drafter (the interface in
drafters/base.py); which drafter, and `auto`'s plan, are decided above it (drafters/registry.py, planning/).
"""
