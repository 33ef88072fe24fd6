/*
 * gpu.c — GPU presets, byte sizes and the --gpu syntax (issue 4).
 *
 * Each preset's capacity is the total its management tool reports for one
 * device: nvidia-smi's "MiB" total (the Memory-Usage column, or
 * `--query-gpu=memory.total`, or `-q` "FB Memory Usage / Total"), times
 * 1048576; for AMD, rocm-smi's "VRAM Total Memory (B)". That is what a
 * process can see, and what `total` (reserved + CUDA context, docs/contract.md §4) is
 * compared with. It is less than the marketed size: the driver keeps some
 * memory for itself, and ECC (on by default on data-centre cards) takes
 * more. Reported totals change a little with the driver version (a V100 16GB
 * showed 16130MiB under driver 418, 16160MiB under 450 and 16384MiB under
 * 570); the table uses the newest published figure found.
 *
 * Sources: one comment per row. "nvidia-smi" rows cite a published output
 * (GitHub issue or pull request); rows marked DERIVED had no published
 * figure at hand and were converted from the marketed size as the comment
 * says, rounded down so that a fit check errs on the safe side.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MIB(n) ((int64_t)(n) * 1048576)

__extension__ typedef __int128 i128;

/* sm is the compute capability x 10 from NVIDIA's table
 * (developer.nvidia.com/cuda-gpus); 0 for AMD. vLLM's default dtype follows it
 * (serve.c vc_serve_auto_precision). The last two fields are what
 * cudaGetDeviceProperties reports as multiProcessorCount and
 * maxThreadsPerMultiProcessor: the SM (AMD: compute unit) count of each
 * product's published specification (the H200 row as measured:
 * docs/accuracy.md's GPU run read 132), and the resident threads per SM of
 * its compute capability in the CUDA C++ Programming Guide's table
 * "Technical Specifications per Compute Capability" (2048 on 7.0, 8.0,
 * 9.0, 10.0; 1024 on 7.5; 1536 on 8.6, 8.9, 12.0); 2048 on CDNA. They size
 * CUDA reductions' scratch (src/engine/scratch.c). */
