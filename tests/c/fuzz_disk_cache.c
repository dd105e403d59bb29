/* libFuzzer harness over the persistent-cache reader (csrc/cache/disk_cache.c
 * and disk_cache_inspect.c): the bytes of one entry file, as found on disk,
 * are the input.
 *
 * Input: one control byte, then the entry. Control bit 0 set: the harness
 * repairs the entry's lengths and checksum first (so that mutations reach
 * past the checksum into key and blob handling); the entry is then filed
 * under its own key's name. Clear: the bytes are filed as they are under a
 * fixed key's name. Each input: tt_disk_cache_validate on the bytes, the
 * entry written into a fresh cache directory, the cache opened (its scan),
 * read (tt_disk_cache_get), listed and checked (the inspect functions behind
 * `python -m torch_tpu.cache`), closed. Properties: no crash, leak or
 * out-of-bounds access; a repaired entry is a hit returning exactly its
 * blob; a get never returns a blob the validator rejects.
 * Built by `make fuzz-c` with clang -fsanitize=fuzzer,address,undefined. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bytes_le.h"
#include "cache/blake2b.h"
#include "cache/disk_cache.h"
#include "cache/disk_cache_inspect.h"

static char root[256];

static void rm_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[1024];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
      rm_tree(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void cleanup(void) { rm_tree(root); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!root[0]) {
    snprintf(root, sizeof root, "/tmp/tt_fuzz_disk_cache_%d", (int)getpid());
    atexit(cleanup);
  }
  if (size < 1) return 0;
  int repair = data[0] & 1;
  size_t n = size - 1;
  unsigned char *e = malloc(n ? n : 1);
  memcpy(e, data + 1, n);
  static const unsigned char fixed_key[] = "fuzz-key";
  const unsigned char *key = fixed_key;
  size_t key_len = sizeof fixed_key - 1;
  if (repair && n >= TT_DISK_CACHE_HEADER_SIZE) {
    memcpy(e, TT_DISK_CACHE_MAGIC, 8);
    tt_put_le(e + 8, TT_DISK_CACHE_VERSION, 4);
    size_t body = n - TT_DISK_CACHE_HEADER_SIZE;
    uint64_t klen = tt_get_le(e + 16, 8) % (body + 1);
    tt_put_le(e + 16, klen, 8);
    tt_put_le(e + 24, body - klen, 8);
    tt_blake2b_state s;
    tt_blake2b_init(&s, 8);
    tt_blake2b_update(&s, e, 32);
    tt_blake2b_update(&s, e + TT_DISK_CACHE_HEADER_SIZE, body);
    tt_blake2b_final(&s, e + 32);
    key = e + TT_DISK_CACHE_HEADER_SIZE;
    key_len = (size_t)klen;
  }

  char why[160];
  const unsigned char *vk = NULL;
  size_t vklen = 0, vblen = 0;
  const char *bad = tt_disk_cache_validate(e, n, why, &vk, &vklen, &vblen);
  if (repair && n >= TT_DISK_CACHE_HEADER_SIZE && bad) {
    fprintf(stderr, "a repaired entry was rejected: %s\n", bad);
    abort();
  }

  tt_disk_cache *c = NULL;
  tt_error *err = tt_disk_cache_open(root, "fuzz fingerprint", 1u << 30, &c);
  if (err) {
    fprintf(stderr, "open: %s\n", tt_error_message(err));
    abort();
  }
  char name[33], path[512];
  tt_disk_cache_key_name(key, key_len, name);
  snprintf(path, sizeof path, "%s/%s%s", tt_disk_cache_dir(c), name, TT_DISK_CACHE_SUFFIX);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || (n && write(fd, e, n) != (ssize_t)n)) abort();
  close(fd);

  /* the scan of a second handle, then a read */
  tt_disk_cache *c2 = NULL;
  err = tt_disk_cache_open(root, "fuzz fingerprint", 1u << 30, &c2);
  if (err) abort();
  void *blob = NULL;
  size_t blob_len = 0;
  err = tt_disk_cache_get(c2, key, key_len, &blob, &blob_len);
  tt_error_free(err);
  if (blob) {
    if (bad) {
      fprintf(stderr, "get returned an entry the validator rejects: %s\n", bad);
      abort();
    }
    if (blob_len != vblen || memcmp(blob, vk + vklen, vblen) != 0) abort();
  } else if (repair && n >= TT_DISK_CACHE_HEADER_SIZE) {
    fprintf(stderr, "a valid entry under its own key was a miss\n");
    abort();
  }
  free(blob);

  /* the inspect path (python -m torch_tpu.cache ls / check) over the same file */
  tt_disk_cache_entry_check chk;
  memset(&chk, 0, sizeof chk);
  tt_disk_cache_check_entry(path, &chk);
  free(chk.key);
  tt_disk_cache_listing l;
  memset(&l, 0, sizeof l);
  err = tt_disk_cache_list(root, NULL, &l);
  if (!err) tt_disk_cache_listing_free(&l);
  tt_error_free(err);

  tt_disk_cache_close(c2);
  tt_disk_cache_close(c);
  unlink(path);
  free(e);
  return 0;
}
