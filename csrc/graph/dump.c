#include "graph/dump.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/settings.h"
#include "graph/hlo_listing.h"

/* Manifest entries, in sequence order; guarded by lock. */
typedef struct {
  int seq;
  double time; /* seconds since the epoch */
  char *kind, *name, *source;
  char *files[5]; /* module, options, key; the optimized HLO and its listing */
  int n_files;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int enabled = -1; /* -1: not read yet */
static char dir[2048];
static entry *entries;
static int n_entries, cap_entries, next_seq;
static _Atomic bool source_pending;
static bool warned;

/* The registry reads the variable once (and again after tt_settings_reset,
 * which tests use to point it elsewhere); a new directory starts a new
 * manifest. */
bool tt_dump_enabled(void) {
  char now[sizeof dir];
  if (!tt_setting_path_or_default(TT_SETTING_DUMP_DIR, now, sizeof now) || !now[0]) {
    atomic_store(&enabled, 0);
    return false;
  }
  pthread_mutex_lock(&lock);
  if (atomic_load(&enabled) <= 0 || strcmp(now, dir) != 0) {
    if (strcmp(now, dir) != 0) {
      for (int i = 0; i < n_entries; i++) {
        free(entries[i].kind);
        free(entries[i].name);
        free(entries[i].source);
        for (int k = 0; k < entries[i].n_files; k++) free(entries[i].files[k]);
      }
      n_entries = 0;
      next_seq = 0;
      warned = false;
    }
    memcpy(dir, now, sizeof dir);
    mkdir(dir, 0777); /* an existing directory is fine; errors show at the first write */
    atomic_store(&enabled, 1);
  }
  pthread_mutex_unlock(&lock);
  return true;
}

static char *dup_str(const char *s) {
  s = s ? s : "";
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static void warn_once(const char *path) {
  if (warned) return;
  warned = true;
  fprintf(stderr, "torch_tpu: TORCH_TPU_DUMP_DIR: cannot write %s; dumps are lost\n", path);
}

/* Writes n bytes to DIR/name; returns false on an I/O error. Called under lock. */
static bool write_bytes(const char *name, const void *bytes, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    warn_once(path);
    return false;
  }
  bool ok = n == 0 || fwrite(bytes, 1, n, f) == n;
  ok = fclose(f) == 0 && ok;
  if (!ok) warn_once(path);
  return ok;
}

static bool write_file(const char *name, const char *text) {
  return write_bytes(name, text ? text : "", text ? strlen(text) : 0);
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p == '\n') fputs("\\n", f);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

/* Rewrites DIR/manifest.json whole (through a temp file and rename, so a
 * reader never sees half of it). Called under lock. */
static void write_manifest(void) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/.manifest.json.tmp", dir);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    warn_once(tmp);
    return;
  }
  fputs("{\"format\": \"torch_tpu dump 1\", \"entries\": [", f);
  for (int i = 0; i < n_entries; i++) {
    entry *e = &entries[i];
    fprintf(f, "%s\n {\"seq\": %d, \"time\": %.6f, \"kind\": ", i ? "," : "", e->seq, e->time);
    json_string(f, e->kind);
    fputs(", \"name\": ", f);
    json_string(f, e->name);
    fputs(", \"source\": ", f);
    json_string(f, e->source);
    fputs(", \"files\": [", f);
    for (int k = 0; k < e->n_files; k++) {
      if (k) fputs(", ", f);
      json_string(f, e->files[k]);
    }
    fputs("]}", f);
  }
  fputs("\n]}\n", f);
  if (fclose(f) != 0 || rename(tmp, path) != 0) warn_once(path);
}

/* A file-name-safe copy of name (at most 80 characters). */
static void safe_name(const char *name, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = name ? name : ""; *p && n + 1 < size && n < 80; p++) {
    char c = *p;
    out[n++] = (c == '/' || c == ' ' || c == '\\' || c == ':') ? '_' : c;
  }
  out[n] = 0;
}

