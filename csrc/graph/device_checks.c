/* Device-side checks: the switch, the source-line hook, and the error words
 * of launches not yet read (graph/device_checks.h). */
#include "graph/device_checks.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"

static _Atomic int override = -1;
static char *(*_Atomic source_hook)(void);

bool tt_device_checks_enabled(void) {
  int o = atomic_load(&override);
  if (o >= 0) return o != 0;
  return tt_setting_bool_or_default(TT_SETTING_DEVICE_CHECKS);
}

void tt_device_checks_set_enabled(int on) { atomic_store(&override, on < 0 ? -1 : on != 0); }

void tt_set_source_line_hook(char *(*hook)(void)) { atomic_store(&source_hook, hook); }

char *tt_device_checks_source_line(void) {
  char *(*hook)(void) = atomic_load(&source_hook);
  return hook ? hook() : NULL;
}

/* A watched launch: its word and, per check, the text of its exception. */
typedef struct {
  tt_buffer *word;
  int n;
  tt_error_code *codes;
  char **texts;
} watched;

/* Beyond this many unread words, a watch reads those already computed (a
 * failure among them waits for the next poll). */
#define MAX_PENDING 64

/* The pending words, under a lock held only to add or take entries: the
 * reads (which may wait for the device) run outside it, so a thread that
 * launches never waits for another thread's read. */
static struct {
  pthread_mutex_t lock;
  watched *w;
  int n, cap;
  tt_error *deferred; /* a failure read early, raised at the next poll */
} P = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void watched_free(watched *w) {
  tt_buffer_release(w->word);
  for (int i = 0; i < w->n; i++) free(w->texts[i]);
  free(w->texts);
  free(w->codes);
}

/* "op: message (device-side check; the op was recorded at file:line in f)",
 * the message's placeholders left for the read. */
static char *format_site(const tt_check_site *s) {
  const char *msg = s->def && s->def->message ? s->def->message : "device-side check failed";
  size_t len = strlen(s->op_name) + strlen(msg) + (s->source ? strlen(s->source) : 0) + 128;
  char *t = malloc(len);
  if (!t) return NULL;
  if (s->source && strncmp(s->source, "in ", 3) == 0) /* autograd's backward: names the forward op */
    snprintf(t, len, "%s: %s (device-side check; %s)", s->op_name, msg, s->source);
  else if (s->source)
    snprintf(t, len, "%s: %s (device-side check; the op was recorded at %s)", s->op_name, msg,
             s->source);
  else
    snprintf(t, len, "%s: %s (device-side check)", s->op_name, msg);
  return t;
}

/* Reads w's word; the error it reports, or NULL. Frees w's contents. */
static tt_error *read_word(watched *w) {
  int64_t raw[3];
  size_t nbytes = tt_buffer_nbytes(w->word);
  tt_error *err = NULL;
  tt_check_word cw;
  if (nbytes > sizeof raw) {
    err = tt_error_new(TT_ERR_RUNTIME, "internal: a device-check word of %zu bytes", nbytes);
  } else {
    err = tt_buffer_to_host(w->word, raw, nbytes);
    if (!err && !tt_check_word_decode(raw, nbytes, &cw))
      err = tt_error_new(TT_ERR_RUNTIME, "internal: a device-check word of %zu bytes", nbytes);
  }
  if (!err && cw.check != TT_CHECK_WORD_OK) {
    if (cw.check >= 0 && cw.check < w->n) {
      char *text = tt_check_text_fill(w->texts[cw.check], &cw);
      err = tt_error_new(w->codes[cw.check], "%s", text ? text : "device-side check failed");
      free(text);
    } else {
      err = tt_error_new(TT_ERR_RUNTIME, "device-side check %" PRId64 " failed", cw.check);
    }
  }
  watched_free(w);
  return err;
}

static void keep_first(tt_error **first, tt_error *e) {
  if (!e) return;
  if (*first) tt_error_free(e);
  else *first = e;
}

void tt_device_checks_watch(tt_buffer *word, const tt_check_site *sites, int n_sites) {
  watched w = {word, n_sites, calloc((size_t)(n_sites ? n_sites : 1), sizeof(tt_error_code)),
               calloc((size_t)(n_sites ? n_sites : 1), sizeof(char *))};
  if (w.codes && w.texts)
    for (int i = 0; i < n_sites; i++) {
      w.codes[i] = sites[i].def ? sites[i].def->code : TT_ERR_RUNTIME;
      w.texts[i] = format_site(&sites[i]);
    }
  watched done[MAX_PENDING];
  int n_done = 0;
  pthread_mutex_lock(&P.lock);
  if (P.n >= MAX_PENDING) { /* take the words already computed; never wait here */
    int keep = 0;
    for (int i = 0; i < P.n; i++) {
      if (n_done < MAX_PENDING && tt_buffer_is_ready(P.w[i].word)) done[n_done++] = P.w[i];
      else P.w[keep++] = P.w[i];
    }
    P.n = keep;
  }
  if (P.n == P.cap) {
    int cap = P.cap ? 2 * P.cap : 16;
    watched *nw = realloc(P.w, sizeof *nw * (size_t)cap);
    if (nw) {
      P.w = nw;
      P.cap = cap;
    }
  }
  bool kept = P.n < P.cap && w.codes && w.texts;
  if (kept) P.w[P.n++] = w;
  pthread_mutex_unlock(&P.lock);
  if (!kept) watched_free(&w); /* host OOM: the check is lost, not the program */
  if (!n_done) return;
  tt_error *first = NULL;
  for (int i = 0; i < n_done; i++) keep_first(&first, read_word(&done[i]));
  if (!first) return;
  pthread_mutex_lock(&P.lock);
  keep_first(&P.deferred, first);
  pthread_mutex_unlock(&P.lock);
}

tt_error *tt_device_checks_poll(void) {
  pthread_mutex_lock(&P.lock);
  if (P.n == 0 && !P.deferred) {
    pthread_mutex_unlock(&P.lock);
    return NULL;
  }
  tt_error *first = P.deferred;
  P.deferred = NULL;
  watched *taken = P.w;
  int n = P.n;
  P.w = NULL;
  P.n = P.cap = 0;
  pthread_mutex_unlock(&P.lock);
  for (int i = 0; i < n; i++) keep_first(&first, read_word(&taken[i])); /* waits, unlocked */
  free(taken);
  return first;
}

int tt_device_checks_pending(void) {
  pthread_mutex_lock(&P.lock);
  int n = P.n;
  pthread_mutex_unlock(&P.lock);
  return n;
}

tt_check_site *tt_check_sites_copy(const tt_check_site *sites, int n) {
  if (n <= 0) return NULL;
  tt_check_site *c = calloc((size_t)n, sizeof *c);
  tt_check_def *defs = calloc((size_t)n, sizeof *defs);
  if (!c || !defs) {
    free(c);
    free(defs);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    defs[i].code = sites[i].def ? sites[i].def->code : TT_ERR_RUNTIME;
    defs[i].message = sites[i].def && sites[i].def->message ? strdup(sites[i].def->message) : NULL;
    c[i].def = &defs[i];
    c[i].op_name = strdup(sites[i].op_name ? sites[i].op_name : "?");
    c[i].source = sites[i].source ? strdup(sites[i].source) : NULL;
  }
  return c;
}

void tt_check_sites_free(tt_check_site *sites, int n) {
  if (!sites) return;
  for (int i = 0; i < n; i++) {
    free(sites[i].def->message);
    free((char *)sites[i].op_name);
    free((char *)sites[i].source);
  }
  free((tt_check_def *)sites[0].def); /* the defs array */
  free(sites);
}
