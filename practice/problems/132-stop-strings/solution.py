"""Reference solution for 132: stop strings in streamed output (hold back a possible prefix of a
stop string, cut at the first complete one)."""


def _stops(stops):
    if not isinstance(stops, list) or any(not isinstance(s, str) or not s for s in stops):
        raise ValueError(f"stops must be a list of non-empty strings, got {stops!r}")


def _holdback(text, stops):
    best = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:n]):
                best = n
                break
    return best


def holdback(text, stops):
    """Length of the longest suffix of text that is a proper prefix of some stop string."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {text!r}")
    _stops(stops)
    return _holdback(text, stops)


def _first_stop(text, stops, start):
    """(position, stop index) of the earliest complete stop string at or after start (the earlier
    stop in the list on ties), or None."""
    found = None
    for i, s in enumerate(stops):
        p = text.find(s, start)
        if p >= 0 and (found is None or p < found[0]):
            found = (p, i)
    return found


def stream(pieces, stops, include_stop=False):
    """Feed each token's text; release what can no longer become part of a stop string; stop at the
    first complete stop string (cutting it off unless include_stop)."""
    if not isinstance(pieces, list) or any(not isinstance(p, str) for p in pieces):
        raise ValueError(f"pieces must be a list of strings, got {pieces!r}")
    _stops(stops)
    if not isinstance(include_stop, bool):
        raise ValueError(f"include_stop must be True or False, got {include_stop!r}")
    text, sent, chunks = "", 0, []
    for t, piece in enumerate(pieces):
        text += piece
        hit = _first_stop(text, stops, sent)
        if hit is not None:
            p, i = hit
            end = p + len(stops[i]) if include_stop else p
            chunks.append(text[sent:end])
            return {"chunks": chunks, "stop": i, "tokens": t + 1}
        keep = len(text) if t == len(pieces) - 1 else len(text) - _holdback(text[sent:], stops)
        chunks.append(text[sent:keep])
        sent = keep
    return {"chunks": chunks, "stop": -1, "tokens": len(pieces)}