static const vc_gpu gpus[] = {
    /* ---- NVIDIA data centre ---- */
    {"t4", "NVIDIA Tesla T4 16GB", "NVIDIA", MIB(15360), 0,
     /* 15360MiB: modal-labs/modal-client#2797 (nvidia-smi totals of Modal's fleet) */
     "nvidia-smi 15360MiB (github.com/modal-labs/modal-client/pull/2797)", 75, 40, 1024},
    {"v100-16gb", "NVIDIA Tesla V100 16GB (SXM2/PCIe)", "NVIDIA", MIB(16384), 0,
     /* 16384MiB: Tesla V100-SXM2-16GB, driver 570.211.01, 1CatAI/1Cat-vLLM#85 (older drivers: 16160/16130MiB) */
     "nvidia-smi 16384MiB, driver 570 (github.com/1CatAI/1Cat-vLLM/issues/85)", 70, 80, 2048},
    {"v100-32gb", "NVIDIA Tesla V100 32GB (SXM2/PCIe)", "NVIDIA", MIB(32768), 0,
     /* 32768MiB: Tesla V100-SXM2-32GB, driver 525.105.17, Wan-Video/Wan2.1#5 */
     "nvidia-smi 32768MiB, driver 525 (github.com/Wan-Video/Wan2.1/issues/5)", 70, 80, 2048},
    {"a10", "NVIDIA A10 24GB", "NVIDIA", MIB(23028), 0,
     /* 23028MiB with ECC on: modal-labs/modal-client#2797 (24564MiB with ECC off) */
     "nvidia-smi 23028MiB, ECC on (github.com/modal-labs/modal-client/pull/2797)", 86, 72, 1536},
    {"a10g", "NVIDIA A10G 24GB (AWS g5)", "NVIDIA", MIB(23028), 0,
     /* 23028MiB: NVIDIA A10G, driver 535.247.01, NVIDIA/DCGM#232 */
     "nvidia-smi 23028MiB (github.com/NVIDIA/DCGM/issues/232)", 86, 80, 1536},
    {"l4", "NVIDIA L4 24GB", "NVIDIA", MIB(23034), 0,
     /* 23034MiB: modal-labs/modal-client#2797 */
     "nvidia-smi 23034MiB (github.com/modal-labs/modal-client/pull/2797)", 89, 58, 1536},
    {"l40", "NVIDIA L40 48GB", "NVIDIA", MIB(46068), 0,
     /* DERIVED: same AD102 board and 48 GB GDDR6 as the L40S; the L40S's published 46068MiB used */
     "DERIVED: L40S figure (same 48 GB AD102 board), nvidia-smi 46068MiB", 89, 142, 1536},
    {"l40s", "NVIDIA L40S 48GB", "NVIDIA", MIB(46068), 0,
     /* 46068MiB: `nvidia-smi --query-gpu=memory.total`, driver 595.71.05, akash-network/provider-configs#99;
        also modal-labs/modal-client#2797 */
     "nvidia-smi 46068MiB (github.com/akash-network/provider-configs/pull/99)", 89, 142, 1536},
    {"a100-40gb", "NVIDIA A100 40GB (SXM4/PCIe)", "NVIDIA", MIB(40960), 0,
     /* 40960MiB: modal-labs/modal-client#2797 (driver 470 showed 40536MiB: nanopool/phoenix-miner#17) */
     "nvidia-smi 40960MiB (github.com/modal-labs/modal-client/pull/2797)", 80, 108, 2048},
    {"a100-80gb", "NVIDIA A100 80GB (SXM4/PCIe)", "NVIDIA", MIB(81920), 0,
     /* 81920MiB: modal-labs/modal-client#2797 */
     "nvidia-smi 81920MiB (github.com/modal-labs/modal-client/pull/2797)", 80, 108, 2048},
    {"h100-pcie", "NVIDIA H100 PCIe 80GB", "NVIDIA", MIB(81559), 1,
     /* 81559MiB: published nvidia-smi tables of "NVIDIA H100 PCIe" (350 W), e.g. driver 535/550 logs in
        public READMEs; same total as the SXM part */
     "nvidia-smi 81559MiB (published 'NVIDIA H100 PCIe' tables, same as SXM)", 90, 114, 2048},
    {"h100-80gb", "NVIDIA H100 80GB HBM3 (SXM5)", "NVIDIA", MIB(81559), 1,
     /* 81559MiB: NVIDIA/nccl#1264 (8x H100 SXM, driver 550.54.15); also modal-labs/modal-client#2797 */
     "nvidia-smi 81559MiB (github.com/NVIDIA/nccl/issues/1264)", 90, 132, 2048},
    {"h100-nvl", "NVIDIA H100 NVL 94GB", "NVIDIA", MIB(95330), 1,
     /* 99961274368 B = 95330MiB from NVML: fastfetch-cli/fastfetch#1658 (driver 570.86.15) */
     "NVML 99961274368 B = 95330MiB (github.com/fastfetch-cli/fastfetch/issues/1658)", 90, 132, 2048},
    {"h200", "NVIDIA H200 141GB HBM3e", "NVIDIA", MIB(143771), 1,
     /* 143771MiB: published `nvidia-smi` and `nvidia-smi -q` (FB Memory Usage Total: 143771 MiB,
        driver 550.90.12, ECC enabled) outputs of "NVIDIA H200" */
     "nvidia-smi 143771MiB (published 'NVIDIA H200' outputs, driver 550)", 90, 132, 2048},
    {"b200", "NVIDIA B200 180GB HBM3e", "NVIDIA", MIB(183359), 1,
     /* 183359MiB: NVIDIA/TensorRT-LLM#10278 (8x B200, driver 580.95.05) */
     "nvidia-smi 183359MiB (github.com/NVIDIA/TensorRT-LLM/issues/10278)", 100, 148, 2048},
    /* ---- NVIDIA workstation ---- */
    {"rtx-a6000", "NVIDIA RTX A6000 48GB", "NVIDIA", MIB(49140), 0,
     /* DERIVED: marketed 48 GB = 49152MiB of GDDR6, less 12MiB as the 24 GiB Ampere/Ada boards report
        (RTX 4090 / RTX A5000: 24564 of 24576MiB) */
     "DERIVED: 48 GiB (49152MiB) less 12MiB, as 24 GiB boards report 24564MiB", 86, 84, 1536},
    /* ---- NVIDIA consumer ---- */
    {"rtx3060", "NVIDIA GeForce RTX 3060 12GB", "NVIDIA", MIB(12288), 0,
     /* 12288MiB: geerlingguy/raspberry-pi-pcie-devices#790 (driver 580.95.05) */
     "nvidia-smi 12288MiB (github.com/geerlingguy/raspberry-pi-pcie-devices/issues/790)", 86, 28, 1536},
    {"rtx3090", "NVIDIA GeForce RTX 3090 24GB", "NVIDIA", MIB(24576), 0,
     /* 24576MiB: noonghunna/club-3090#390 (driver 580.142) */
     "nvidia-smi 24576MiB (github.com/noonghunna/club-3090/issues/390)", 86, 82, 1536},
    {"rtx4070", "NVIDIA GeForce RTX 4070 12GB", "NVIDIA", MIB(12282), 0,
     /* 12282MiB: Frogging-Family/nvidia-all#212 (driver 550.40.07) */
     "nvidia-smi 12282MiB (github.com/Frogging-Family/nvidia-all/pull/212)", 89, 46, 1536},
    {"rtx4080", "NVIDIA GeForce RTX 4080 16GB", "NVIDIA", MIB(16376), 0,
     /* DERIVED: marketed 16 GB = 16384MiB of GDDR6X, less 8MiB by the Ada pattern (4070: 12288-6,
        4090: 24576-12, i.e. 0.05%) */
     "DERIVED: 16 GiB (16384MiB) less 8MiB by the Ada pattern (4070 12282, 4090 24564)", 89, 76, 1536},
    {"rtx4090", "NVIDIA GeForce RTX 4090 24GB", "NVIDIA", MIB(24564), 0,
     /* 24564MiB: RLinf/RLinf#255 (driver 550.163.01) */
     "nvidia-smi 24564MiB (github.com/RLinf/RLinf/issues/255)", 89, 128, 1536},
    {"rtx5070", "NVIDIA GeForce RTX 5070 12GB", "NVIDIA", MIB(12227), 1,
     /* 12227MiB: `nvidia-smi -q` FB Memory Total, driver 575.64.03, shkhln/libc6-shim#14 */
     "nvidia-smi 12227MiB (github.com/shkhln/libc6-shim/issues/14)", 120, 48, 1536},
    {"rtx5090", "NVIDIA GeForce RTX 5090 32GB", "NVIDIA", MIB(32607), 1,
     /* 32607MiB: noonghunna/club-3090#741 (driver 580.119.02) */
     "nvidia-smi 32607MiB (github.com/noonghunna/club-3090/issues/741)", 120, 170, 1536},
    /* ---- AMD ---- */
    {"mi210", "AMD Instinct MI210 64GB", "AMD", INT64_C(68702699520), 0,
     /* DERIVED: 64 GB HBM2e, the same memory per device as one MI250X GCD; that figure used */
     "DERIVED: same 64 GiB HBM2e as one MI250X GCD, 68702699520 B", 0, 104, 2048},
    {"mi250x", "AMD Instinct MI250X, one GCD (64GB of the card's 128GB)", "AMD", INT64_C(68702699520), 0,
     /* 68702699520 B (64 GiB - 16 MiB) per GCD, as PyTorch sees each of the card's two GCDs: the HIP
        total memory printed by a published Cray ACC runtime log ("Total GPU memory 68702699520") and
        the KFD mem_banks size_in_bytes quoted in ROCm/rocm_smi_lib's source */
     "HIP/KFD 68702699520 B per GCD (64 GiB - 16 MiB; a card is 2 GCDs)", 0, 110, 2048},
    {"mi300x", "AMD Instinct MI300X 192GB", "AMD", INT64_C(206141652992), 0,
     /* rocm-smi "VRAM Total Memory (B): 206141652992" (SPX mode): ROCm/legacy-rocm-build#4750 */
     "rocm-smi 206141652992 B (github.com/ROCm/legacy-rocm-build/issues/4750)", 0, 304, 2048},
};

