"""Measure once, share with everyone: single flight, one measurement at a time, private prompts kept apart."""
import threading
import time

from specdec.measure.speedup import Policy, Timing, measure
from specdec.serving.shared_measurements import SharedMeasurements, sharing_note

POLICY = Policy(min_repeats=3, floor_repeats=1, max_repeats=3, tolerance=1.0)


def contestants(calls: list, pause_s: float = 0.0):
    def lead():
        calls.append("lead")
        time.sleep(pause_s)
        return Timing(10, 0.5)

    def follow(n):
        calls.append("follow")
        time.sleep(pause_s)
        return Timing(n, 1.0)
    return lead, follow


def measurer(calls, pause_s=0.0, should_stop=lambda: False):
    lead, follow = contestants(calls, pause_s)
    return lambda m: measure(lead, follow, POLICY, measurement=m, should_stop=should_stop)


def final(progress):
    return list(progress)[-1]


def test_a_measured_configuration_is_reused_by_the_next_request():
    store, calls = SharedMeasurements(), []
    key = store.key("config", None)
    first = final(store.follow(key, measurer(calls), POLICY.needs_more))
    second = final(store.follow(key, measurer(calls), POLICY.needs_more))
    assert len(calls) == 6 and second.role == "reused" and second.estimate == first.estimate
    assert second.shared.runs == 2


def test_requests_at_the_same_moment_share_one_measurement():
    store, calls, results = SharedMeasurements(), [], []
    key = store.key("config", None)

    def request():
        results.append(final(store.follow(key, measurer(calls, pause_s=0.02), POLICY.needs_more)))

    threads = [threading.Thread(target=request) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(calls) == 6  # three pairs, once
    assert len({r.estimate.ratio for r in results}) == 1 and all(r.estimate.final for r in results)
    assert sorted(r.role for r in results).count("measuring") == 1


def test_a_follower_carries_on_when_the_request_measuring_is_stopped():
    store, calls, stop_first = SharedMeasurements(), [], threading.Event()
    key = store.key("config", None)
    first = store.follow(key, measurer(calls, 0.02, stop_first.is_set), POLICY.needs_more)
    assert next(first).role == "measuring"  # one pair in
    stop_first.set()
    stopped = final(first)
    carried = final(store.follow(key, measurer(calls), POLICY.needs_more))
    assert stopped.estimate.state == "stopped" and carried.estimate.state == "done"
    assert carried.estimate.repeats == 3


def test_a_second_configuration_waits_its_turn_and_knows_its_position():
    store, calls, release = SharedMeasurements(), [], threading.Event()

    def slow(m):
        release.wait(10)
        yield from measurer(calls)(m)

    first = threading.Thread(target=lambda: final(store.follow(store.key("a", None), slow, POLICY.needs_more)))
    first.start()
    while not store.entry(store.key("a", None)).busy:
        time.sleep(0.005)
    queued = next(store.follow(store.key("b", None), measurer(calls), POLICY.needs_more))
    release.set()
    first.join(10)
    assert queued.role == "queued" and queued.position == 1 and queued.wait_s > 0


def test_a_private_prompt_is_measured_for_its_session_only():
    store = SharedMeasurements()
    mine, theirs = store.key("config", "session-1"), store.key("config", "session-2")
    final(store.follow(mine, measurer([]), POLICY.needs_more))
    assert store.entry(mine).measurement.repeats == 3 and store.entry(theirs).measurement.repeats == 0
    assert store.entry(store.key("config", None)).measurement.repeats == 0  # nor is it the shared figure


def test_a_stopped_request_queued_behind_another_leaves_the_queue():
    store, release, stop = SharedMeasurements(), threading.Event(), threading.Event()

    def slow(m):
        release.wait(10)
        yield from measurer([])(m)

    first = threading.Thread(target=lambda: final(store.follow(store.key("a", None), slow, POLICY.needs_more)))
    first.start()
    while not store.entry(store.key("a", None)).busy:
        time.sleep(0.005)
    second = store.follow(store.key("b", None), measurer([]), POLICY.needs_more, stop.is_set)
    next(second)
    stop.set()
    left = final(second)
    release.set()
    first.join(10)
    assert left.estimate is None and not store.entry(store.key("b", None)).busy


def test_the_figure_says_how_many_runs_it_served_and_when_it_was_measured():
    store = SharedMeasurements(wall_clock=lambda: 3600.0 * 3 + 61)
    key = store.key("config", None)
    final(store.follow(key, measurer([]), POLICY.needs_more))
    final(store.follow(key, measurer([]), POLICY.needs_more))
    note = sharing_note(store.entry(key))
    assert "2 runs" in note and "03:01:01 UTC" in note


def test_a_private_figure_says_it_was_measured_for_that_user_only():
    store = SharedMeasurements()
    key = store.key("config", "session-1")
    final(store.follow(key, measurer([]), POLICY.needs_more))
    assert "for you only" in sharing_note(store.entry(key))


def test_a_finished_measurement_is_never_timed_again():
    store, calls = SharedMeasurements(), []
    key = store.key("config", None)
    final(store.follow(key, measurer(calls), POLICY.needs_more))
    calls.clear()
    final(store.follow(key, measurer(calls), POLICY.needs_more))
    assert calls == []  # nothing timed again
