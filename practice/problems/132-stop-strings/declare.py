"""Parameter domains of 132 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Bool, Dict, Fn, Int, List, Str

STOPS = List(Str(nonempty=True))

FUNCTIONS = {
    "holdback": Fn(
        text=Str(), stops=STOPS,
        returns=Int(ge=0),
        example={"text": "abc\n\nUs", "stops": ["\n\nUser:"]}),
    "stream": Fn(
        pieces=List(Str()), stops=STOPS, include_stop=Bool(),
        returns=Dict({"chunks": List(Str()), "stop": Int(ge=-1), "tokens": Int(ge=0)}),
        example={"pieces": ["The answer", " is 42", ".\n", "\nUs", "er:", " next"],
                 "stops": ["\n\nUser:", "</s>"], "include_stop": False}),
}
