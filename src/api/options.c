/*
 * options.c — the option table (options.def) as the public vc_option_info
 * rows, the lookups by name, the suggestion for a misspelt option, and the
 * spelling of the option marks in a request's messages for a front end.
 */
#include <string.h>

#include "vramcalc/vramcalc.h"
#include "util.h"
#include "api.h"

#define VC_OPTION(id, name, flag, letter, arg, type, section, applies, def, choices, help) \
    {name, flag, letter, arg, type, section, applies, def, choices, help},
static const vc_option_info table[] = {
#include "options.def"
};
#undef VC_OPTION
_Static_assert(sizeof table / sizeof *table == VC_OPT__N, "options.def and vc_option_id differ");

size_t vc_option_count(void) { return sizeof table / sizeof *table; }

const vc_option_info *vc_option_at(size_t i) { return i < vc_option_count() ? &table[i] : NULL; }

const vc_option_info *vc_option_find(const char *name)
{
    for (size_t i = 0; name && i < vc_option_count(); i++)
        if (!strcmp(table[i].name, name)) return &table[i];
    return NULL;
}

const vc_option_info *vc_option_find_flag(const char *flag)
{
    for (size_t i = 0; flag && i < vc_option_count(); i++)
        if (!strcmp(table[i].flag, flag)) return &table[i];
    return NULL;
}

/* The sections' titles, once: marked (the library's words) and as the CLI
 * writes them (vc_option_section_title, a pointer to keep). CLI_OV spells a
 * mark as vc__spell_marks does where the table name is the flag ("mode"). */
#define CLI_OV(name, value) "--" name " " value
#define SECTION_TITLES(OV)                                          \
    {                                                               \
        [VC_SECTION_MODEL] = "the model and the step",              \
        [VC_SECTION_TRAINING] = "training",                         \
        [VC_SECTION_FINETUNE] = "fine-tuning and quantized weights", \
        [VC_SECTION_PARALLEL] = "more than one GPU",                \
        [VC_SECTION_GENERATE] = "generation (" OV("mode", "generate") ")", \
        [VC_SECTION_SERVE] = "serving (vLLM)",                      \
        [VC_SECTION_GPU] = "the GPU, searches and sweeps",          \
        [VC_SECTION_OUTPUT] = "output",                             \
        [VC_SECTION_COUNTS] = "counts only (no model)",             \
        [VC_SECTION_INFO] = "information",                          \
    }
static const char *const section_title[VC_SECTION__N] = SECTION_TITLES(OV);
static const char *const section_title_cli[VC_SECTION__N] = SECTION_TITLES(CLI_OV);
#undef SECTION_TITLES
#undef CLI_OV

const char *vc_option_section_title(vc_option_section s)
{
    return (unsigned)s < VC_SECTION__N ? section_title_cli[s] : "";
}

size_t vc_option_section_title_for(vc_option_section s, vc_spelling how, char *buf, size_t n)
{
    if (!n) return 0;
    vc__spell_marks((unsigned)s < VC_SECTION__N ? section_title[s] : "", how, buf, n);
    return strlen(buf);
}

const vc_option_info *vc_option_suggest(const char *name, vc_spelling how)
{
    if (!name) return NULL;
    char key[80];
    if (how == VC_SPELL_CLI) {
        while (*name == '-') name++; /* "--bach" */
        size_t n = strcspn(name, "="); /* "--bach=4" */
        if (n >= sizeof key) return NULL;
        memcpy(key, name, n);
        key[n] = '\0';
    } else {
        if (strlen(name) >= sizeof key) return NULL;
        strcpy(key, name);
    }
    const vc_option_info *best = NULL;
    int best_d = 3;
    for (size_t i = 0; i < vc_option_count(); i++) {
        const vc_option_info *o = &table[i];
        if (!o->help || (how == VC_SPELL_PYTHON && (o->applies & VC_APPLIES_FRONT_END))) continue; /* aliases, the CLI's own */
        int d = vc_edit_distance(key, how == VC_SPELL_CLI ? o->flag : o->name);
        if (d < best_d && d * 3 <= (int)strlen(key)) { /* a short word: at most a third of it changed ("--xp" suggests nothing) */
            best = o;
            best_d = d;
        }
    }
    return best;
}

