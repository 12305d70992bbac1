"""kareus.torch: apply both halves of a Kareus plan in a PyTorch job.

    info = kareus.torch.rank_info(tp=2, plan_stages=plan.num_stages)   # torchrun / Slurm → ranks, stage
    dev, uuid = kareus.torch.gpu_device(info, "nvml")                   # CUDA_VISIBLE_DEVICES → NVML
    stage = kareus.torch.PartitionedStage(cfg, params, layers, tp, info["tp_rank"], TPComm(...),
                                          kareus.torch.partition_catalog(job), first, last)
    driver = kareus.torch.PipelineDriver(stage, info["stage"], stages, m, shape, runtime=rt)
    loss = driver.step(tokens, targets)

Rank/device mapping, the partition catalog and the schedule order are libkareus's (through the
ctypes binding); this package implements the model's ops, the nanobatched executor, the
collectives and the pipeline's sends and receives. See docs/runtime.md, "PyTorch".
"""

from .launch import gpu_device, partition_catalog, rank_info, schedule_order
from .comm import TPComm
from .llama import LlamaConfig, PartitionedStage, init_params, reference_loss, shard_params
from .pipeline import PipelineDriver

__all__ = ["rank_info", "gpu_device", "partition_catalog", "schedule_order", "TPComm", "LlamaConfig",
           "PartitionedStage", "init_params", "reference_loss", "shard_params", "PipelineDriver"]
