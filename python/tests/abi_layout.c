/*
 * abi_layout.c — prints the size of every struct the Python API mirrors
 * (python/vramcalc/_capi.py, _request.py) and the offset of each field, as the
 * C compiler lays them out from include/vramcalc/vramcalc.h: "vc_error 1032"
 * and "vc_error.code 0" lines. python/tests/test_api.py compares them with ctypes.
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
    SIZE(vc_gpu);
    OFF(vc_gpu, name); OFF(vc_gpu, label); OFF(vc_gpu, vendor); OFF(vc_gpu, capacity); OFF(vc_gpu, hopper);
    OFF(vc_gpu, source); OFF(vc_gpu, sm); OFF(vc_gpu, sms); OFF(vc_gpu, sm_threads);
    SIZE(vc_option_info);
    OFF(vc_option_info, name); OFF(vc_option_info, flag); OFF(vc_option_info, letter); OFF(vc_option_info, arg);
    OFF(vc_option_info, type); OFF(vc_option_info, section); OFF(vc_option_info, applies);
    OFF(vc_option_info, default_text); OFF(vc_option_info, choices); OFF(vc_option_info, help);
    SIZE(vc_render_options);
    OFF(vc_render_options, width); OFF(vc_render_options, utf8); OFF(vc_render_options, color);
    return 0;
}
