/*
 * resolve.c — what a model argument names (docs/llm.md "Naming a model"):
 *   - a file: read as it is ("-" is standard input);
 *   - a directory: its config.json (a Hugging Face model directory, as
 *     from_pretrained(dir) reads it);
 *   - ORG/NAME, when no such path exists: a Hugging Face id, read from the
 *     local hub cache only, never the network.
 *
 * The cache is where huggingface_hub puts it (src/huggingface_hub/constants.py:
 * HF_HOME = $HF_HOME or $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface;
 * HF_HUB_CACHE = $HF_HUB_CACHE, else the legacy $HUGGINGFACE_HUB_CACHE, else
 * HF_HOME/hub; a leading ~ expanded as expanduser does, $VAR inside a value not
 * expanded here as its expandvars would). A repository
 * is the folder models--ORG--NAME (file_download.py repo_folder_name:
 * "{repo_type}s--" + the id with "/" as "--"), its files under
 * snapshots/<commit>/, refs/main holding main's commit
 * (file_download.py try_to_load_from_cache reads refs/<revision> for the
 * commit, then snapshots/<commit>/<filename>). Here: refs/main's snapshot
 * when it has a config.json, else the only snapshot with one, else the
 * newest by its config.json's mtime (the report names the file read).
 *
 * Also the quantization a directory declares beside its config:
 * hf_quant_config.json (NVIDIA ModelOpt's export, which vLLM's
 * ModelOptFp8Config / ModelOptNvFp4Config read and transformers does not):
 * not modelled, refused naming its quant_algo rather than estimated dense.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "load.h"
#include "util.h"

#define RPATH 4096

static bool is_file(const char *p, struct stat *out)
{
    struct stat st;
    if (stat(p, &st) || S_ISDIR(st.st_mode)) return false;
    if (out) *out = st;
    return true;
}

/* a/b into buf; false when it does not fit */
static bool join(char *buf, size_t n, const char *a, const char *b)
{
    int k = snprintf(buf, n, "%s%s%s", a, a[0] && a[strlen(a) - 1] == '/' ? "" : "/", b);
    return k >= 0 && (size_t)k < n;
}

/* ORG/NAME as the Hub spells ids: two non-empty parts of letters, digits,
 * '-', '_', '.', not starting with '.' or '-' nor holding "..": the
 * validators of huggingface_hub/utils/_validators.py validate_repo_id. */
static bool is_repo_id(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/') || slash == s || !slash[1] || strstr(s, "..") || strstr(s, "--")) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool start = p == s || p == slash + 1;
        if (c == '/') continue;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              (!start && (c == '-' || c == '.'))))
            return false;
    }
    return slash - s <= 96 && strlen(slash + 1) <= 96;
}

/* The hub cache, as huggingface_hub's constants.py computes HF_HUB_CACHE. */
static bool hub_cache(char *buf, size_t n)
{
    const char *v, *home = getenv("HOME");
    char hfhome[RPATH];
    int k;
    if ((v = getenv("HF_HUB_CACHE")) && v[0]) k = snprintf(buf, n, "%s", v);
    else if ((v = getenv("HUGGINGFACE_HUB_CACHE")) && v[0]) k = snprintf(buf, n, "%s", v);
    else {
        if ((v = getenv("HF_HOME")) && v[0]) k = snprintf(hfhome, sizeof hfhome, "%s", v);
        else if ((v = getenv("XDG_CACHE_HOME")) && v[0]) k = snprintf(hfhome, sizeof hfhome, "%s/huggingface", v);
        else k = snprintf(hfhome, sizeof hfhome, "~/.cache/huggingface");
        if (k < 0 || (size_t)k >= sizeof hfhome) return false;
        k = snprintf(buf, n, "%s/hub", hfhome);
    }
    if (k < 0 || (size_t)k >= n) return false;
    if (buf[0] == '~' && (buf[1] == '/' || !buf[1]) && home && home[0]) { /* os.path.expanduser */
        char t[RPATH];
        k = snprintf(t, sizeof t, "%s%s", home, buf + 1);
        if (k < 0 || (size_t)k >= sizeof t || (size_t)k >= n) return false;
        memcpy(buf, t, (size_t)k + 1);
    }
    return true;
}

/* refs/main's commit (a line of hex digits) into rev; false when absent or not one. */
static bool read_ref(const char *repo, char *rev, size_t n)
{
    char p[RPATH];
    if (!join(p, sizeof p, repo, "refs/main")) return false;
    FILE *f = fopen(p, "rb");
    if (!f) return false;
    size_t got = fread(rev, 1, n - 1, f);
    fclose(f);
    rev[got] = '\0';
    while (got && (rev[got - 1] == '\n' || rev[got - 1] == '\r' || rev[got - 1] == ' ')) rev[--got] = '\0';
    if (!got) return false;
    for (size_t i = 0; i < got; i++)
        if (!((rev[i] >= '0' && rev[i] <= '9') || (rev[i] >= 'a' && rev[i] <= 'f'))) return false;
    return true;
}

