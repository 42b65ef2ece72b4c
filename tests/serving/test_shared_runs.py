"""One run for identical requests: its events go to every viewer; Stop closes it only for the last one."""
import threading
from dataclasses import dataclass

from specdec.serving.shared_runs import SharedRuns


@dataclass
class Event:
    index: int
    finished: bool


class Run:
    """A stand-in for the engine's Generation: `steps` events, counting the steps computed."""

    def __init__(self, steps: int = 5):
        self.steps, self.computed, self.closed = steps, 0, False

    def __iter__(self):
        return self

    def __next__(self):
        if self.closed or self.computed >= self.steps:
            raise StopIteration
        self.computed += 1
        return Event(self.computed - 1, self.computed == self.steps)

    def close(self):
        self.closed = True

    def result(self):
        return ("result", self.computed, self.closed)


def test_viewers_of_the_same_key_share_one_run_and_see_every_event():
    runs, made = SharedRuns(), []
    start = lambda: made.append(Run()) or made[-1]  # noqa: E731
    first, second = runs.join("key", start), runs.join("key", start)
    seen = [[e.index for e in first], [e.index for e in second]]
    assert len(made) == 1 and made[0].computed == 5 and seen == [[0, 1, 2, 3, 4]] * 2
    assert first.shared.served == 2


def test_requests_without_a_key_get_runs_of_their_own():
    runs, made = SharedRuns(), []
    start = lambda: made.append(Run()) or made[-1]  # noqa: E731
    list(runs.join(None, start)), list(runs.join(None, start))
    assert len(made) == 2


def test_a_late_viewer_reads_the_events_so_far_then_follows():
    runs = SharedRuns()
    first = runs.join("key", Run)
    next(first), next(first)
    late = runs.join("key", Run)
    assert [e.index for e in late] == [0, 1, 2, 3, 4] and [e.index for e in first] == [2, 3, 4]


def test_leaving_alone_closes_the_run_and_its_result_is_what_was_made():
    runs = SharedRuns()
    viewer = runs.join("key", lambda: Run(100))
    next(viewer), next(viewer)
    viewer.leave()
    assert viewer.result() == ("result", 2, True) and len(viewer.events) == 2


def test_leaving_while_others_watch_lets_the_run_go_on_for_them():
    runs = SharedRuns()
    stopper, watcher = runs.join("key", Run), runs.join("key", Run)
    next(stopper)
    stopper.leave()
    assert [e.index for e in watcher] == [0, 1, 2, 3, 4] and stopper.result()[:2] == ("result", 5)  # all of it


def test_a_stopped_run_is_not_given_to_the_next_request():
    runs = SharedRuns()
    viewer = runs.join("key", lambda: Run(100))
    next(viewer)
    viewer.leave()
    assert runs.join("key", Run).shared is not viewer.shared


def test_a_finished_run_is_kept_for_a_while_then_forgotten():
    now = [0.0]
    runs = SharedRuns(keep_s=10, clock=lambda: now[0])
    first = runs.join("key", Run)
    list(first)
    now[0] = 5.0
    assert runs.join("key", Run).shared is first.shared
    now[0] = 20.0
    assert runs.join("key", Run).shared is not first.shared


def test_viewers_in_threads_compute_each_step_once():
    runs, made, seen = SharedRuns(), [], []
    start = lambda: made.append(Run(50)) or made[-1]  # noqa: E731
    viewers = [runs.join("key", start) for _ in range(8)]
    threads = [threading.Thread(target=lambda v=v: seen.append([e.index for e in v])) for v in viewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert made[0].computed == 50 and all(s == list(range(50)) for s in seen)


def test_an_error_reaches_every_viewer():
    class Broken(Run):
        def __next__(self):
            raise MemoryError("out of memory")

    runs = SharedRuns()
    first, second = runs.join("key", Broken), runs.join("key", Broken)
    errors = []
    for viewer in (first, second):
        try:
            next(viewer)
        except MemoryError as exc:
            errors.append(str(exc))
    assert errors == ["out of memory"] * 2