/* Other spellings people use. */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"h100", "h100-80gb"}, {"h100-sxm", "h100-80gb"}, {"h100-sxm5", "h100-80gb"}, {"h100sxm", "h100-80gb"},
    {"h200-141gb", "h200"}, {"b200-180gb", "b200"}, {"tesla-t4", "t4"}, {"t4-16gb", "t4"},
    {"a6000", "rtx-a6000"}, {"l40s-48gb", "l40s"}, {"l4-24gb", "l4"}, {"a10-24gb", "a10"},
    {"a10g-24gb", "a10g"}, {"mi300x-192gb", "mi300x"}, {"3060", "rtx3060"}, {"3090", "rtx3090"},
    {"4070", "rtx4070"}, {"4080", "rtx4080"}, {"4090", "rtx4090"}, {"5070", "rtx5070"}, {"5090", "rtx5090"},
};

size_t vc_gpu_count(void) { return sizeof gpus / sizeof *gpus; }

const vc_gpu *vc_gpu_get(size_t i) { return i < vc_gpu_count() ? &gpus[i] : NULL; }

/* Lower case, letters and digits only: "RTX 4090" and "rtx-4090" both read "rtx4090". */
static void norm(const char *s, char *out, size_t n)
{
    size_t o = 0;
    for (; *s && o + 1 < n; s++)
        if (isalnum((unsigned char)*s)) out[o++] = (char)tolower((unsigned char)*s);
    out[o] = '\0';
}

