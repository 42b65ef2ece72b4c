"""A schedule that switches speculation off and on all run long, through the auto schedule's own rule."""
from specdec.engine.schedules import AutoSchedule, CostPrior


class FlappingSchedule(AutoSchedule):
    """schedules.AutoSchedule whose predicted speedup swings between 2.0 and 0.5 every `period` decisions (and
    whose best K cycles through 1..k_max): its real rule then drafts, goes off (plain target steps), probes at
    K = 1 after `probe_every` plain steps and comes back on, over and over."""

    def __init__(self, k_max: int, period: int = 5, probe_every: int = 2):
        self.period, self.calls = period, 0
        super().__init__(k_max, CostPrior(0.5, {k: 0.1 for k in range(1, k_max + 1)},
                                          {k: 1.0 for k in range(1, k_max + 1)}))
        self.probe_every = probe_every

    def best(self):
        self.calls += 1
        self.predicted = 0.5 if (self.calls // self.period) % 2 else 2.0
        return 1 + self.calls % self.k_max, self.predicted

    def best_in_favour(self):
        return self.predicted  # the evidence, read in speculation's favour, swings the same way


def decisions(events) -> set:
    return {e.decision for e in events}
