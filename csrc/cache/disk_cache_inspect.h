/* Reading and clearing a persistent cache root without opening it
 * (disk_cache_inspect.c): what `python -m torch_tpu.cache stats|ls|clear`
 * shows and does. Entries are judged as a read judges them. `only` selects
 * fingerprint directories by name (or a prefix of it) or by their full
 * fingerprint text; NULL or "" selects all. */
#ifndef TT_CACHE_DISK_CACHE_INSPECT_H
#define TT_CACHE_DISK_CACHE_INSPECT_H

#include "cache/disk_cache.h"

typedef struct {
  char name[40];    /* "<32 hex>.ttc" */
  uint64_t bytes;
  double last_use;  /* mtime, seconds since the epoch */
} tt_disk_cache_file;

typedef struct {
  char name[33];       /* the fingerprint directory */
  char *fingerprint;   /* its FINGERPRINT text, "" when absent (owned) */
  tt_disk_cache_file *files; /* entries, sorted by name (owned) */
  size_t n_files;
  size_t temp_files;   /* writes in progress, or left by a dead process */
  uint64_t bytes;      /* of the entries */
} tt_disk_cache_fp_dir;

typedef struct {
  tt_disk_cache_fp_dir *dirs; /* sorted by name */
  size_t n_dirs;
} tt_disk_cache_listing;

/* Lists the root's fingerprint directories and their entries (a missing
 * root is empty). Free with tt_disk_cache_listing_free (accepts NULL). */
tt_error *tt_disk_cache_list(const char *root, const char *only, tt_disk_cache_listing *out);
void tt_disk_cache_listing_free(tt_disk_cache_listing *l);

/* One entry file judged as a read would judge it. status: "ok",
 * "misplaced" (valid, but not under its key's name: never returned by a
 * read), "unreadable: <why>", or why it is invalid. key: a malloc'd copy
 * (NULL when invalid; the caller frees). */
typedef struct {
  char status[192];
  void *key;
  size_t key_len;
  uint64_t blob_len;
} tt_disk_cache_entry_check;
void tt_disk_cache_check_entry(const char *path, tt_disk_cache_entry_check *out);

/* Deletes the entries, temp files, FINGERPRINT and the directory of every
 * selected fingerprint directory; files the cache does not own stay (and
 * so does their directory). */
tt_error *tt_disk_cache_clear(const char *root, const char *only, uint64_t *removed,
                              uint64_t *freed);

#endif
