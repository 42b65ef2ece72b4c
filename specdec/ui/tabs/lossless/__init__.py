"""The "Is it exact?" tab: greedy identity and a sampling test against the target's exact probabilities."""