/* Writes the files (suffixes[i], texts[i]) of one entry and indexes them. */
static int add_entry(const char *kind, const char *name, int n, const char *const *suffixes,
                     const char *const *texts) {
  if (!tt_dump_enabled()) return -1;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char base[128], fname[256];
  safe_name(name, base, sizeof base);
  pthread_mutex_lock(&lock);
  int seq = next_seq++;
  if (n_entries == cap_entries) {
    int cap = cap_entries ? 2 * cap_entries : 64;
    entry *grown = realloc(entries, (size_t)cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&lock);
      return -1;
    }
    entries = grown;
    cap_entries = cap;
  }
  entry *e = &entries[n_entries++];
  memset(e, 0, sizeof *e);
  e->seq = seq;
  e->time = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  e->kind = dup_str(kind);
  e->name = dup_str(name);
  e->source = dup_str("");
  for (int i = 0; i < n && i < 3; i++) {
    snprintf(fname, sizeof fname, "%05d_%s_%s%s", seq, kind, base, suffixes[i]);
    if (write_file(fname, texts[i])) e->files[e->n_files++] = dup_str(fname);
  }
  atomic_store(&source_pending, true);
  write_manifest();
  pthread_mutex_unlock(&lock);
  return seq;
}

int tt_dump_compile(const char *kind, const char *name, const char *module_text,
                    const char *options, const char *key_text) {
  const char *suffixes[] = {".mlir", ".options.txt", ".key.txt"};
  const char *texts[] = {module_text, options, key_text};
  return add_entry(kind, name, 3, suffixes, texts);
}

int tt_dump_note(const char *kind, const char *name, const char *ext, const char *text) {
  const char *suffixes[] = {ext ? ext : ".txt"};
  const char *texts[] = {text};
  return add_entry(kind, name, 1, suffixes, texts);
}

bool tt_dump_source_pending(void) { return atomic_load(&source_pending); }

void tt_dump_fill_source(const char *line) {
  pthread_mutex_lock(&lock);
  if (atomic_exchange(&source_pending, false)) {
    for (int i = n_entries - 1; i >= 0 && !entries[i].source[0]; i--) {
      char *s = dup_str(line);
      if (!s) break;
      free(entries[i].source);
      entries[i].source = s;
    }
    if (atomic_load(&enabled) > 0) write_manifest();
  }
  pthread_mutex_unlock(&lock);
}

/* The optimized program of a compile that tt_dump_compile numbered seq:
 * the plugin's serialized HloModuleProto (.optimized.hlo.pb) and its
 * listing (.optimized.txt); when the plugin does not expose it or the
 * listing fails, the .txt says why. Added to seq's manifest entry. */
void tt_dump_optimized(int seq, tt_executable *exe) {
  if (seq < 0 || !exe || !tt_dump_enabled()) return;
  void *proto = NULL;
  size_t n = 0;
  char format[32] = "", *listing = NULL, *note = NULL;
  tt_hlo_listing_stats st = {0};
  tt_error *err = tt_executable_optimized_program(exe, &proto, &n, format, sizeof format);
  if (!err && format[0] && strcmp(format, "hlo") != 0 && strcmp(format, "hlo_with_config") != 0)
    err = tt_error_new(TT_ERR_NOT_IMPLEMENTED, "the plugin's optimized program has format '%s', not 'hlo'",
                       format);
  if (!err) err = tt_hlo_listing(proto, n, &listing, &st);
  if (err) {
    const char *msg = tt_error_message(err);
    size_t cap = strlen(msg) + 96;
    if ((note = malloc(cap)))
      snprintf(note, cap, "optimized HLO (format '%s') not listed: %s\n", format, msg);
    tt_error_free(err);
  }
  pthread_mutex_lock(&lock);
  entry *e = NULL;
  for (int i = n_entries - 1; i >= 0 && !e; i--)
    if (entries[i].seq == seq) e = &entries[i];
  if (e && e->n_files >= 1) {
    /* the module's file name less ".mlir" is the stem */
    char stem[256], fname[300];
    snprintf(stem, sizeof stem, "%s", e->files[0]);
    char *dot = strrchr(stem, '.');
    if (dot && strcmp(dot, ".mlir") == 0) *dot = 0;
    if (proto) {
      snprintf(fname, sizeof fname, "%s.optimized.hlo.pb", stem);
      if (write_bytes(fname, proto, n) && e->n_files < 5) e->files[e->n_files++] = dup_str(fname);
    }
    snprintf(fname, sizeof fname, "%s.optimized.txt", stem);
    if (write_file(fname, listing ? listing : note) && e->n_files < 5)
      e->files[e->n_files++] = dup_str(fname);
    write_manifest();
  }
  pthread_mutex_unlock(&lock);
  free(proto);
  free(listing);
  free(note);
}
