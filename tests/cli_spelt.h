/*
 * cli_spelt.h — an error's path and message as the command line prints them:
 * the library names an option between option marks by its table name
 * (O("tp"), OV("mode", "generate"): src/util/util.h), which vc__spell_marks
 * (src/api/options.c) spells --tp, --mode generate for the CLI. The tests
 * that read a library error directly compare the CLI's words.
 */
#ifndef VC_TEST_CLI_SPELT_H
#define VC_TEST_CLI_SPELT_H

#include <stddef.h>

#include "vramcalc/vramcalc.h"
#include "api.h"

static inline const char *cli_spelt(const char *marked, char *buf, size_t n)
{
    vc__spell_marks(marked, VC_SPELL_CLI, buf, n);
    return buf;
}
/* A compound literal: the buffer lives to the end of the enclosing block. */
#define CLI_PATH(e) cli_spelt((e)->path, (char[sizeof(e)->path]){0}, sizeof(e)->path)
#define CLI_MSG(e) cli_spelt((e)->msg, (char[sizeof(e)->msg]){0}, sizeof(e)->msg)

#endif
