/* Device-side checks: the switch, the source-line hook, and the error words
 * of launches not yet read (graph/device_checks.h). */
#include "graph/device_checks.h"

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

/* Beyond this many unread words the oldest are read at the next watch (long
 * done by then); a failure among them waits for the next poll. */
#define MAX_PENDING 64

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

static char *format_site(const tt_check_site *s) {
  const char *msg = s->def && s->def->message ? s->def->message : "device-side check failed";
  size_t len = strlen(s->op_name) + strlen(msg) + (s->source ? strlen(s->source) : 0) + 128;
  char *t = malloc(len);
  if (!t) return NULL;
  if (s->source)
    snprintf(t, len, "%s: %s (device-side check; the op was recorded at %s)", s->op_name, msg,
             s->source);
  else
    snprintf(t, len, "%s: %s (device-side check)", s->op_name, msg);
  return t;
}

/* Reads w's word; the error it reports, or NULL. Frees w's contents. */
static tt_error *read_word(watched *w) {
  int32_t v = TT_CHECK_WORD_OK;
  tt_error *err = tt_buffer_to_host(w->word, &v, sizeof v);
  if (!err && v != TT_CHECK_WORD_OK) {
    if (v >= 0 && v < w->n)
      err = tt_error_new(w->codes[v], "%s", w->texts[v] ? w->texts[v] : "device-side check failed");
    else
      err = tt_error_new(TT_ERR_RUNTIME, "device-side check %d failed", (int)v);
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
  pthread_mutex_lock(&P.lock);
  if (P.n >= MAX_PENDING) { /* read the oldest half */
    int k = P.n / 2;
    for (int i = 0; i < k; i++) keep_first(&P.deferred, read_word(&P.w[i]));
    memmove(P.w, P.w + k, sizeof *P.w * (size_t)(P.n - k));
    P.n -= k;
  }
  if (P.n == P.cap) {
    int cap = P.cap ? 2 * P.cap : 16;
    watched *nw = realloc(P.w, sizeof *nw * (size_t)cap);
    if (nw) {
      P.w = nw;
      P.cap = cap;
    }
  }
  if (P.n < P.cap && w.codes && w.texts) P.w[P.n++] = w;
  else watched_free(&w); /* host OOM: the check is lost, not the program */
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
  for (int i = 0; i < P.n; i++) keep_first(&first, read_word(&P.w[i]));
  P.n = 0;
  pthread_mutex_unlock(&P.lock);
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
