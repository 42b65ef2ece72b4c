"""Training the zoo drafters for SmolLM2-135M-Instruct: self-distillation data, training against the frozen
target, held-out evaluation and model cards. The runtime side (heads, building a drafter from shipped
weights) is specdec.drafters.
"""
