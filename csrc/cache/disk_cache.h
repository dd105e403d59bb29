/* The persistent compilation cache: a content store on disk, key bytes ->
 * blob bytes, shared by every process that opens the same directory.
 *
 * Layout: <root>/<fingerprint dir>/<32 hex>.ttc, where the fingerprint dir is
 * the hex BLAKE2b-128 of the caller's plugin fingerprint text (written in
 * full to FINGERPRINT there) and the file name is the hex BLAKE2b-128 of the
 * key. Each entry holds the full key, so a hash collision reads as a miss,
 * and a BLAKE2b-64 checksum over header, key and blob; a corrupt, truncated
 * or foreign-version entry is removed with a warning on stderr and reported
 * as a miss, never returned. Writes go to a unique temp file in the same
 * directory and are renamed into place, so readers in other processes see
 * either the whole old entry, the whole new one, or none. The root (all
 * fingerprint directories together) is capped at max_bytes by evicting
 * least-recently-used entries (a hit touches the entry's mtime). docs/persistent-cache.md describes the format.
 *
 * A handle may be used from several threads at once. */
#ifndef TT_CACHE_DISK_CACHE_H
#define TT_CACHE_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct tt_disk_cache tt_disk_cache;

typedef struct {
  uint64_t hits, misses; /* gets that returned a blob / NULL */
  uint64_t writes;       /* puts that landed */
  uint64_t corrupt_removed;
  uint64_t evictions;    /* entries this handle deleted for the size cap */
  uint64_t bytes_on_disk, entries; /* whole root: last scan plus our puts since */
} tt_disk_cache_stats;

/* Creates <root_dir>/<hex of fingerprint> (mkdir -p) and scans it once
 * (evicting if over max_bytes, removing temp files older than a minute).
 * fingerprint: any text that identifies the plugin build. */
tt_error *tt_disk_cache_open(const char *root_dir, const char *fingerprint, uint64_t max_bytes,
                             tt_disk_cache **out);
void tt_disk_cache_close(tt_disk_cache *c); /* accepts NULL */

/* Opens the cache the settings ask for (core/settings.h): TORCH_TPU_CACHE
 * off disables it (*out NULL, no error); TORCH_TPU_CACHE_DIR is the root
 * (tt_disk_cache_default_root), TORCH_TPU_CACHE_MAX_BYTES the cap. A
 * malformed value is an error naming the variable. */
tt_error *tt_disk_cache_open_default(const char *fingerprint, tt_disk_cache **out);

/* The root the settings name: $TORCH_TPU_CACHE_DIR, else ~/.cache/torch_tpu
 * (an error when HOME is needed and unset). */
tt_error *tt_disk_cache_default_root(char *out, size_t out_size);

/* Identifies the binary this code was loaded from (torch_tpu/_C.so in the
 * extension): hex BLAKE2b-128 of its GNU build-id note (the linker's hash of
 * the binary), else of the whole file; computed once per process. The cache key says what an
 * op is, not which build of the lowerings produced its program, so the
 * fingerprint passed to open must include this: a rebuilt core then starts
 * a fresh directory instead of loading programs its old lowerings emitted. */
tt_error *tt_disk_cache_code_id(char out[33]);

/* The directory entries live in (for messages and tests). */
const char *tt_disk_cache_dir(const tt_disk_cache *c);

/* On a hit *blob is a malloc'd copy (caller frees) and *blob_len its size; on
 * a miss *blob is NULL. An error only for I/O failures other than a missing
 * or invalid entry; the caller may treat it as a miss. */
tt_error *tt_disk_cache_get(tt_disk_cache *c, const void *key, size_t key_len, void **blob,
                            size_t *blob_len);

/* Stores blob under key, replacing any entry there. A failure (disk full,
 * read-only directory, entry larger than the cap) leaves the cache as it was
 * and returns an error the caller may turn into a warning. */
tt_error *tt_disk_cache_put(tt_disk_cache *c, const void *key, size_t key_len, const void *blob,
                            size_t blob_len);

tt_disk_cache_stats tt_disk_cache_get_stats(tt_disk_cache *c);

/* Writes the 32-hex-digit name (plus NUL) a key's entry has. */
void tt_disk_cache_key_name(const void *key, size_t key_len, char out[33]);

/* Checks an entry's bytes as a read does: NULL when valid (then *key,
 * *key_len and *blob_len locate the key and the blob's length), else why
 * not (a static string, or why). */
const char *tt_disk_cache_validate(const void *entry, size_t size, char why[160],
                                   const unsigned char **key, size_t *key_len, size_t *blob_len);

/* Entry format constants (docs/persistent-cache.md). */
#define TT_DISK_CACHE_MAGIC "TTPUDC\r\n"
#define TT_DISK_CACHE_VERSION 1u
#define TT_DISK_CACHE_HEADER_SIZE 40u
#define TT_DISK_CACHE_SUFFIX ".ttc"
#define TT_DISK_CACHE_TMP_PREFIX ".tmp-"
#define TT_DISK_CACHE_FINGERPRINT_FILE "FINGERPRINT"

#endif
