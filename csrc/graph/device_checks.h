/* Device-side checks (docs/reliability.md): index-taking ops and integer
 * division compute an error flag inside their own program; every program
 * with checks returns one extra output, its error word (core/check_text.h:
 * the number of the first failing check, or TT_CHECK_WORD_OK, with the
 * position and value of its first offending element). The launch hands the
 * word here with the description of its checks; the host reads the words at
 * the next point it waits anyway (a host read, synchronize; in debug mode
 * right after the op) and raises the first failure as the exception
 * PyTorch's CPU kernel raises, with the offending value, naming the op and
 * the user's source line. */
#ifndef TT_GRAPH_DEVICE_CHECKS_H
#define TT_GRAPH_DEVICE_CHECKS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/check_text.h"
#include "core/error.h"
#include "pjrt/runtime.h"

/* One check a lowering made: the exception's code and text (a template
 * naming "{value}" and "{pos}", core/check_text.h). */
typedef struct {
  tt_error_code code;
  char *message;
} tt_check_def;

/* TORCH_TPU_DEVICE_CHECKS, unless overridden (tests): on by default. */
bool tt_device_checks_enabled(void);
/* 1 on, 0 off, -1 back to the setting. Programs are keyed by the switch. */
void tt_device_checks_set_enabled(int on);

/* The user's source line ("file.py:12 in f", malloc'd) at the time an op
 * with checks is recorded, through a hook the boundary registers; NULL
 * without a hook or outside Python. On autograd's backward thread the hook
 * names the forward op instead: "in the backward of aten::embedding,
 * recorded at file.py:12 in f" (a text starting "in "). */
void tt_set_source_line_hook(char *(*hook)(void));
char *tt_device_checks_source_line(void);

/* One check of a launch: the op, its check, the line that recorded it. */
typedef struct {
  const char *op_name;
  const tt_check_def *def;
  const char *source; /* may be NULL */
} tt_check_site;

/* Keeps a launch's error word (takes the buffer; the sites are copied)
 * until the next poll. Beyond a few dozen unread words the ones already
 * computed are read here (never waiting). */
void tt_device_checks_watch(tt_buffer *word, const tt_check_site *sites, int n_sites);
/* Reads every watched word (waiting for its launch, with no lock held) and
 * forgets them; returns the first failure as an error (NULL when none). */
tt_error *tt_device_checks_poll(void);
/* A copy owning its strings (for a replay that outlives the region), and
 * its release. */
tt_check_site *tt_check_sites_copy(const tt_check_site *sites, int n);
void tt_check_sites_free(tt_check_site *sites, int n);
/* Launches whose words are watched and not yet read. */
int tt_device_checks_pending(void);

#endif
