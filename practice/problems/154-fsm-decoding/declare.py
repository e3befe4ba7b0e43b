"""Parameter domains of 154 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Bool, Dict, Fn, Int, List, Map, Real, Str

DFA = Dict({"transitions": Map(Str(nonempty=True), Map(Str(nonempty=True), Str(nonempty=True)),
                               note="内层字典的键都是单个字符", note_en="the inner keys are single characters"),
            "accept": List(Str(nonempty=True))})
VOCAB = List(Str(nonempty=True), min_len=1)
EX_DFA = {"transitions": {"s": {"t": "t1", "f": "f1"}, "t1": {"r": "t2"}, "t2": {"u": "t3"}, "t3": {"e": "done"},
                          "f1": {"a": "f2"}, "f2": {"l": "f3"}, "f3": {"s": "f4"}, "f4": {"e": "done"}, "done": {}},
          "accept": ["done"]}
EX_VOCAB = ["true", "tr", "ue", "fa", "lse", "yes", "t", "e", " "]

FUNCTIONS = {
    "token_mask": Fn(
        dfa=DFA, state=Str(nonempty=True), vocab=VOCAB,
        returns=List(Int(ge=0, le=1)),
        example={"dfa": EX_DFA, "state": "s", "vocab": EX_VOCAB}),
    "constrained_greedy": Fn(
        dfa=DFA, state=Str(nonempty=True), vocab=VOCAB,
        logits=List(List(Real(), min_len=1), note="每行长度为 `len(vocab) + 1`", note_en="rows of length `len(vocab) + 1`"),
        returns=Dict({"tokens": List(Int(ge=0)), "text": Str(), "state": Str(), "finished": Bool(), "stuck": Bool()}),
        example={"dfa": EX_DFA, "state": "s", "vocab": EX_VOCAB,
                 "logits": [[0.1, 0.5, 0, 0.2, 0, 3.0, 0.4, 0, 0, 1.0], [0, 0, 2.0, 0, 0, 0, 0, 0, 0, 5.0]]}),
}
