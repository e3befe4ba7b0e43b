# The system-design chapter's capacity estimate, code unchanged (comments translated).
import math
from sim import Setup, simulate, summarize

kv_per_token = 2 * 80 * 8 * 128 * 1                                  # FP8 KV
instance = Setup(params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=kv_per_token,
                 kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / kv_per_token),
                 peak_flops=8 * 1979e12, bandwidth=8 * 3.35e12, mfu=0.4, step_overhead=1.5e-3,
                 max_num_batched_tokens=8192, max_num_seqs=512)
low = summarize(simulate(instance, 1, 300, 2000, 500), 2.0, 0.05)
print(f"低负载：TTFT {low['ttft_p50'] * 1e3:.0f} ms，TPOT {low['tpot_p50'] * 1e3:.1f} ms")

lo, hi = 1.0, 60.0
for _ in range(12):
    mid = (lo + hi) / 2
    ok = summarize(simulate(instance, mid, 1500, 2000, 500), 2.0, 0.05)["slo_ok"] >= 0.99
    lo, hi = (mid, hi) if ok else (lo, mid)
instances = math.ceil(200 / lo * 1.3)                                  # 30% headroom for bursts and failures
print(f"单实例满足 SLO 的最大速率约 {lo:.1f} req/s；200 QPS 需要 {math.ceil(200 / lo)} 个实例，"
      f"加 30% 余量为 {instances} 个（{instances * 8} 张 H100）")

gpu_hour_cost = 2.5                                                    # assumed $2.5 per H100-hour
output_tokens_per_hour = 200 * 500 * 3600
print(f"按每卡每小时 ${gpu_hour_cost} 计：每小时 ${instances * 8 * gpu_hour_cost:.0f}，"
      f"约合每百万输出 token ${instances * 8 * gpu_hour_cost / output_tokens_per_hour * 1e6:.2f}")