const vc_gpu *vc_gpu_find(const char *name)
{
    if (!name || strlen(name) > 64) return NULL;
    char want[80], have[80];
    norm(name, want, sizeof want);
    if (!want[0]) return NULL;
    for (size_t i = 0; i < vc_gpu_count(); i++) {
        norm(gpus[i].name, have, sizeof have);
        if (!strcmp(have, want)) return &gpus[i];
    }
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
        norm(aliases[i].alias, have, sizeof have);
        if (!strcmp(have, want)) return vc_gpu_find(aliases[i].name);
    }
    return NULL;
}

const char *vc_gpu_suggest(const char *name)
{
    if (!name || strlen(name) > 64) return NULL;
    char want[80], have[80];
    norm(name, want, sizeof want);
    if (!want[0]) return NULL;
    const char *best = NULL;
    int bd = 99;
    size_t lw = strlen(want);
    for (size_t i = 0; i < vc_gpu_count() + sizeof aliases / sizeof *aliases; i++) {
        const char *cand = i < vc_gpu_count() ? gpus[i].name : aliases[i - vc_gpu_count()].alias;
        const char *target = i < vc_gpu_count() ? gpus[i].name : aliases[i - vc_gpu_count()].name;
        norm(cand, have, sizeof have);
        int d = vc_edit_distance(want, have);
        /* "a100" is a prefix of "a100-40gb": close, whatever the distance */
        if (lw >= 2 && !strncmp(have, want, lw)) d = d < 2 ? d : 2;
        if (d < bd) {
            bd = d;
            best = target;
        }
    }
    return bd <= (lw < 5 ? 2 : lw < 9 ? 3 : 4) ? best : NULL;
}

