/*
 * recipe.h — --recipe NAME: a library's training config as a row of
 * (option, value) pairs, applied by the request layer (src/api/request.c)
 * as defaults: an option the user gives wins over the recipe's, in any
 * order on the command line. Each row names the config file it mirrors at a
 * pinned commit and the settings of that file vramcalc does not apply.
 */
#ifndef VC_RECIPE_H
#define VC_RECIPE_H

#include <stddef.h>

#define VC_RECIPE_MAX_SET 16 /* (option, value) pairs in one recipe */

typedef struct {
    const char *option; /* the option table's name (options.def), e.g. "lora_alpha" */
    const char *value;  /* as vc_request_set takes it; a flag: "true" */
    const char *needs;  /* NULL, or an option of an earlier pair: this one applies only where that one did
                         * (loss_chunks with the recipe's loss: a --loss given leaves both out) */
    int trl;            /* 0, or 1 + a vc_trl_what (release.h): the value is the --trl release's row (value
                         * unused), the pair left out where the row has none */
} vc_recipe_pair;

typedef struct {
    const char *name;        /* "torchtune:llama3_1/8B_lora_single_device" */
    const char *source;      /* the config file: repository@commit path (a trl: row's commit is the --trl release's tag) */
    const char *model;       /* the model the config trains (its checkpoint) */
    const char *not_applied; /* the config's settings vramcalc does not apply, in words */
    vc_recipe_pair set[VC_RECIPE_MAX_SET]; /* ended by {NULL, NULL} */
    int trl_step;            /* 0, or 1 + a vc_trl_what whose why, at the --trl release, refuses the row */
} vc_recipe_row;

size_t vc__recipe_count(void);
const vc_recipe_row *vc__recipe_at(size_t i);
/* The row named name, or NULL. */
const vc_recipe_row *vc__recipe_find(const char *name);
/* The pairs of row r (up to VC_RECIPE_MAX_SET). */
size_t vc__recipe_npairs(const vc_recipe_row *r);
/* Whether row r follows the --trl release (a pair or its step reads the TRL table). */
int vc__recipe_follows_trl(const vc_recipe_row *r);
/* The value pair p sets at TRL release trl (0: the newest tabled), NULL where it sets none at that release;
 * *why (why may be NULL) not NULL where that release's value is not modelled (vc_trl_value). */
const char *vc__recipe_value(const vc_recipe_pair *p, int trl, const char **why);
/* "a, b, c": every recipe's name, for the unknown-name message. */
void vc__recipe_names(char *buf, size_t n);

#endif
