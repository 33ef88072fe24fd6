"""chunked_replica.py -- torchtune's chunked output projection and CEWithChunkedOutputLoss, for
measure_llm.py --loss chunked [--loss-chunks N] (issue 26 item 2).

Written from pytorch/torchtune @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 (the file last changed
at 0a08c2f5, 2025-05-15), statement by statement; nothing from vramcalc's engine was read:

  torchtune/modules/transformer.py
    TransformerDecoder.set_num_output_chunks(n): self.num_output_chunks = n
      (CEWithChunkedOutputLoss.set_model_output calls it; the recipe calls set_model_output in
      _setup_model / setup: recipes/lora_finetune_single_device.py l.314-316)
    unembed(h): h = self.norm(h); num_output_chunks > 0: output = self.chunked_output(h)
    chunked_output(last_hidden_state):
      [self.output(chunk) for chunk in last_hidden_state.tensor_split(self.num_output_chunks, dim=1)]
  torchtune/modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss(num_output_chunks=8,
  ignore_index=-100):
    compute_cross_entropy(logits, labels):
      F.cross_entropy(logits.float(), labels, ignore_index=self.ignore_index, reduction="sum")
    forward(logits: list, labels):
      total_elements = (labels != self.ignore_index).sum()
      labels = [t.reshape(-1) for t in labels.tensor_split(self.num_output_chunks, dim=1)]
      logits = [c.reshape(-1, c.size(-1)) for c in logits]
      total_loss = 0.0
      for logits_chunk, labels_chunk in zip(logits, labels):
          total_loss += self.compute_cross_entropy(logits_chunk, labels_chunk)
      return total_loss / total_elements
  recipes/lora_finetune_single_device.py _loss_step: outputs = self._model(**batch);
    loss = self._loss_fn(outputs, labels); del outputs ("free outputs otherwise it peaks
    backward memory"); labels = batch.pop("labels") as the collate made them (no shift here).

Not replicated: torch.compile of compute_cross_entropy (the recipe's compile=True), DTensor
logits (tensor parallelism).
"""
import torch
import torch.nn.functional as F


def chunked_output(head, last_hidden_state, num_output_chunks):
    """TransformerDecoder.chunked_output: the output projection per chunk of the sequence."""
    return [head(chunk) for chunk in last_hidden_state.tensor_split(num_output_chunks, dim=1)]


class CEWithChunkedOutputLoss(torch.nn.Module):
    def __init__(self, num_output_chunks=8, ignore_index=-100):
        super().__init__()
        self.num_output_chunks = num_output_chunks
        self.ignore_index = ignore_index

    def compute_cross_entropy(self, logits, labels):
        return F.cross_entropy(logits.float(), labels, ignore_index=self.ignore_index, reduction="sum")

    def forward(self, logits, labels):
        total_elements = (labels != self.ignore_index).sum()
        labels = [target_chunk.reshape(-1) for target_chunk in labels.tensor_split(self.num_output_chunks, dim=1)]
        logits = [logit_chunk.reshape(-1, logit_chunk.size(-1)) for logit_chunk in logits]
        total_loss = 0.0
        for logits_chunk, labels_chunk in zip(logits, labels):
            total_loss += self.compute_cross_entropy(logits_chunk, labels_chunk)
        return total_loss / total_elements
