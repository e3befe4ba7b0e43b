"""Parameter domains of 168 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'sync_s': Fn(
        weight_bytes=Real(gt=0),
        instances=Int(ge=1),
        mode=Str(choices=['push', 'relay']),
        sender_gbs=Real(gt=0),
        receiver_gbs=Real(gt=0),
        latency_s=Real(ge=0),
        returns=Real(),
        example={'weight_bytes': 671000000000.0,
                 'instances': 16,
                 'mode': 'push',
                 'sender_gbs': 800,
                 'receiver_gbs': 400,
                 'latency_s': 0.01}),
    'rl_step': Fn(
        rollout_s=Real(gt=0),
        train_s=Real(gt=0),
        sync_s=Real(ge=0),
        mode=Str(choices=['sync', 'async']),
        returns=Dict({'step_s': Real(), 'rollout_busy': Real(), 'train_busy': Real()}),
        example={'rollout_s': 300, 'train_s': 120, 'sync_s': 13.43, 'mode': 'sync'}),
    'rollout_gpus': Fn(
        prompts=Int(ge=1),
        samples_per_prompt=Int(ge=1),
        output_len=Int(ge=1),
        tokens_per_s_per_gpu=Real(gt=0),
        rollout_s=Real(gt=0),
        returns=Dict({'tokens': Int(), 'gpus': Int()}),
        example={'prompts': 512,
                 'samples_per_prompt': 16,
                 'output_len': 8000,
                 'tokens_per_s_per_gpu': 2500,
                 'rollout_s': 300}),
}
