"""Hidden cases for 132: holdback at every prefix length (a full match is not held), several stops,
stops across 1..n tokens, the earliest position winning over list order, list order on equal positions,
include_stop, text after the stop dropped, the last token flushing, empty pieces and stops, random
streams vs the reference (and the reference checked: what it releases is the text, cut at a stop)."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


# --- holdback ---------------------------------------------------------------------------------

def test_holdback_none():
    check_close(*both("holdback", "hello", ["</s>"]))


def test_holdback_every_prefix_length():
    for text in ("x<", "x</", "x</s"):
        check_close(*both("holdback", text, ["</s>"]))


def test_holdback_full_match_is_not_held():
    check_close(*both("holdback", "x</s>", ["</s>"]))


def test_holdback_longest_over_all_stops():
    check_close(*both("holdback", "ab\n\nU", ["\n", "\n\nUser:"]))
    check_close(*both("holdback", "ab\n", ["\n\nUser:", "\nA"]))


def test_holdback_longer_prefix_not_the_first_found():
    # "aXa" ends with "a" and with "aXa", both prefixes of "aXaY"
    check_close(*both("holdback", "zaXa", ["aXaY"]))


def test_holdback_text_shorter_than_stop():
    check_close(*both("holdback", "Us", ["User:"]))
    check_close(*both("holdback", "", ["User:"]))


def test_holdback_no_stops_and_one_char_stop():
    check_close(*both("holdback", "abc", []))
    check_close(*both("holdback", "abc", ["c"]))


# --- stream -----------------------------------------------------------------------------------

def test_no_stop_everything_streams():
    check_close(*both("stream", ["a", "b", "c"], ["</s>"]))


def test_no_stops_at_all():
    check_close(*both("stream", ["a<", "/s>"], []))


def test_empty_stream():
    check_close(*both("stream", [], ["x"]))


def test_stop_inside_one_token():
    check_close(*both("stream", ["ab", "c</s>d", "e"], ["</s>"]))


def test_stop_at_the_very_start():
    check_close(*both("stream", ["</s>", "x"], ["</s>"]))


def test_stop_across_three_tokens():
    check_close(*both("stream", ["x<", "/", "s>", "y"], ["</s>"]))


def test_false_alarm_released_when_it_breaks():
    check_close(*both("stream", ["x<", "/", "b>", "y"], ["</s>"]))


def test_last_token_flushes_the_held_tail():
    check_close(*both("stream", ["x", "</"], ["</s>"]))
    check_close(*both("stream", ["</"], ["</s>"]))


def test_stop_completed_by_the_last_token():
    check_close(*both("stream", ["x</", "s>"], ["</s>"]))


def test_include_stop():
    check_close(*both("stream", ["ab", "c</s>d", "e"], ["</s>"], include_stop=True))
    check_close(*both("stream", ["x<", "/", "s>", "y"], ["</s>"], include_stop=True))


def test_earliest_position_beats_list_order():
    # "END" is listed first but "stop" starts earlier in the same token
    check_close(*both("stream", ["a stop then END"], ["END", "stop"]))


def test_same_position_takes_the_earlier_stop():
    check_close(*both("stream", ["x ab c"], ["abc", "ab", "a"]))
    check_close(*both("stream", ["x ab c"], ["a", "ab"], include_stop=True))
    check_close(*both("stream", ["x ab c"], ["ab", "a"], include_stop=True))


def test_shorter_stop_completes_while_a_longer_one_is_pending():
    check_close(*both("stream", ["xab", "cd"], ["abcde", "bc"]))
    # the longer one would start earlier, but the shorter one is complete first
    check_close(*both("stream", ["xabc", "de"], ["abcde", "bc"]))
    check_close(*both("stream", ["xab", "cde"], ["abcde", "bc"]))


def test_empty_pieces_in_the_stream():
    check_close(*both("stream", ["", "a", "", "<", "", "/s>", "b"], ["</s>"]))


def test_held_text_released_before_a_later_stop():
    check_close(*both("stream", ["a\n", "b", "\n\nUser:"], ["\n\nUser:"]))


def test_repeated_prefix_characters():
    check_close(*both("stream", ["aa", "a", "ab", "c"], ["aab"]))
    check_close(*both("stream", ["aa", "a", "a", "c"], ["aab"]))


def test_unicode_text():
    check_close(*both("stream", ["你好", "。\n", "\n用户", "：", "在吗"], ["\n\n用户："]))


ALPHABET = "ab<>/\n"


def _case(rng):
    stops = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 3))]
    pieces = ["".join(rng.choice(ALPHABET + "xyz") for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 12))]
    return pieces, stops, rng.random() < 0.3


_rng = random.Random(132)
RANDOM = [_case(_rng) for _ in range(40)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    pieces, stops, include = RANDOM[index]
    got, expected = both("stream", pieces, stops, include_stop=include)
    released, text = "".join(expected["chunks"]), "".join(pieces)
    if not text.startswith(released) or (expected["stop"] < 0 and released != text):
        raise RuntimeError("the reference's released text is not the stream's text cut at a stop")
    check_close(got, expected)
    check_close(*both("holdback", text, stops))