size_t vc_option_help_for(const vc_option_info *o, vc_spelling how, char *buf, size_t cap)
{
    char text[4096]; /* the row's text, "{}" replaced, its option marks spelt below */
    size_t k = 0;
    if (!cap) return 0;
    for (const char *p = o && o->help ? o->help : ""; *p && k + 1 < sizeof text; p++) {
        if (p[0] == '{' && p[1] == '}' && o->choices) {
            size_t n = strlen(o->choices);
            if (n > sizeof text - 1 - k) n = sizeof text - 1 - k;
            memcpy(text + k, o->choices, n);
            k += n;
            p++;
        } else text[k++] = *p;
    }
    text[k] = '\0';
    vc__spell_marks(text, how, buf, cap);
    return strlen(buf);
}

size_t vc_option_help(const vc_option_info *o, char *buf, size_t cap) { return vc_option_help_for(o, VC_SPELL_CLI, buf, cap); }

/* "\x1fmax_batch\x1f" -> "--max-batch" or "max_batch="; "\x1fmode=generate\x1f"
 * -> "--mode generate" or "mode=generate"; "\x1f-precision=fp32\x1f" (the
 * short form) -> "-p fp32" or "precision=fp32". Text outside the marks is
 * copied. */
void vc__spell_marks(const char *in, vc_spelling how, char *out, size_t cap)
{
    size_t k = 0;
    if (!cap) return;
#define PUT(c)                          \
    do {                                \
        if (k + 1 < cap) out[k++] = (c); \
    } while (0)
    for (const char *p = in; *p; p++) {
        const char *end;
        if (*p != VC_OPTION_MARK || !(end = strchr(p + 1, VC_OPTION_MARK))) {
            PUT(*p);
            continue;
        }
        char name[80];
        bool shrt = p[1] == '-'; /* OS(): the CLI's short form */
        const char *start = p + 1 + shrt;
        size_t n = strcspn(start, "=\x1f");
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, start, n);
        name[n] = '\0';
        const char *value = start[n] == '=' ? start + 1 + n : NULL;
        const vc_option_info *o = vc_option_find(name);
        if (how == VC_SPELL_CLI && shrt && o && o->letter) {
            PUT('-');
            PUT(o->letter);
            if (value) PUT(' ');
        } else if (how == VC_SPELL_CLI) {
            PUT('-');
            PUT('-');
            for (const char *f = o ? o->flag : name; *f; f++) PUT(*f);
            if (value) PUT(' ');
        } else {
            for (const char *f = name; *f; f++) PUT(*f);
            PUT('=');
        }
        for (const char *v = value; v && v < end; v++) PUT(*v);
        p = end;
    }
#undef PUT
    out[k] = '\0';
}

vc_status vc__usage_long(vc_error *err, const char *text)
{
    memset(err, 0, sizeof *err);
    err->code = VC_ERR_USAGE;
    size_t n = strlen(text), cut = n < sizeof err->msg ? n : sizeof err->msg - 1;
    while (cut < n && cut && ((unsigned char)text[cut] & 0xc0) == 0x80) cut--; /* at a character's start */
    memcpy(err->msg, text, cut);
    err->msg[cut] = '\0';
    if (cut < n) {
        snprintf(err->path, sizeof err->path, "%s", text + cut);
        err->line = -1;
    }
    return VC_ERR_USAGE;
}

void vc_error_format_for(const vc_error *err, vc_spelling how, char *buf, size_t n)
{
    if (err->line == -1 && !err->file[0]) { /* a long message: msg, then path (vc__usage_long) */
        char joined[sizeof err->msg + sizeof err->path], spelt[sizeof joined];
        snprintf(joined, sizeof joined, "%s%s", err->msg, err->path);
        vc__spell_marks(joined, how, spelt, sizeof spelt);
        vc_escape_text(buf, n, spelt);
        return;
    }
    vc_error e = *err;
    vc__spell_marks(err->msg, how, e.msg, sizeof e.msg);
    vc__spell_marks(err->path, how, e.path, sizeof e.path); /* an option's error: O("sp") */
    vc__error_format_plain(&e, buf, n);
}
