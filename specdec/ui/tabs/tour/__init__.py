"""The workshop tour above the tabs: the stepper over the exercises, predictions, answers, the handout."""
