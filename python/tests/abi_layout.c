/*
 * abi_layout.c — prints the size of every struct the Python API mirrors
 * (python/vramcalc/_capi.py) and the offset of each field, as the C compiler
 * lays them out from include/vramcalc/vramcalc.h: "vc_options 64" and
 * "vc_options.batch 0" lines. python/tests/test_api.py compares them with ctypes.
 */
#include <stddef.h>
#include <stdio.h>

#include "vramcalc/vramcalc.h"

#define SIZE(T) printf(#T " %zu\n", sizeof(T))
#define OFF(T, f) printf(#T "." #f " %zu\n", offsetof(T, f))

int main(void)
{
    SIZE(vc_error);
    OFF(vc_error, code); OFF(vc_error, file); OFF(vc_error, line); OFF(vc_error, col);
    OFF(vc_error, path); OFF(vc_error, msg);
    SIZE(vc_options);
    OFF(vc_options, batch); OFF(vc_options, optim); OFF(vc_options, optim_impl); OFF(vc_options, accumulate);
    OFF(vc_options, precision); OFF(vc_options, mode); OFF(vc_options, attention); OFF(vc_options, workspace);
    OFF(vc_options, context); OFF(vc_options, hopper); OFF(vc_options, torch_version); OFF(vc_options, parallel); OFF(vc_options, gpus);
    OFF(vc_options, prompt); OFF(vc_options, new_tokens); OFF(vc_options, cache);
    OFF(vc_options, tp); OFF(vc_options, pp); OFF(vc_options, micro_batches); OFF(vc_options, sp);
    OFF(vc_options, offload);
    OFF(vc_options, kv_bits);
    OFF(vc_options, kv_group);
    OFF(vc_options, kv_residual);
    OFF(vc_options, fsdp_param_dtype);
    OFF(vc_options, fsdp_reduce_dtype);
    OFF(vc_options, ep);
    OFF(vc_options, device);
    OFF(vc_options, fsdp_reshard);
    OFF(vc_options, fsdp_replicate);
    OFF(vc_options, pp_virtual);
    OFF(vc_options, gradient_as_bucket_view);
    OFF(vc_options, parameters_as_bucket_view);
    OFF(vc_options, fsdp_use_orig_params);
    OFF(vc_options, ds_overlap_comm);
    OFF(vc_options, offload_device);
    OFF(vc_options, nvme_gds);
    OFF(vc_options, keep_grads);
    OFF(vc_options, hold_output);
    SIZE(vc_memory);
    OFF(vc_memory, weights); OFF(vc_memory, gradients); OFF(vc_memory, optimizer_states);
    OFF(vc_memory, activations); OFF(vc_memory, workspace); OFF(vc_memory, peak_allocated);
    OFF(vc_memory, reserved); OFF(vc_memory, cuda_context); OFF(vc_memory, total); OFF(vc_memory, optimizer_states_paged);
    SIZE(vc_peak);
    OFF(vc_peak, phase); OFF(vc_peak, layer); OFF(vc_peak, kind); OFF(vc_peak, weights); OFF(vc_peak, gradients);
    OFF(vc_peak, optimizer_states); OFF(vc_peak, activations); OFF(vc_peak, temporaries); OFF(vc_peak, workspace);
    SIZE(vc_layer_info);
    OFF(vc_layer_info, name); OFF(vc_layer_info, kind); OFF(vc_layer_info, ndim); OFF(vc_layer_info, output_shape);
    OFF(vc_layer_info, parameters); OFF(vc_layer_info, activations);
    SIZE(vc_result);
    OFF(vc_result, parameters); OFF(vc_result, trainable_parameters); OFF(vc_result, memory); OFF(vc_result, peak);
    OFF(vc_result, attention); OFF(vc_result, generate); OFF(vc_result, nlayers); OFF(vc_result, layers);
    OFF(vc_result, nranks); OFF(vc_result, ranks);
    SIZE(vc_rank_info);
    OFF(vc_rank_info, kind); OFF(vc_rank_info, stage_first); OFF(vc_rank_info, stage_last); OFF(vc_rank_info, rank_first);
    OFF(vc_rank_info, rank_last); OFF(vc_rank_info, stage); OFF(vc_rank_info, layers); OFF(vc_rank_info, in_flight);
    OFF(vc_rank_info, parameters); OFF(vc_rank_info, memory); OFF(vc_rank_info, peak);
    SIZE(vc_gpu);
    OFF(vc_gpu, name); OFF(vc_gpu, label); OFF(vc_gpu, vendor); OFF(vc_gpu, capacity); OFF(vc_gpu, hopper);
    OFF(vc_gpu, source); OFF(vc_gpu, sm); OFF(vc_gpu, sms); OFF(vc_gpu, sm_threads);
    SIZE(vc_gpu_spec);
    OFF(vc_gpu_spec, name); OFF(vc_gpu_spec, preset); OFF(vc_gpu_spec, total); OFF(vc_gpu_spec, capacity);
    OFF(vc_gpu_spec, percent);
    return 0;
}
