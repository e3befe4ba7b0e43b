"""Parameter domains of 180 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Bool, Dict, Fn, List, Optional, Str

PLUGINS = List(Dict({"name": Str(nonempty=True), "returns": Optional(Str(nonempty=True)), "raises": Bool()}),
               note="`name` 互不相同", note_en="distinct `name`s")

FUNCTIONS = {
    "resolve_platform": Fn(
        builtin=PLUGINS, plugins=PLUGINS, allowed=Optional(List(Str())),
        returns=Dict({"platform": Optional(Str()), "source": Str(choices=["plugin", "builtin", "unspecified"]),
                      "activated": List(Str()), "error": Bool()}),
        example={"builtin": [{"name": "tpu", "returns": None, "raises": False},
                             {"name": "cuda", "returns": "vllm.platforms.cuda.CudaPlatform", "raises": False}],
                 "plugins": [{"name": "ascend", "returns": "vllm_ascend.platform.NPUPlatform", "raises": False}],
                 "allowed": None}),
    "choose_impl": Fn(
        impls=List(Str(nonempty=True), min_len=1, note="包含 `\"native\"`", note_en="includes `\"native\"`"),
        platform=Str(choices=["cuda", "rocm", "cpu", "xpu", "tpu", "oot"]), enabled=Bool(),
        returns=Str(),
        infeasible=["impls"],
        example={"impls": ["native", "cuda", "hip"], "platform": "rocm", "enabled": True}),
}