/* The cached snapshot's config.json of repo (models--ORG--NAME) into out. */
static bool cached_config(const char *repo, char *out, size_t n)
{
    char rev[128], snaps[RPATH], p[RPATH];
    if (!join(snaps, sizeof snaps, repo, "snapshots")) return false;
    if (read_ref(repo, rev, sizeof rev) && join(p, sizeof p, snaps, rev) && join(out, n, p, "config.json") &&
        is_file(out, NULL))
        return true;
    DIR *d = opendir(snaps);
    if (!d) return false;
    bool found = false;
    struct timespec best = {0, 0};
    char bestname[256] = "";
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (e->d_name[0] == '.' || !join(p, sizeof p, snaps, e->d_name) || strlen(e->d_name) >= sizeof bestname) continue;
        char c[RPATH];
        if (!join(c, sizeof c, p, "config.json") || !is_file(c, &st)) continue;
        /* the newest; equal times: the first name in byte order, whatever order readdir gives */
        bool newer = !found || st.st_mtim.tv_sec > best.tv_sec ||
                     (st.st_mtim.tv_sec == best.tv_sec &&
                      (st.st_mtim.tv_nsec > best.tv_nsec ||
                       (st.st_mtim.tv_nsec == best.tv_nsec && strcmp(e->d_name, bestname) < 0)));
        if (newer) {
            found = true;
            best = st.st_mtim;
            snprintf(bestname, sizeof bestname, "%s", e->d_name);
        }
    }
    closedir(d);
    return found && join(p, sizeof p, snaps, bestname) && join(out, n, p, "config.json");
}

vc_status vc__model_resolve(const char *arg, char **out, vc_error *err)
{
    *out = NULL;
    char p[RPATH], e1[512], e2[300];
    if (!arg[0] || !strcmp(arg, "-")) return VC_OK;
    struct stat st;
    if (!stat(arg, &st)) {
        if (!S_ISDIR(st.st_mode)) return VC_OK; /* a file: vc_read_file reads it, or says what it is */
        if (!join(p, sizeof p, arg, "config.json")) return vc_set_error(err, VC_ERR_IO, NULL, "the directory's name is too long");
        if (!is_file(p, NULL))
            return vc_set_error(err, VC_ERR_IO, NULL, "a directory without a config.json: give a model directory "
                                "(a Hugging Face checkpoint's, with its config.json) or a model file");
    } else if (errno == ENOENT && is_repo_id(arg)) {
        char cache[RPATH], repo[RPATH], folder[256];
        if (!hub_cache(cache, sizeof cache))
            return vc_set_error(err, VC_ERR_IO, NULL, "not a file, and the Hugging Face cache's path is too long");
        snprintf(folder, sizeof folder, "models--%s", arg);
        char *slash = strchr(folder + 8, '/');
        memmove(slash + 2, slash + 1, strlen(slash + 1) + 1); /* "/" as "--": is_repo_id bounds the length */
        slash[0] = slash[1] = '-';
        if (!join(repo, sizeof repo, cache, folder) || !cached_config(repo, p, sizeof p)) {
            vc_escape(e1, sizeof e1, repo);
            vc_escape(e2, sizeof e2, arg);
            return vc_set_error(err, VC_ERR_IO, NULL, "no such file, nor in the local Hugging Face cache: fetch the "
                                "config with 'huggingface-cli download %s config.json' (looked for "
                                "snapshots/*/config.json in %s: HF_HUB_CACHE, else HF_HOME/hub, else "
                                "~/.cache/huggingface/hub)",
                                e2, e1);
        }
    } else {
        return VC_OK; /* vc_read_file says why it cannot open it */
    }
    if (!(*out = strdup(p))) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    return VC_OK;
}

vc_status vc__model_side_quant(const char *config_path, vc_error *err)
{
    char p[RPATH], dir[RPATH];
    const char *slash = strrchr(config_path, '/');
    int k = snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - config_path) : 1, slash ? config_path : ".");
    if (k < 0 || (size_t)k >= sizeof dir || !join(p, sizeof p, dir, "hf_quant_config.json") || !is_file(p, NULL))
        return VC_OK;
    char *buf;
    size_t len;
    vc_error e;
    vc_error_clear(&e);
    char q[64] = "";
    if (vc_read_file(p, 1u << 20, &buf, &len, &e) == VC_OK) {
        cJSON *j = cJSON_ParseWithLength(buf, len);
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "quantization"), "quant_algo");
        if (cJSON_IsString(a)) vc_escape(q, sizeof q, a->valuestring);
        cJSON_Delete(j);
        free(buf);
    }
    snprintf(err->file, sizeof err->file, "%s", p);
    return vc_set_error(err, VC_ERR_MODEL, "quantization.quant_algo",
                        "%s%s%sNVIDIA ModelOpt's quantization, which transformers does not load, is not modelled: "
                        "give the config.json itself with " O("weights") " for a format that is (docs/quantization.md)",
                        q[0] ? "\"" : "", q, q[0] ? "\": " : "");
}
