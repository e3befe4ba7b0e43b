"""The fleet's event queue: (time, priority, key, sequence) order, arrivals merged from their list."""

from sim.fleet.events import ARRIVAL, DETECT, FAIL, READY, SCALE, STEP, TRANSFER, EventQueue


def drain(q):
    out = []
    while (e := q.pop()) is not None:
        out.append(e)
    return out


def test_ties_break_by_priority_then_key_then_push_order():
    q = EventQueue([1.0, 1.0, 2.0])
    q.push(1.0, STEP, "step a")
    q.push(1.0, TRANSFER, "transfer of request 7", key=7)
    q.push(1.0, TRANSFER, "transfer of request 3", key=3)
    q.push(1.0, FAIL, "fail")
    q.push(1.0, SCALE, "tick")
    q.push(1.0, DETECT, "detect")
    q.push(1.0, READY, "ready")
    q.push(1.0, STEP, "step b")
    q.push(0.5, STEP, "earlier step")
    assert drain(q) == [
        (0.5, STEP, "earlier step"),
        (1.0, FAIL, "fail"), (1.0, DETECT, "detect"), (1.0, READY, "ready"), (1.0, SCALE, "tick"),
        (1.0, TRANSFER, "transfer of request 3"), (1.0, TRANSFER, "transfer of request 7"),
        (1.0, ARRIVAL, 0), (1.0, ARRIVAL, 1),
        (1.0, STEP, "step a"), (1.0, STEP, "step b"),
        (2.0, ARRIVAL, 2)]


def test_events_pushed_while_draining_take_their_place():
    q = EventQueue([0.0, 3.0])
    assert q.pop() == (0.0, ARRIVAL, 0)
    q.push(1.0, STEP, "s")            # pushed by the first arrival's handler: before the next arrival
    q.push(3.0, STEP, "t")            # at the next arrival's instant: after it
    assert drain(q) == [(1.0, STEP, "s"), (3.0, ARRIVAL, 1), (3.0, STEP, "t")]
    assert q.pop() is None
