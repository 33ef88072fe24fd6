/*
 * read_file.h — a test's whole-file read (fixtures, examples, READMEs).
 */
#ifndef VC_TEST_READ_FILE_H
#define VC_TEST_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes, NUL-terminated (malloc'd); NULL when it cannot be read. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

#endif
