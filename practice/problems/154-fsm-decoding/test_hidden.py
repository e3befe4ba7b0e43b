"""Hidden cases for 154: masks at the start, in the middle of a word, in an accepting state, in a state
with no transitions and in a state missing from the table; greedy decoding that finishes, gets stuck,
runs out of logits, breaks ties to the lower id, takes multi-state tokens, and refuses a high-logit
forbidden token; a digits-and-sign number FSM; random FSMs and logits vs the reference (and the
reference checked: every chosen token was allowed, the text walks the FSM)."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

BOOL = {"transitions": {"s": {"t": "t1", "f": "f1"}, "t1": {"r": "t2"}, "t2": {"u": "t3"}, "t3": {"e": "done"},
                        "f1": {"a": "f2"}, "f2": {"l": "f3"}, "f3": {"s": "f4"}, "f4": {"e": "done"}, "done": {}},
        "accept": ["done"]}
BOOL_VOCAB = ["true", "tr", "ue", "fa", "lse", "yes", "t", "e", " "]

# an optional minus sign, then one or more digits; accepting after a digit
DIGITS = "0123456789"
NUMBER = {"transitions": {"start": {"-": "sign", **{d: "int" for d in DIGITS}},
                          "sign": {d: "int" for d in DIGITS}, "int": {d: "int" for d in DIGITS}},
          "accept": ["int"]}
NUMBER_VOCAB = ["-", "1", "23", "4a", "-5", "007", "x", "9"]


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_mask_at_start():
    check_close(*both("token_mask", BOOL, "s", BOOL_VOCAB))
    check_close(*both("token_mask", NUMBER, "start", NUMBER_VOCAB))


def test_mask_mid_word():
    check_close(*both("token_mask", BOOL, "t2", BOOL_VOCAB))
    check_close(*both("token_mask", NUMBER, "sign", NUMBER_VOCAB))


def test_mask_accepting_state_allows_eos():
    check_close(*both("token_mask", NUMBER, "int", NUMBER_VOCAB))
    check_close(*both("token_mask", BOOL, "done", BOOL_VOCAB))


def test_mask_state_missing_from_the_table():
    check_close(*both("token_mask", BOOL, "nowhere", BOOL_VOCAB))
    check_close(*both("token_mask", {"transitions": {}, "accept": ["x"]}, "x", ["a"]))


def test_greedy_no_logits():
    check_close(*both("constrained_greedy", BOOL, "s", BOOL_VOCAB, []))


def test_greedy_runs_out_of_logits():
    check_close(*both("constrained_greedy", BOOL, "s", BOOL_VOCAB, [[0, 0, 0, 0, 0, 0, 9, 0, 0, 0]]))


def test_greedy_gets_stuck():
    dfa = {"transitions": {"a": {"x": "b"}}, "accept": []}
    check_close(*both("constrained_greedy", dfa, "a", ["x", "y"], [[0, 5, 0], [1, 1, 1], [1, 1, 1]]))


def test_greedy_tie_goes_to_the_lower_id():
    check_close(*both("constrained_greedy", BOOL, "s", BOOL_VOCAB, [[1, 1, 0, 1, 0, 0, 1, 0, 0, 0]] * 2))


def test_greedy_whole_word_token():
    check_close(*both("constrained_greedy", BOOL, "s", BOOL_VOCAB,
                      [[0, 0, 0, 2, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 3, 0, 0, 0, 0, 0], [0] * 10]))


def test_greedy_number_stops_at_eos_once_accepting():
    logits = [[5, 1, 0, 9, 9, 0, 9, 0, 0], [0, 2, 3, 0, 0, 1, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 4]]
    check_close(*both("constrained_greedy", NUMBER, "start", NUMBER_VOCAB, logits))


def test_greedy_negative_logits():
    check_close(*both("constrained_greedy", NUMBER, "start", NUMBER_VOCAB, [[-5, -1, -2, -0.5, -3, -4, 0, -9, -7]]))


def _fsm(rng):
    states = [f"q{i}" for i in range(rng.randint(1, 5))]
    alphabet = "abc"
    transitions = {s: {c: rng.choice(states) for c in alphabet if rng.random() < 0.6} for s in states}
    vocab = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 8))]
    accept = [s for s in states if rng.random() < 0.4]
    logits = [[rng.choice([rng.uniform(-3, 3), float(rng.randint(0, 2))]) for _ in range(len(vocab) + 1)]
              for _ in range(rng.randint(0, 10))]
    return {"transitions": transitions, "accept": accept}, states[0], vocab, logits


_rng = random.Random(154)
RANDOM = [_fsm(_rng) for _ in range(30)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    dfa, start, vocab, logits = RANDOM[index]
    check_close(*both("token_mask", dfa, start, vocab))
    got, expected = both("constrained_greedy", dfa, start, vocab, logits)
    state = start
    for t in expected["tokens"]:
        if reference.token_mask(dfa, state, vocab)[t] != 1:
            raise RuntimeError("the reference chose a forbidden token")
        for c in vocab[t]:
            state = dfa["transitions"][state][c]
    if state != expected["state"]:
        raise RuntimeError("the reference's final state does not follow its text")
    check_close(got, expected)


# Cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("dfa", "token_mask", ({"transitions": {"s": {"ab": "t"}}, "accept": []}, "s", ["a"])),
    ("dfa", "constrained_greedy", ({"transitions": {"s": {"": "t"}}, "accept": []}, "s", ["a"], [])),
    ("logits", "constrained_greedy", (BOOL, "s", BOOL_VOCAB, [[0] * 9])),
    ("logits", "constrained_greedy", (BOOL, "s", BOOL_VOCAB, [[0] * 10, [0] * 11])),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
