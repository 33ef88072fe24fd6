"""kvq_replica.py -- transformers' QuantizedCache with the quanto backend, for the generation harness
(measure_llm.py --mode generate --cache quantized), written from the sources, not from vramcalc:

  transformers cache_utils.py @004999d9: QuantizedCache.__init__ (one QuantoQuantizedLayer per
      decoder layer, nbits 4, axis_key = axis_value = 0, q_group_size 64, residual_length 128),
      QuantizedLayer.update, QuantoQuantizedLayer._quantize / _dequantize;
  optimum-quanto @e33f8202: tensor/optimizers/affine_optimizer.py AffineOptimizer.__call__,
      tensor/optimizers/max_optimizer.py MaxOptimizer.optimize, tensor/grouped.py group / ungroup,
      library/quantize.py quantize_affine (the "default" implementation, used on every device),
      tensor/packed.py pack_weights (PackedTensor.pack), tensor/qbits.py QBitsDequantizer.forward,
      library/extensions/cuda/unpack.cu (the CUDA unpack: one torch::empty output of
      rows x 8 / bits, written by the kernel; written here with out= and in-place ops, which
      allocate nothing more, so the allocations are the kernel's).

Everything is a real tensor of the source's dtype and shape; the harness counts the allocations.
"""

import torch


def group(base, axis, group_size):
    # grouped.py group (axis 0 only: QuantizedCache's default axis_key / axis_value)
    assert axis == 0
    axis_dim = base.shape[axis]
    axis_numel = base.numel() // axis_dim
    if group_size > axis_numel or axis_numel % group_size != 0:
        raise ValueError(f"Group size ({group_size}) must be a divisor of ({axis_numel})")
    return base.reshape([-1, group_size])


def max_optimizer(base, bits, axis, group_size):
    # AffineOptimizer.__call__ (zeropoint=False) -> MaxOptimizer.optimize
    base = group(base, axis, group_size)
    dim = list(range(1, base.ndim))
    rmin = torch.amin(base, dim=dim, keepdim=True)
    rmax = torch.amax(base, dim=dim, keepdim=True)
    qmin = -(2 ** (bits - 1))
    qmax = 2 ** (bits - 1) - 1
    scale = (rmax - rmin) / (qmax - qmin)
    shift = -rmin
    return scale, shift


def quantize_affine(base, bits, axis, group_size, scale, shift):
    # library/quantize.py quantize_affine (a float shift)
    base = group(base, axis=axis, group_size=group_size)
    data = torch.round((base + shift) / scale)
    return torch.clamp(data, min=0, max=2 ** bits - 1).to(torch.uint8)


