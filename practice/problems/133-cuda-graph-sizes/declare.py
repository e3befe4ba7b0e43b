"""Parameter domains of 133 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

BATCHES = List(Int(ge=1), min_len=1)

FUNCTIONS = {
    "padding_waste": Fn(
        batches=BATCHES, sizes=List(Int(ge=1), note="互不相同", note_en="no size twice"), eager_cost=Int(ge=0),
        returns=Dict({"padded_slots": Int(ge=0), "eager_steps": Int(ge=0), "waste": Real(ge=0)}),
        example={"batches": [8, 8, 16], "sizes": [8, 16], "eager_cost": 5}),
    "choose_sizes": Fn(
        batches=BATCHES, max_graphs=Int(ge=0), eager_cost=Int(ge=0),
        returns=Dict({"sizes": List(Int(ge=1)), "waste": Real(ge=0)}),
        example={"batches": [1, 2, 3, 3, 4, 6, 7, 7, 8, 8, 8, 12, 13, 16, 20], "max_graphs": 3, "eager_cost": 6}),
}
