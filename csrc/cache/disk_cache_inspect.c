/* Reading and clearing a persistent cache root without opening it: what
 * `python -m torch_tpu.cache stats|ls|clear` shows and does (see
 * disk_cache.h). Entries are judged by tt_disk_cache_validate, the check a
 * read makes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/disk_cache_inspect.h"

static tt_error *oom(void) { return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"); }

static bool is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

static bool is_fp_dir_name(const char *name) { return strlen(name) == 32 && is_hex(name, 32); }

static bool is_entry_name(const char *name) {
  size_t n = strlen(name), ls = strlen(TT_DISK_CACHE_SUFFIX);
  return n == 32 + ls && !strcmp(name + 32, TT_DISK_CACHE_SUFFIX) && is_hex(name, 32);
}

static bool is_temp_name(const char *name) {
  return !strncmp(name, TT_DISK_CACHE_TMP_PREFIX, strlen(TT_DISK_CACHE_TMP_PREFIX));
}

/* a/b into out; false when it does not fit. */
static bool join_into(char *out, size_t size, const char *a, const char *b) {
  int n = snprintf(out, size, "%s/%s", a, b);
  return n > 0 && (size_t)n < size;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir, sorted; *n their count. NULL with *missing set when dir
 * does not exist; NULL with an error otherwise. */
static char **sorted_names(const char *dir, size_t *n, bool *missing, tt_error **err) {
  *n = 0;
  *missing = false;
  *err = NULL;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) *missing = true;
    else *err = tt_error_new(TT_ERR_RUNTIME, "cannot read %s: %s", dir, strerror(errno));
    return NULL;
  }
  char **names = NULL;
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 64;
      char **grown = realloc(names, cap * sizeof *names);
      if (!grown) goto fail;
      names = grown;
    }
    if (!(names[*n] = strdup(de->d_name))) goto fail;
    (*n)++;
  }
  closedir(d);
  if (*n) qsort(names, *n, sizeof *names, by_name);
  if (!names) names = calloc(1, sizeof *names); /* empty, but not NULL */
  if (!names) *err = oom();
  return names;
fail:
  closedir(d);
  for (size_t i = 0; i < *n; i++) free(names[i]);
  free(names);
  *n = 0;
  *err = oom();
  return NULL;
}

static void free_names(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++) free(names[i]);
  free(names);
}

/* The FINGERPRINT text without surrounding white space ("" when absent). */
static char *read_fingerprint(const char *dir) {
  char path[4096], buf[2048];
  size_t len = 0;
  FILE *f = join_into(path, sizeof path, dir, TT_DISK_CACHE_FINGERPRINT_FILE) ? fopen(path, "r") : NULL;
  if (f) {
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
  }
  buf[len] = 0;
  char *start = buf;
  while (*start == ' ' || *start == '\t' || *start == '\n' || *start == '\r') start++;
  size_t n = strlen(start);
  while (n && (start[n - 1] == ' ' || start[n - 1] == '\t' || start[n - 1] == '\n' ||
               start[n - 1] == '\r'))
    n--;
  start[n] = 0;
  return strdup(start);
}

static bool selected(const char *name, const char *fingerprint, const char *only) {
  return !only || !*only || !strncmp(name, only, strlen(only)) || !strcmp(fingerprint, only);
}

/* Fills one fingerprint directory's entries and temp-file count. */
static tt_error *list_fp_dir(const char *path, tt_disk_cache_fp_dir *fd) {
  size_t n;
  bool missing;
  tt_error *err;
  char **names = sorted_names(path, &n, &missing, &err);
  if (!names) return missing ? NULL : err;
  fd->files = calloc(n ? n : 1, sizeof *fd->files);
  if (!fd->files) {
    free_names(names, n);
    return oom();
  }
  for (size_t i = 0; i < n; i++) {
    if (is_temp_name(names[i])) {
      fd->temp_files++;
      continue;
    }
    struct stat st;
    char file[4096];
    if (!is_entry_name(names[i]) || !join_into(file, sizeof file, path, names[i]) ||
        stat(file, &st) != 0)
      continue; /* not an entry, or evicted meanwhile */
    tt_disk_cache_file *f = &fd->files[fd->n_files++];
    snprintf(f->name, sizeof f->name, "%s", names[i]);
    f->bytes = (uint64_t)st.st_size;
    f->last_use = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec * 1e-9;
    fd->bytes += f->bytes;
  }
  free_names(names, n);
  return NULL;
}

