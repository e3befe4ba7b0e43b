"""Reference solution for 154: constrained decoding with a finite-state machine over characters:
the token mask at a state (a token is allowed when all its characters have transitions), and greedy
decoding that only picks allowed tokens."""
import math
import numbers


def _dfa(dfa):
    ok = isinstance(dfa, dict) and set(dfa) == {"transitions", "accept"} and isinstance(dfa["transitions"], dict) \
        and isinstance(dfa["accept"], list) and all(isinstance(a, str) and a for a in dfa["accept"])
    if ok:
        for s, edges in dfa["transitions"].items():
            if not isinstance(s, str) or not s or not isinstance(edges, dict) or any(
                    not isinstance(c, str) or len(c) != 1 or not isinstance(t, str) or not t for c, t in edges.items()):
                ok = False
    if not ok:
        raise ValueError(f"dfa must be {{transitions: {{state: {{one character: state}}}}, accept: [states]}}, "
                         f"got {dfa!r}")


def _vocab(vocab):
    if not isinstance(vocab, list) or not vocab or any(not isinstance(t, str) or not t for t in vocab):
        raise ValueError(f"vocab must be a non-empty list of non-empty strings, got {vocab!r}")


def _state(state):
    if not isinstance(state, str) or not state:
        raise ValueError(f"state must be a non-empty string, got {state!r}")


def _walk(transitions, state, text):
    for c in text:
        state = transitions.get(state, {}).get(c)
        if state is None:
            return None
    return state


def _mask(dfa, state, vocab):
    mask = [0 if _walk(dfa["transitions"], state, t) is None else 1 for t in vocab]
    return mask + [1 if state in dfa["accept"] else 0]


def token_mask(dfa, state, vocab):
    """1 for each token whose characters all have transitions from `state`; the last entry is the
    end-of-sequence token, allowed in an accepting state."""
    _dfa(dfa)
    _state(state)
    _vocab(vocab)
    return _mask(dfa, state, vocab)


def constrained_greedy(dfa, state, vocab, logits):
    """Each step: mask, take the allowed token with the largest logit (the lowest id on ties); stop
    at end-of-sequence, when nothing is allowed, or when the logits run out."""
    _dfa(dfa)
    _state(state)
    _vocab(vocab)
    if not isinstance(logits, list) or any(
            not isinstance(row, list) or len(row) != len(vocab) + 1 or any(
                isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) for x in row)
            for row in logits):
        raise ValueError(f"logits must be a list of rows of {len(vocab) + 1} finite numbers (one per token and "
                         f"end of sequence), got {logits!r}")
    tokens, finished, stuck = [], False, False
    for row in logits:
        mask = _mask(dfa, state, vocab)
        best = None
        for i, allowed in enumerate(mask):
            if allowed and (best is None or row[i] > row[best]):
                best = i
        if best is None:
            stuck = True
            break
        if best == len(vocab):
            finished = True
            break
        tokens.append(best)
        state = _walk(dfa["transitions"], state, vocab[best])
    return {"tokens": tokens, "text": "".join(vocab[t] for t in tokens), "state": state,
            "finished": finished, "stuck": stuck}
