"""The "How it works" tab: the algorithm, the drafter families and the last sweep's fit of both theory forms."""