def pack_weights(intweights, bits):
    # tensor/packed.py pack_weights
    original_shape = intweights.shape
    values_per_item = 8 // bits
    row_dim = (original_shape[0] + values_per_item - 1) // values_per_item
    packed_tensor_shape = (row_dim, *original_shape[1:])
    packed = torch.zeros(packed_tensor_shape, dtype=torch.uint8)
    unpacked = intweights.to(torch.uint8)
    it = min(values_per_item, (original_shape[0] // row_dim) + 1)
    for i in range(it):
        start = i * row_dim
        end = min(start + row_dim, original_shape[0])
        packed[: (end - start)] |= unpacked[start:end] << (bits * i)
    return packed


class QBits:
    """WeightQBitsTensor: _data (packed uint8 [ceil(G / (8 / bits)), g]), _scale and _shift [G, 1]."""

    def __init__(self, data, scale, shift, bits, rows, shape):
        self._data, self._scale, self._shift = data, scale, shift
        self.bits, self.rows, self.shape = bits, rows, shape

    def unpack(self):
        # unpack.cu: allocate_output (rows x 8 / bits), then the kernel writes each slice
        vpi = 8 // self.bits
        packed = self._data
        n = packed.shape[0]
        out = torch.empty((n * vpi, packed.shape[1]), dtype=torch.uint8)
        for i in range(vpi):
            sl = out[i * n:(i + 1) * n]
            torch.bitwise_and(packed, (2 ** self.bits - 1) << (self.bits * i), out=sl)
            if i:
                sl >>= self.bits * i
        return out[: self.rows]

    def dequantize(self):
        # QBitsDequantizer.forward (float shift, integer qtype)
        data = self.unpack()
        dqt = self._scale * data
        dqt -= self._shift
        return dqt.reshape(self.shape)  # ungroup, axis 0: a view


def quantize_weight(t, bits, axis, scale, shift, group_size):
    # WeightsQBitsQuantizer.forward -> WeightQBitsTensor.create (4-D: the plain WeightQBitsTensor)
    # -> __init__: PackedTensor.pack(data, bits)
    data = quantize_affine(t, bits, axis, group_size, scale, shift)
    rows = data.shape[0]
    return QBits(pack_weights(data, bits), scale, shift, bits, rows, t.shape)


class QuantizedLayer:
    def __init__(self, nbits=4, axis_key=0, axis_value=0, q_group_size=64, residual_length=128):
        self.nbits, self.axis_key, self.axis_value = nbits, axis_key, axis_value
        self.q_group_size, self.residual_length = q_group_size, residual_length
        self.cumulative_length = 0
        self.is_initialized = False
        self.keys = self.values = None

    def _quantize(self, tensor, axis):
        # QuantoQuantizedLayer._quantize
        scale, zeropoint = max_optimizer(tensor, self.nbits, axis, self.q_group_size)
        return quantize_weight(tensor, self.nbits, axis, scale, zeropoint, self.q_group_size)

    def _dequantize(self, qtensor):
        return qtensor.dequantize()

    def update(self, key_states, value_states):
        # QuantizedLayer.update
        self.cumulative_length += key_states.shape[-2]
        if not self.is_initialized:
            # DynamicLayer.lazy_initialization
            self.keys = torch.tensor([], dtype=key_states.dtype)
            self.values = torch.tensor([], dtype=key_states.dtype)
            self.is_initialized = True
            self._quantized_keys = self._quantize(key_states.contiguous(), axis=self.axis_key)
            self._quantized_values = self._quantize(value_states.contiguous(), axis=self.axis_value)
            return key_states, value_states

        dequant_keys = self._dequantize(self._quantized_keys)
        dequant_values = self._dequantize(self._quantized_values)
        keys_to_return = torch.cat([dequant_keys, self.keys, key_states], dim=-2)
        values_to_return = torch.cat([dequant_values, self.values, value_states], dim=-2)
        if self.keys.dim() == 4 and self.keys.shape[-2] + 1 >= self.residual_length:
            self._quantized_keys = self._quantize(keys_to_return.contiguous(), axis=self.axis_key)
            self._quantized_values = self._quantize(values_to_return.contiguous(), axis=self.axis_value)
            self.keys = torch.tensor([], dtype=key_states.dtype)
            self.values = torch.tensor([], dtype=key_states.dtype)
        else:
            self.keys = torch.cat([self.keys, key_states], dim=-2)
            self.values = torch.cat([self.values, value_states], dim=-2)
        return keys_to_return, values_to_return


class QuantizedCache:
    """QuantizedCache(backend="quanto", config, nbits, axis_key, axis_value, q_group_size,
    residual_length): Cache.update(key_states, value_states, layer_idx) -> the layer's update."""

    def __init__(self, num_layers, nbits=4, q_group_size=64, residual_length=128):
        self.layers = [QuantizedLayer(nbits, 0, 0, q_group_size, residual_length) for _ in range(num_layers)]

    def update(self, key_states, value_states, layer_idx):
        return self.layers[layer_idx].update(key_states, value_states)

    def get_seq_length(self, layer_idx=0):
        return self.layers[layer_idx].cumulative_length