tt_error *tt_disk_cache_list(const char *root, const char *only, tt_disk_cache_listing *out) {
  if (!root || !out) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_disk_cache_list: NULL argument");
  memset(out, 0, sizeof *out);
  size_t n;
  bool missing;
  tt_error *err;
  char **names = sorted_names(root, &n, &missing, &err);
  if (!names) return missing ? NULL : err;
  out->dirs = calloc(n ? n : 1, sizeof *out->dirs);
  if (!out->dirs) err = oom();
  for (size_t i = 0; i < n && !err; i++) {
    char path[4096];
    struct stat st;
    if (!is_fp_dir_name(names[i]) || !join_into(path, sizeof path, root, names[i]) ||
        stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    char *fingerprint = read_fingerprint(path);
    if (!fingerprint) {
      err = oom();
      break;
    }
    if (!selected(names[i], fingerprint, only)) {
      free(fingerprint);
      continue;
    }
    tt_disk_cache_fp_dir *fd = &out->dirs[out->n_dirs++];
    snprintf(fd->name, sizeof fd->name, "%s", names[i]);
    fd->fingerprint = fingerprint;
    err = list_fp_dir(path, fd);
  }
  free_names(names, n);
  if (err) tt_disk_cache_listing_free(out);
  return err;
}

void tt_disk_cache_listing_free(tt_disk_cache_listing *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n_dirs; i++) {
    free(l->dirs[i].fingerprint);
    free(l->dirs[i].files);
  }
  free(l->dirs);
  memset(l, 0, sizeof *l);
}

void tt_disk_cache_check_entry(const char *path, tt_disk_cache_entry_check *out) {
  memset(out, 0, sizeof *out);
  FILE *f = path ? fopen(path, "rb") : NULL;
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0) {
    snprintf(out->status, sizeof out->status, "unreadable: %s", strerror(errno));
    if (f) fclose(f);
    return;
  }
  size_t size = (size_t)st.st_size;
  unsigned char *data = malloc(size ? size : 1);
  size_t got = data ? fread(data, 1, size, f) : 0;
  fclose(f);
  if (!data) {
    snprintf(out->status, sizeof out->status, "unreadable: out of host memory");
    return;
  }
  char why[160];
  const unsigned char *key;
  size_t key_len, blob_len;
  const char *bad = tt_disk_cache_validate(data, got, why, &key, &key_len, &blob_len);
  if (bad) {
    snprintf(out->status, sizeof out->status, "%s", bad);
    free(data);
    return;
  }
  out->key = malloc(key_len ? key_len : 1);
  if (!out->key) {
    snprintf(out->status, sizeof out->status, "unreadable: out of host memory");
    free(data);
    return;
  }
  memcpy(out->key, key, key_len);
  out->key_len = key_len;
  out->blob_len = blob_len;
  char expected[33 + sizeof TT_DISK_CACHE_SUFFIX];
  tt_disk_cache_key_name(key, key_len, expected);
  strcat(expected, TT_DISK_CACHE_SUFFIX);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(out->status, sizeof out->status, "%s", strcmp(base, expected) ? "misplaced" : "ok");
  free(data);
}

tt_error *tt_disk_cache_clear(const char *root, const char *only, uint64_t *removed,
                              uint64_t *freed) {
  *removed = *freed = 0;
  tt_disk_cache_listing l;
  TT_TRY(tt_disk_cache_list(root, only, &l));
  for (size_t i = 0; i < l.n_dirs; i++) {
    char dir[4096], path[4096];
    if (!join_into(dir, sizeof dir, root, l.dirs[i].name)) continue;
    for (size_t j = 0; j < l.dirs[i].n_files; j++) {
      if (join_into(path, sizeof path, dir, l.dirs[i].files[j].name) && unlink(path) == 0) {
        (*removed)++;
        *freed += l.dirs[i].files[j].bytes;
      }
    }
    size_t n;
    bool missing;
    tt_error *err;
    char **names = sorted_names(dir, &n, &missing, &err);
    tt_error_free(err);
    for (size_t j = 0; j < n; j++) {
      if (is_temp_name(names[j]) && join_into(path, sizeof path, dir, names[j])) unlink(path);
    }
    free_names(names, n);
    /* Only an empty directory goes: a process may just have written to it. */
    if (join_into(path, sizeof path, dir, TT_DISK_CACHE_FINGERPRINT_FILE) && unlink(path) == 0)
      rmdir(dir);
  }
  tt_disk_cache_listing_free(&l);
  return NULL;
}
