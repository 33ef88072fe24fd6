/*
 * vramcalc_web.c — the page's calls into the library (issue 30), compiled to
 * WebAssembly (web/CMakeLists.txt): one more thin front end over the public
 * request API of include/vramcalc/vramcalc.h, as src/cli/main.c is. Every
 * rule, default and message is the library's; this file only moves text
 * between JavaScript and a request:
 *   vcw_options()  the option table (vc_option_at) as JSON, for the form and
 *                  the "copy as CLI command" spelling (--flag)
 *   vcw_suggest()  the nearest option to a misspelt one (vc_option_suggest)
 *   vcw_run()      options (table names and values, in order) and a model
 *                  file in emscripten's in-memory file system -> the
 *                  response as the CLI's table and JSON texts, the SVG of
 *                  --plot, the CLI's exit status; or the CLI's error line
 * The results are JSON texts the caller frees with free().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "vramcalc/vramcalc.h"

#define EXIT_USAGE 2

static const char *type_name(vc_option_type t)
{
    switch (t) {
    case VC_OPTION_COUNT: return "count";
    case VC_OPTION_REAL: return "real";
    case VC_OPTION_SIZE: return "size";
    case VC_OPTION_CHOICE: return "choice";
    case VC_OPTION_STRING: return "string";
    case VC_OPTION_FLAG: return "flag";
    case VC_OPTION_SHAPE: return "shape";
    case VC_OPTION_LIST: return "list";
    }
    return "";
}

static char *print_free(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

const char *vcw_version(void) { return VC_VERSION; }

/* [{name, flag, letter, arg, type, section, applies, default, choices, help}] */
char *vcw_options(void)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < vc_option_count(); i++) {
        const vc_option_info *o = vc_option_at(i);
        char help[2048] = "";
        if (o->help) vc_option_help(o, help, sizeof help);
        char letter[2] = {o->letter, 0};
        cJSON *r = cJSON_CreateObject();
        if (!r || !cJSON_AddItemToArray(a, r)) {
            cJSON_Delete(r);
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddStringToObject(r, "name", o->name);
        cJSON_AddStringToObject(r, "flag", o->flag);
        cJSON_AddStringToObject(r, "letter", letter);
        if (o->arg) cJSON_AddStringToObject(r, "arg", o->arg);
        cJSON_AddStringToObject(r, "type", type_name(o->type));
        cJSON_AddStringToObject(r, "section", vc_option_section_title(o->section));
        cJSON_AddNumberToObject(r, "applies", o->applies);
        cJSON_AddStringToObject(r, "default", o->default_text ? o->default_text : "");
        if (o->choices) cJSON_AddStringToObject(r, "choices", o->choices);
        if (o->help) cJSON_AddStringToObject(r, "help", help);
    }
    return print_free(a);
}

/* The option nearest to a misspelt one, as the CLI suggests it (its flag,
 * without "--"), or NULL. */
const char *vcw_suggest(const char *arg)
{
    const vc_option_info *o = vc_option_suggest(arg, VC_SPELL_CLI);
    return o ? o->flag : NULL;
}

/* The CLI's error line (src/cli/parse.c, die_err): the message with its
 * options spelt --like-this, escaped, after "vramcalc: ". */
static char *error_result(const vc_error *err, const char *plain)
{
    char msg[sizeof err->file + sizeof err->path + sizeof err->msg + 64], safe[4 * sizeof msg + 16], line[sizeof safe + 16];
    if (err) vc_error_format_for(err, VC_SPELL_CLI, msg, sizeof msg);
    else snprintf(msg, sizeof msg, "%s", plain);
    vc_escape_text(safe, sizeof safe, msg);
    snprintf(line, sizeof line, "vramcalc: %s", safe);
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddFalseToObject(o, "ok");
    cJSON_AddNumberToObject(o, "status", EXIT_USAGE);
    cJSON_AddStringToObject(o, "error", line);
    return print_free(o);
}

/* A render of the response into o[key]; on a failure the error result. */
static char *add_render(cJSON *o, const char *key, const vc_response *resp, vc_format f, int width)
{
    vc_render_options ro = {width, 0, 0}; /* as the CLI prints into a pipe: ASCII, no colour */
    vc_error err;
    memset(&err, 0, sizeof err);
    char *text = NULL;
    size_t n = 0;
    if (vc_response_render(resp, f, &ro, &text, &n, &err)) return error_result(&err, NULL);
    cJSON_AddStringToObject(o, key, text);
    vc_text_free(text);
    return NULL;
}

/* settings: a JSON array of [name, value] pairs (value a string, or null
 * for a flag), set in order as the CLI sets its arguments; model: a path
 * in the module's file system (NULL or "": none, as with --params); width:
 * the table's columns (0: 80). Returns {"ok": true, "status": 0|1,
 * "table": ..., "json": ..., "svg": ...|absent} or {"ok": false,
 * "status": 2, "error": "vramcalc: ..."}. */
char *vcw_run(const char *settings, const char *model, int width)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    cJSON *pairs = cJSON_Parse(settings ? settings : "[]");
    if (!cJSON_IsArray(pairs)) {
        cJSON_Delete(pairs);
        return error_result(NULL, "the page's settings are not a JSON array of [name, value] pairs");
    }
    vc_request *q = vc_request_new();
    if (!q) {
        cJSON_Delete(pairs);
        return error_result(NULL, "out of memory");
    }
    char *out = NULL;
    vc_response *resp = NULL;
    const cJSON *p;
    cJSON_ArrayForEach(p, pairs)
    {
        const cJSON *name = cJSON_GetArrayItem(p, 0), *value = cJSON_GetArrayItem(p, 1);
        if (!cJSON_IsString(name) || (value && !cJSON_IsString(value) && !cJSON_IsNull(value))) {
            out = error_result(NULL, "the page's settings are not a JSON array of [name, value] pairs");
            goto done;
        }
        if (vc_request_set(q, name->valuestring, cJSON_IsString(value) ? value->valuestring : NULL, &err)) {
            out = error_result(&err, NULL);
            goto done;
        }
    }
    if (model && *model && vc_request_add_model(q, model, &err)) {
        out = error_result(&err, NULL);
        goto done;
    }
    if (vc_request_run(q, &resp, &err)) {
        out = error_result(&err, NULL);
        goto done;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        out = error_result(NULL, "out of memory");
        goto done;
    }
    cJSON_AddTrueToObject(o, "ok");
    cJSON_AddNumberToObject(o, "status", vc_response_status(resp));
    if ((out = add_render(o, "table", resp, VC_FORMAT_TABLE, width)) ||
        (out = add_render(o, "json", resp, VC_FORMAT_JSON, width))) {
        cJSON_Delete(o);
        goto done;
    }
    if (vc_response_plot_path(resp)) {
        char *svg;
        size_t n;
        if (vc_response_plot_svg(resp, &svg, &n, &err)) {
            cJSON_Delete(o);
            out = error_result(&err, NULL);
            goto done;
        }
        cJSON_AddStringToObject(o, "svg", svg);
        vc_text_free(svg);
    }
    out = print_free(o);
done:
    vc_response_free(resp);
    vc_request_free(q);
    cJSON_Delete(pairs);
    return out;
}
