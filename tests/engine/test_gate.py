"""The compute gate: streamed steps interleave, a timed pair computes alone, neither starves the other."""
import threading
import time

from specdec.engine.gate import ComputeGate


def in_thread(fn):
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def order_of(holder, waiter) -> list[str]:
    """Thread 1 enters holder() and holds it; thread 2 then asks for waiter(); thread 1 is released. What
    happened, in order: "held ends" before "waiter" when the waiter had to wait."""
    order, holding, release = [], threading.Event(), threading.Event()

    def hold():
        with holder():
            holding.set()
            release.wait(5)
            order.append("held ends")

    def wait():
        with waiter():
            order.append("waiter")

    in_thread(hold)
    holding.wait(5)
    second = in_thread(wait)
    time.sleep(0.05)
    release.set()
    second.join(5)
    return order


def test_a_step_waits_while_another_thread_times_a_pair():
    gate = ComputeGate()
    assert order_of(gate.exclusive, gate.step) == ["held ends", "waiter"]


def test_a_pair_waits_for_the_step_computing_now():
    gate = ComputeGate(patience_s=0.0)
    assert order_of(gate.step, gate.exclusive) == ["held ends", "waiter"]


def test_runs_inside_a_pair_pass_through_its_own_gate():
    gate = ComputeGate()
    with gate.exclusive(), gate.stream(), gate.step() as waited, gate.exclusive():
        assert waited.s == 0.0 and gate.describe()["streams"] == 0
    assert gate.describe() == {"timing": False, "steps": 0, "streams": 0, "pairs_waiting": 0}


def test_a_pair_lets_a_streamed_run_go_on_for_its_patience_then_takes_a_gap_between_steps():
    gate, entered = ComputeGate(patience_s=0.2), []

    def pair():
        with gate.exclusive():
            entered.append(time.monotonic())

    with gate.stream():
        timer = in_thread(pair)
        start = time.monotonic()
        while not entered and time.monotonic() - start < 5:
            with gate.step():
                time.sleep(0.01)
        timer.join(5)
    assert entered and 0.15 <= entered[0] - start < 1.0


def test_a_pair_goes_at_once_when_no_run_is_streaming():
    gate = ComputeGate(patience_s=60.0)
    done = threading.Event()
    in_thread(lambda: (gate.exclusive().__enter__(), done.set()))
    assert done.wait(2)


def test_pairs_take_the_gate_first_come_first_served():
    gate, order, release = ComputeGate(), [], threading.Event()

    def pair(name, hold=False):
        with gate.exclusive():
            order.append(name)
            if hold:
                release.wait(5)

    first = in_thread(lambda: pair("first", hold=True))
    while not gate.describe()["timing"]:
        time.sleep(0.005)
    threads = []
    for name in ("second", "third"):
        threads.append(in_thread(lambda name=name: pair(name)))
        while gate.describe()["pairs_waiting"] < len(threads):
            time.sleep(0.005)
    release.set()
    for thread in (first, *threads):
        thread.join(5)
    assert order == ["first", "second", "third"]
