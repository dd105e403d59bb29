/* A small JSON reader for the runner: signature.json and safetensors
 * headers. Parses a whole document into a tree of nodes; strings are
 * unescaped (\uXXXX to UTF-8). Numbers keep their text's integer value when
 * they have no fraction or exponent. */
#ifndef TT_RUNNER_JSON_H
#define TT_RUNNER_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum { TTJ_NULL, TTJ_BOOL, TTJ_NUMBER, TTJ_STRING, TTJ_ARRAY, TTJ_OBJECT } ttj_kind;

typedef struct ttj_node {
  ttj_kind kind;
  bool boolean;
  bool is_int;
  int64_t integer;
  double number;
  char *string;           /* STRING; also the key of an object's member */
  char *key;              /* set on members of an object */
  struct ttj_node *items; /* ARRAY elements or OBJECT members */
  int n_items;
} ttj_node;

/* Parses text[0..len); on error the message names the byte offset and
 * `what` (the file). *out is the caller's (ttj_free). */
tt_error *ttj_parse(const char *text, size_t len, const char *what, ttj_node **out);
void ttj_free(ttj_node *n);

/* The member `key` of an object, or NULL (also when n is not an object). */
const ttj_node *ttj_get(const ttj_node *n, const char *key);
/* Element i of an array, or NULL. */
const ttj_node *ttj_at(const ttj_node *n, int i);
/* n's string, or NULL when n is not a string. */
const char *ttj_str(const ttj_node *n);
/* Whether n is an integer; its value in *v. */
bool ttj_int(const ttj_node *n, int64_t *v);

#endif