/* A decimal number "123", "1.5", ".5": *mant = digits as an integer, *scale =
 * digits after the point. Returns the end, or NULL when there is no number
 * or it has more than 18 significant digits. */
static const char *decimal(const char *s, int64_t *mant, int *scale)
{
    int64_t m = 0;
    int digits = 0, sc = 0;
    bool point = false, any = false;
    for (;; s++) {
        if (*s == '.' && !point) {
            point = true;
            continue;
        }
        if (*s < '0' || *s > '9') break;
        any = true;
        if (m == 0 && *s == '0') {
            if (point) sc++;
            continue;
        }
        if (++digits > 18) return NULL;
        m = m * 10 + (*s - '0');
        if (point) sc++;
    }
    if (!any) return NULL;
    *mant = m;
    *scale = sc;
    return s;
}

/* 10^n for the scale of a decimal (digits after the point, leading zeros
 * included: "0.00123456789012345678" has 20). Callers keep n <= MAX_SCALE,
 * where 10^n still fits 128 bits (10^38 < 2^127). */
#define MAX_SCALE 36
static i128 pow10i(int n)
{
    i128 p = 1;
    while (n-- > 0) p *= 10;
    return p;
}

vc_status vc_parse_size(const char *s, int64_t *bytes, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    static const struct {
        const char *u;
        int64_t m;
    } units[] = {
        {"", 1}, {"B", 1}, {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000}, {"TB", INT64_C(1000000000000)},
        {"KiB", INT64_C(1) << 10}, {"MiB", INT64_C(1) << 20}, {"GiB", INT64_C(1) << 30}, {"TiB", INT64_C(1) << 40},
    };
    if (!s) return vc_set_error(err, VC_ERR_USAGE, NULL, "expected a size such as 24GiB");
    int64_t mant;
    int scale;
    const char *end = decimal(s, &mant, &scale);
    if (!end) {
        /* a well-formed number past decimal()'s 18 significant digits: over the limit, not malformed (issue 29) */
        int sig = 0;
        const char *q = s;
        for (; (*q >= '0' && *q <= '9') || *q == '.'; q++)
            if (*q != '.' && (sig || *q != '0')) sig++; /* leading zeros are not significant */
        if (sig > 18)
            return vc_set_error(err, VC_ERR_USAGE, NULL, "'%s' is over the limit: a size has at most 18 significant digits "
                                "(and is at most 2^63 bytes)", s);
        return vc_set_error(err, VC_ERR_USAGE, NULL, "expected a size such as 24GiB, 80GB or 24000MiB, got '%s'", s);
    }
    if (*end == ' ') end++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        /* as written (GiB) or all lower case (gib); not "Gb" (gigabits) */
        char lower[8];
        size_t k = 0;
        for (; units[i].u[k]; k++) lower[k] = (char)tolower((unsigned char)units[i].u[k]);
        lower[k] = '\0';
        if (strcmp(end, units[i].u) && strcmp(end, lower)) continue;
        /* exact: mant * unit / 10^scale, rounded to the nearest byte; past
         * MAX_SCALE the value is below 10^18 * 2^40 / 10^36 < 1/2: 0 bytes */
        i128 v = (i128)mant * units[i].m;
        if (scale > MAX_SCALE) {
            v = 0;
        } else {
            i128 p = pow10i(scale);
            v = (v + p / 2) / p;
        }
        if (v > INT64_MAX) return vc_set_error(err, VC_ERR_OVERFLOW, NULL, "'%s' is larger than 2^63 bytes", s);
        *bytes = (int64_t)v;
        return VC_OK;
    }
    return vc_set_error(err, VC_ERR_USAGE, NULL,
                        "unknown unit in '%s' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s);
}

vc_status vc_gpu_parse(const char *spec, vc_gpu_spec *out, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    memset(out, 0, sizeof *out);
    out->percent = 100;
    if (!spec || !*spec) return vc_set_error(err, VC_ERR_USAGE, NULL, "expected a GPU preset (see " O("list_gpus") ") or a size such as 24GiB");
    if (strlen(spec) >= sizeof out->name)
        return vc_set_error(err, VC_ERR_USAGE, NULL, "'%.40s...' is not a GPU preset or a size", spec);
    char base[sizeof out->name];
    snprintf(base, sizeof base, "%s", spec);
    char *colon = strrchr(base, ':');
    int64_t pm = 100;
    int ps = 0;
    if (colon) {
        *colon = '\0';
        const char *pct = colon + 1;
        const char *e = decimal(pct, &pm, &ps);
        if (!e || strcmp(e, "%") || strchr(base, ':'))
            return vc_set_error(err, VC_ERR_USAGE, NULL, "'%s': expected a percentage after ':', such as %s:90%%", spec,
                                strchr(base, ':') ? "rtx4090" : base);
        /* 0 < pm / 10^ps <= 100 (a percentage below 10^-34 counts as 0) */
        if (pm == 0 || ps > MAX_SCALE || (i128)pm > (i128)100 * pow10i(ps))
            return vc_set_error(err, VC_ERR_USAGE, NULL, "'%s': the percentage must be above 0 and at most 100", spec);
        out->percent = (double)pm / (double)pow10i(ps);
    }
    const vc_gpu *g = vc_gpu_find(base);
    if (g) {
        out->preset = g;
        out->total = g->capacity;
        snprintf(out->name, sizeof out->name, "%s%s%s", g->name, colon ? ":" : "", colon ? colon + 1 : "");
    } else if ((base[0] >= '0' && base[0] <= '9') || base[0] == '.') {
        vc_error e2;
        memset(&e2, 0, sizeof e2);
        if (vc_parse_size(base, &out->total, &e2)) {
            if (err && err->code == VC_OK) {
                *err = e2;
            }
            return e2.code;
        }
        if (out->total <= 0) return vc_set_error(err, VC_ERR_USAGE, NULL, "'%s': a GPU needs a positive size", spec);
        /* the capacity the fit check uses must not round down to nothing */
        if ((i128)out->total * pm / ((i128)100 * pow10i(ps)) <= 0)
            return vc_set_error(err, VC_ERR_USAGE, NULL, "'%s': that percentage of the size is less than a byte", spec);
        snprintf(out->name, sizeof out->name, "%s", spec);
    } else {
        /* "a100": every preset it begins, else the nearest name */
        char want[80], have[80], list[200] = "";
        norm(base, want, sizeof want);
        int np = 0;
        for (size_t i = 0; i < vc_gpu_count() && want[0]; i++) {
            norm(gpus[i].name, have, sizeof have);
            if (strncmp(have, want, strlen(want))) continue;
            size_t u = strlen(list);
            snprintf(list + u, sizeof list - u, "%s'%s'", np ? " or " : "", gpus[i].name);
            if (++np == 3) break;
        }
        if (np) return vc_set_error(err, VC_ERR_USAGE, NULL, "unknown GPU '%s' (did you mean %s? see " O("list_gpus") ")", base, list);
        const char *s = vc_gpu_suggest(base);
        if (s) return vc_set_error(err, VC_ERR_USAGE, NULL, "unknown GPU '%s' (did you mean '%s'? see " O("list_gpus") ")", base, s);
        return vc_set_error(err, VC_ERR_USAGE, NULL, "unknown GPU '%s' (see " O("list_gpus") ", or give a size such as 24GiB)", base);
    }
    out->capacity = (int64_t)((i128)out->total * pm / (100 * pow10i(ps)));
    return VC_OK;
}
