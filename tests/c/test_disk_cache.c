/* Tests of the persistent compilation cache store (csrc/cache/disk_cache)
 * and of program serialization (csrc/graph/program_serial), no PyTorch.
 *
 *   test_disk_cache PLUGIN.so          run every test (PLUGIN from argv[1],
 *                                      else $TORCH_TPU_PJRT_PLUGIN)
 *   test_disk_cache --fill DIR FP N    write N known entries (key "key-<i>",
 *                                      blob of 100 + 37 i bytes, byte j =
 *                                      (i + 7 j) mod 251) and exit; used by
 *                                      tests/python/test_disk_cache_cli.py
 *   test_disk_cache --get DIR FP KEY   print "hit <len> <blake2b-64 hex>" or
 *                                      "miss"; exit 0
 *
 * Prints "disk_cache: N passed, M failed" last; non-zero exit on failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/blake2b.h"
#include "cache/disk_cache_inspect.h"
#include "core/settings.h"
#include "graph/program_serial.h"

static int g_passed, g_failed;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (cond) {                                            \
      g_passed++;                                          \
    } else {                                               \
      g_failed++;                                          \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
    }                                                      \
  } while (0)

#define CHECK_OK(expr)                                                                  \
  do {                                                                                  \
    tt_error *e_ = (expr);                                                              \
    CHECK(e_ == NULL, "%s -> %s", #expr, e_ ? tt_error_message(e_) : "");               \
    tt_error_free(e_);                                                                  \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double g_last_compile_s;
static char g_root[256]; /* a fresh temp root for this run */

static void rm_rf(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
      char sub[1024];
      snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
      rm_rf(sub);
    }
    closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* A fresh cache under g_root/<name>. */
static tt_disk_cache *open_fresh(const char *name, uint64_t max_bytes) {
  char root[512];
  snprintf(root, sizeof root, "%s/%s", g_root, name);
  rm_rf(root);
  tt_disk_cache *c = NULL;
  CHECK_OK(tt_disk_cache_open(root, "test-plugin;xla=1", max_bytes, &c));
  return c;
}

static void entry_path(tt_disk_cache *c, const char *key, char *out, size_t size) {
  char name[33];
  tt_disk_cache_key_name(key, strlen(key), name);
  snprintf(out, size, "%s/%s%s", tt_disk_cache_dir(c), name, TT_DISK_CACHE_SUFFIX);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static int count_files(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (!strncmp(de->d_name, prefix, strlen(prefix)) && strcmp(de->d_name, ".") &&
        strcmp(de->d_name, "..") && strcmp(de->d_name, "FINGERPRINT"))
      n++;
  closedir(d);
  return n;
}

/* The blob of entry i in the --fill set and the concurrency test. */
static unsigned char *make_blob(int i, size_t *len) {
  *len = 100 + 37 * (size_t)i;
  unsigned char *b = malloc(*len);
  for (size_t j = 0; j < *len; j++) b[j] = (unsigned char)(((size_t)i + 7 * j) % 251);
  return b;
}

/* Gets key; true if it hit with exactly `want`. */
static bool get_equals(tt_disk_cache *c, const char *key, const void *want, size_t want_len) {
  void *blob = NULL;
  size_t len = 0;
  tt_error *err = tt_disk_cache_get(c, key, strlen(key), &blob, &len);
  bool ok = !err && blob && len == want_len && memcmp(blob, want, len) == 0;
  tt_error_free(err);
  free(blob);
  return ok;
}

static bool get_misses(tt_disk_cache *c, const char *key) {
  void *blob = NULL;
  size_t len = 0;
  tt_error *err = tt_disk_cache_get(c, key, strlen(key), &blob, &len);
  bool miss = !err && !blob && len == 0;
  tt_error_free(err);
  free(blob);
  return miss;
}

/* ------------------------------------------------------------ tests */

static void test_blake2b_vectors(void) {
  unsigned char out[64];
  char hex[129];
  tt_blake2b("abc", 3, out, 16);
  for (int i = 0; i < 16; i++) sprintf(hex + 2 * i, "%02x", out[i]);
  CHECK(!strcmp(hex, "cf4ab791c62b8d2b2109c90275287816"), "blake2b-128(abc) = %s", hex);
  tt_blake2b("abc", 3, out, 64);
  for (int i = 0; i < 64; i++) sprintf(hex + 2 * i, "%02x", out[i]);
  CHECK(!strncmp(hex, "ba80a53f981c4d0d6a2797b69f12f6e9", 32), "blake2b-512(abc) = %s", hex);
  unsigned char data[768];
  for (int i = 0; i < 768; i++) data[i] = (unsigned char)i;
  tt_blake2b_state s; /* streamed in odd pieces == one shot (python hashlib value) */
  tt_blake2b_init(&s, 8);
  for (int i = 0; i < 768; i += 7) tt_blake2b_update(&s, data + i, 768 - i < 7 ? 768 - i : 7);
  tt_blake2b_final(&s, out);
  for (int i = 0; i < 8; i++) sprintf(hex + 2 * i, "%02x", out[i]);
  CHECK(!strcmp(hex, "6cdb98d18e1d1970"), "blake2b-64(0..767) = %s", hex);
}

static void test_round_trip_and_miss(void) {
  tt_disk_cache *c = open_fresh("roundtrip", 1 << 20);
  if (!c) return;
  const char *blob = "executable bytes \x00\x01\x02";
  size_t blen = 20;
  CHECK(get_misses(c, "k1"), "absent key misses");
  CHECK_OK(tt_disk_cache_put(c, "k1", 2, blob, blen));
  CHECK(get_equals(c, "k1", blob, blen), "round trip");
  CHECK(get_misses(c, "k2"), "other key misses");
  CHECK_OK(tt_disk_cache_put(c, "k1", 2, "new", 3)); /* overwrite */
  CHECK(get_equals(c, "k1", "new", 3), "overwritten entry");
  CHECK_OK(tt_disk_cache_put(c, "", 0, "", 0)); /* empty key and blob are legal */
  CHECK(get_equals(c, "", "", 0), "empty key/blob");
  tt_disk_cache_stats st = tt_disk_cache_get_stats(c);
  CHECK(st.hits == 3 && st.misses == 2 && st.writes == 3 && st.corrupt_removed == 0,
        "stats hits %llu misses %llu writes %llu", (unsigned long long)st.hits,
        (unsigned long long)st.misses, (unsigned long long)st.writes);
  char fp[1024];
  snprintf(fp, sizeof fp, "%s/FINGERPRINT", tt_disk_cache_dir(c));
  FILE *f = fopen(fp, "r");
  char line[128] = {0};
  CHECK(f && fgets(line, sizeof line, f) && !strcmp(line, "test-plugin;xla=1\n"),
        "FINGERPRINT file holds the fingerprint text: %s", line);
  if (f) fclose(f);
  CHECK(count_files(tt_disk_cache_dir(c), TT_DISK_CACHE_TMP_PREFIX) == 0, "no temp files left");
  /* A second handle (a later process) sees the entries and the directory size. */
  char root[512];
  snprintf(root, sizeof root, "%s/roundtrip", g_root);
  tt_disk_cache *c2 = NULL;
  CHECK_OK(tt_disk_cache_open(root, "test-plugin;xla=1", 1 << 20, &c2));
  if (c2) {
    CHECK(get_equals(c2, "k1", "new", 3), "entry visible to a second handle");
    st = tt_disk_cache_get_stats(c2);
    CHECK(st.entries == 2 && st.bytes_on_disk == 2 * TT_DISK_CACHE_HEADER_SIZE + 2 + 3,
          "scan at open: %llu entries, %llu bytes", (unsigned long long)st.entries,
          (unsigned long long)st.bytes_on_disk);
    tt_disk_cache_close(c2);
  }
  /* Another fingerprint is another directory: no entries shared. */
  CHECK_OK(tt_disk_cache_open(root, "other-plugin", 1 << 20, &c2));
  if (c2) {
    CHECK(strcmp(tt_disk_cache_dir(c), tt_disk_cache_dir(c2)) != 0, "fingerprint partitions");
    CHECK(get_misses(c2, "k1"), "other fingerprint misses");
    tt_disk_cache_close(c2);
  }
  tt_disk_cache_close(c);
}

static void test_collision_is_a_miss(void) {
  tt_disk_cache *c = open_fresh("collision", 1 << 20);
  if (!c) return;
  CHECK_OK(tt_disk_cache_put(c, "key-A", 5, "program A", 9));
  char pa[1024], pb[1024];
  entry_path(c, "key-A", pa, sizeof pa);
  entry_path(c, "key-B", pb, sizeof pb);
  /* Key B's file now holds key A's valid entry: the same name, another key. */
  CHECK(rename(pa, pb) == 0, "rename");
  CHECK(get_misses(c, "key-B"), "a different stored key is a miss");
  CHECK(exists(pb), "a valid entry of another key is not removed");
  CHECK(tt_disk_cache_get_stats(c).corrupt_removed == 0, "not counted as corrupt");
  CHECK_OK(tt_disk_cache_put(c, "key-B", 5, "program B", 9));
  CHECK(get_equals(c, "key-B", "program B", 9), "a put replaces it");
  tt_disk_cache_close(c);
}

/* Writes an entry, damages its file with `damage`, expects removal + miss. */
static void check_damage(const char *what, void (*damage)(const char *path, size_t size)) {
  tt_disk_cache *c = open_fresh("damage", 1 << 20);
  if (!c) return;
  size_t blen;
  unsigned char *blob = make_blob(5, &blen);
  CHECK_OK(tt_disk_cache_put(c, "victim", 6, blob, blen));
  char path[1024];
  entry_path(c, "victim", path, sizeof path);
  damage(path, TT_DISK_CACHE_HEADER_SIZE + 6 + blen);
  CHECK(get_misses(c, "victim"), "%s: a miss", what);
  CHECK(!exists(path), "%s: entry removed", what);
  CHECK(tt_disk_cache_get_stats(c).corrupt_removed == 1, "%s: counted", what);
  CHECK_OK(tt_disk_cache_put(c, "victim", 6, blob, blen)); /* recompiled and stored again */
  CHECK(get_equals(c, "victim", blob, blen), "%s: stored again", what);
  free(blob);
  tt_disk_cache_close(c);
}

static void flip_byte(const char *path, size_t at) {
  int fd = open(path, O_RDWR);
  unsigned char b = 0;
  if (fd < 0 || pread(fd, &b, 1, (off_t)at) != 1) return;
  b ^= 0x40;
  if (pwrite(fd, &b, 1, (off_t)at) != 1) fprintf(stderr, "pwrite failed\n");
  close(fd);
}

static void flip_in_blob(const char *path, size_t size) { flip_byte(path, size - 50); }
static void flip_in_key(const char *path, size_t size) {
  (void)size;
  flip_byte(path, TT_DISK_CACHE_HEADER_SIZE + 2);
}
static void flip_in_checksum(const char *path, size_t size) {
  (void)size;
  flip_byte(path, 33);
}
static void flip_in_length(const char *path, size_t size) {
  (void)size;
  flip_byte(path, 24); /* blob_len */
}
static void flip_magic(const char *path, size_t size) {
  (void)size;
  flip_byte(path, 0);
}
static void bump_version(const char *path, size_t size) {
  (void)size;
  flip_byte(path, 8);
}
static void truncate_half(const char *path, size_t size) {
  if (truncate(path, (off_t)(size / 2)) != 0) fprintf(stderr, "truncate failed\n");
}
static void truncate_last_byte(const char *path, size_t size) {
  if (truncate(path, (off_t)(size - 1)) != 0) fprintf(stderr, "truncate failed\n");
}
static void truncate_in_header(const char *path, size_t size) {
  (void)size;
  if (truncate(path, 10) != 0) fprintf(stderr, "truncate failed\n");
}
static void truncate_empty(const char *path, size_t size) {
  (void)size;
  if (truncate(path, 0) != 0) fprintf(stderr, "truncate failed\n");
}
static void append_byte(const char *path, size_t size) {
  (void)size;
  FILE *f = fopen(path, "ab");
  if (f) {
    fputc(0, f);
    fclose(f);
  }
}

static void test_corrupt_and_truncated(void) {
  check_damage("flipped blob byte", flip_in_blob);
  check_damage("flipped key byte", flip_in_key);
  check_damage("flipped checksum byte", flip_in_checksum);
  check_damage("flipped length byte", flip_in_length);
  check_damage("bad magic", flip_magic);
  check_damage("other format version", bump_version);
  check_damage("truncated to half", truncate_half);
  check_damage("last byte missing", truncate_last_byte);
  check_damage("truncated in the header", truncate_in_header);
  check_damage("empty file", truncate_empty);
  check_damage("trailing byte", append_byte);
}

/* Several processes put overlapping key sets and read everything back while
 * the others write; no reader may ever see a torn or wrong entry. */
static void test_concurrent_processes(void) {
  enum { PROCS = 4, KEYS = 120 };
  tt_disk_cache *c = open_fresh("concurrent", 64 << 20);
  if (!c) return;
  char root[512];
  snprintf(root, sizeof root, "%s/concurrent", g_root);
  pid_t pids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    pids[p] = fork();
    if (pids[p] == 0) {
      tt_disk_cache_close(c); /* the parent's handle, copied by fork */
      tt_disk_cache *mine = NULL;
      tt_error *err = tt_disk_cache_open(root, "test-plugin;xla=1", 64 << 20, &mine);
      int bad = err != NULL;
      tt_error_free(err);
      for (int round = 0; round < 3 && mine; round++)
        for (int i = p * KEYS / 4; i < p * KEYS / 4 + KEYS / 2; i++) {
          int k = i % KEYS; /* process p writes keys [p*30, p*30+60): overlapping */
          char key[32];
          snprintf(key, sizeof key, "key-%d", k);
          size_t len;
          unsigned char *blob = make_blob(k, &len);
          err = tt_disk_cache_put(mine, key, strlen(key), blob, len);
          bad += err != NULL;
          tt_error_free(err);
          /* read a key some other process is writing right now */
          int o = (k + 37) % KEYS;
          snprintf(key, sizeof key, "key-%d", o);
          free(blob);
          blob = make_blob(o, &len);
          void *got = NULL;
          size_t got_len = 0;
          err = tt_disk_cache_get(mine, key, strlen(key), &got, &got_len);
          bad += err != NULL || (got && (got_len != len || memcmp(got, blob, len) != 0));
          tt_error_free(err);
          free(got);
          free(blob);
        }
      if (mine) bad += tt_disk_cache_get_stats(mine).corrupt_removed != 0;
      tt_disk_cache_close(mine);
      _exit(bad ? 1 : 0);
    }
  }
  int failures = 0;
  for (int p = 0; p < PROCS; p++) {
    int status = 0;
    waitpid(pids[p], &status, 0);
    failures += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  CHECK(failures == 0, "%d writer processes saw an error or a wrong entry", failures);
  int all_ok = 0;
  for (int k = 0; k < KEYS; k++) {
    char key[32];
    snprintf(key, sizeof key, "key-%d", k);
    size_t len;
    unsigned char *blob = make_blob(k, &len);
    all_ok += get_equals(c, key, blob, len);
    free(blob);
  }
  CHECK(all_ok == KEYS, "%d of %d entries readable and valid afterwards", all_ok, KEYS);
  CHECK(tt_disk_cache_get_stats(c).corrupt_removed == 0, "no corrupt entries");
  CHECK(count_files(tt_disk_cache_dir(c), TT_DISK_CACHE_TMP_PREFIX) == 0, "no temp files left");
  tt_disk_cache_close(c);
}

static void set_mtime(const char *path, time_t t) {
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  utimensat(AT_FDCWD, path, ts, 0);
}

static void test_lru_eviction(void) {
  /* Entries of 40 + 1 + 960 = 1001 bytes; cap 3500: three fit, a fourth
   * triggers eviction down to 3150, i.e. exactly one entry goes. */
  tt_disk_cache *c = open_fresh("lru", 3500);
  if (!c) return;
  unsigned char blob[960];
  memset(blob, 7, sizeof blob);
  time_t now = time(NULL);
  const char *keys[4] = {"A", "B", "C", "D"};
  char paths[4][1024];
  for (int i = 0; i < 4; i++) entry_path(c, keys[i], paths[i], sizeof paths[i]);
  for (int i = 0; i < 3; i++) {
    CHECK_OK(tt_disk_cache_put(c, keys[i], 1, blob, sizeof blob));
    set_mtime(paths[i], now - 300 + 100 * i); /* A oldest, then B, then C */
  }
  CHECK(get_equals(c, "A", blob, sizeof blob), "hit on A"); /* touches A: now newest */
  CHECK(tt_disk_cache_get_stats(c).evictions == 0, "no eviction under the cap");
  CHECK_OK(tt_disk_cache_put(c, "D", 1, blob, sizeof blob));
  CHECK(exists(paths[0]), "A (recently used) kept");
  CHECK(!exists(paths[1]), "B (least recently used) evicted");
  CHECK(exists(paths[2]) && exists(paths[3]), "C and D kept");
  tt_disk_cache_stats st = tt_disk_cache_get_stats(c);
  CHECK(st.evictions == 1 && st.entries == 3 && st.bytes_on_disk == 3003,
        "evictions %llu entries %llu bytes %llu", (unsigned long long)st.evictions,
        (unsigned long long)st.entries, (unsigned long long)st.bytes_on_disk);

  /* Stale temp files (a writer died) are removed by a scan; fresh ones are
   * writes in progress and stay. */
  char stale[1100], fresh[1100];
  snprintf(stale, sizeof stale, "%s/%sdead-1", tt_disk_cache_dir(c), TT_DISK_CACHE_TMP_PREFIX);
  snprintf(fresh, sizeof fresh, "%s/%slive-1", tt_disk_cache_dir(c), TT_DISK_CACHE_TMP_PREFIX);
  FILE *f1 = fopen(stale, "w"), *f2 = fopen(fresh, "w");
  if (f1) fclose(f1);
  if (f2) fclose(f2);
  set_mtime(stale, now - 3600);
  CHECK_OK(tt_disk_cache_put(c, "E", 1, blob, sizeof blob)); /* over the cap again: scan */
  CHECK(!exists(stale), "stale temp file removed");
  CHECK(exists(fresh), "young temp file kept");
  CHECK(!exists(paths[2]) && exists(paths[0]), "C evicted next, A still kept");
  unlink(fresh);

  /* An entry bigger than the cap is refused, not stored then evicted. */
  unsigned char big[4000] = {0};
  tt_error *err = tt_disk_cache_put(c, "F", 1, big, sizeof big);
  CHECK(err && strstr(tt_error_message(err), "exceeds"), "oversize put refused: %s",
        tt_error_message(err));
  tt_error_free(err);
  tt_disk_cache_close(c);
}

/* The cap covers every fingerprint under the root: entries of an old build,
 * never touched again, are evicted before the current build's. */
static void test_eviction_across_fingerprints(void) {
  char root[512];
  snprintf(root, sizeof root, "%s/builds", g_root);
  rm_rf(root);
  tt_disk_cache *old_build = NULL, *new_build = NULL;
  CHECK_OK(tt_disk_cache_open(root, "plugin;core=old", 3500, &old_build));
  if (!old_build) return;
  unsigned char blob[960];
  memset(blob, 3, sizeof blob);
  time_t now = time(NULL);
  char old_paths[2][1024];
  for (int i = 0; i < 2; i++) {
    const char *key = i ? "Y" : "X";
    CHECK_OK(tt_disk_cache_put(old_build, key, 1, blob, sizeof blob));
    entry_path(old_build, key, old_paths[i], sizeof old_paths[i]);
    set_mtime(old_paths[i], now - 86400 + i);
  }
  tt_disk_cache_close(old_build);
  CHECK_OK(tt_disk_cache_open(root, "plugin;core=new", 3500, &new_build));
  if (!new_build) return;
  CHECK(tt_disk_cache_get_stats(new_build).entries == 2, "open counts the whole root");
  CHECK_OK(tt_disk_cache_put(new_build, "A", 1, blob, sizeof blob));
  CHECK_OK(tt_disk_cache_put(new_build, "B", 1, blob, sizeof blob)); /* 4004 > 3500: evict */
  CHECK(!exists(old_paths[0]) && exists(old_paths[1]), "oldest entry of the old build evicted");
  CHECK(get_equals(new_build, "A", blob, sizeof blob) && get_equals(new_build, "B", blob, sizeof blob),
        "current build's entries kept");
  tt_disk_cache_stats st = tt_disk_cache_get_stats(new_build);
  CHECK(st.evictions == 1 && st.entries == 3, "evictions %llu entries %llu",
        (unsigned long long)st.evictions, (unsigned long long)st.entries);
  tt_disk_cache_close(new_build);
}

static void test_io_errors(void) {
  tt_disk_cache *c = open_fresh("ioerr", 1 << 20);
  if (!c) return;
  CHECK_OK(tt_disk_cache_put(c, "k", 1, "v", 1));
  /* The directory disappears under us (another user ran `cache clear`). */
  char root[512];
  snprintf(root, sizeof root, "%s/ioerr", g_root);
  rm_rf(root);
  tt_error *err = tt_disk_cache_put(c, "k2", 2, "v", 1);
  CHECK(err && tt_error_message(err)[0], "put into a missing directory fails with a message");
  tt_error_free(err);
  CHECK(get_misses(c, "k"), "get from a missing directory is a miss");
  tt_disk_cache_close(c);
  /* A root that is a regular file cannot be opened. */
  char file_root[600];
  snprintf(file_root, sizeof file_root, "%s/plainfile", g_root);
  FILE *f = fopen(file_root, "w");
  if (f) fclose(f);
  err = tt_disk_cache_open(file_root, "fp", 1 << 20, &c);
  CHECK(err && c == NULL, "open under a regular file fails");
  tt_error_free(err);
  err = tt_disk_cache_open(g_root, "", 1 << 20, &c);
  CHECK(err && c == NULL, "empty fingerprint refused");
  tt_error_free(err);
}

static void test_code_id(void) {
  char a[33] = {0}, b[33] = {0};
  double t0 = now_s();
  CHECK_OK(tt_disk_cache_code_id(a));
  double first = now_s() - t0;
  CHECK_OK(tt_disk_cache_code_id(b));
  CHECK(strlen(a) == 32 && !strcmp(a, b), "code id '%s' stable", a);
  /* This binary holds the core statically: its id comes from its build-id
   * note (`readelf -n`), as ld writes one by default here. */
  char exe[512] = {0}, cmd[600];
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) return;
  snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", exe);
  FILE *f = popen(cmd, "r");
  char line[256], want[33] = {0};
  while (f && fgets(line, sizeof line, f)) {
    char *id = strstr(line, "Build ID: ");
    if (!id) continue;
    id += 10;
    id[strcspn(id, "\n")] = 0;
    unsigned char raw[64], h[16];
    size_t n = 0;
    for (; id[2 * n] && id[2 * n + 1] && n < sizeof raw; n++) sscanf(id + 2 * n, "%2hhx", &raw[n]);
    tt_blake2b_state s;
    tt_blake2b_init(&s, 16);
    tt_blake2b_update(&s, "gnu-build-id:", 13);
    tt_blake2b_update(&s, raw, n);
    tt_blake2b_final(&s, h);
    for (int i = 0; i < 16; i++) sprintf(want + 2 * i, "%02x", h[i]);
  }
  if (f) pclose(f);
  CHECK(want[0] && !strcmp(a, want), "code id %s is from the build id (%s)", a, want);
  printf("  code id of a %s binary: %.1f ms\n", "test", first * 1e3);
}

/* Parses a TORCH_TPU_CACHE_MAX_BYTES value with the settings' parser. */
static bool parse_size(const char *text, int64_t *bytes) {
  tt_error *err = tt_setting_parse(TT_SETTING_CACHE_MAX_BYTES, text, bytes);
  bool ok = err == NULL;
  tt_error_free(err);
  return ok;
}

static void test_environment(void) {
  int64_t b = 0;
  CHECK(parse_size("10G", &b) && b == (INT64_C(10) << 30), "10G");
  CHECK(parse_size("10GiB", &b) && b == (INT64_C(10) << 30), "10GiB");
  CHECK(parse_size(" 10gb ", &b) && b == (INT64_C(10) << 30), "10gb");
  CHECK(parse_size("512m", &b) && b == (INT64_C(512) << 20), "512m");
  CHECK(parse_size("12345", &b) && b == 12345, "plain bytes");
  CHECK(parse_size("10B", &b) && b == 10, "10B");
  CHECK(parse_size("", &b) && b == (INT64_C(10) << 30), "empty: the default");
  const char *bad[] = {"0", "G", "10X", "-1", "10iB", "99999999999999999999", "1 G", "8E"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK(!parse_size(bad[i], &b), "'%s' refused", bad[i]);

  char root[512];
  snprintf(root, sizeof root, "%s/fromenv", g_root);
  setenv("TORCH_TPU_CACHE_DIR", root, 1);
  setenv("TORCH_TPU_CACHE_MAX_BYTES", "1M", 1);
  tt_settings_reset(); /* settings are read once */
  tt_disk_cache *c = NULL;
  CHECK_OK(tt_disk_cache_open_default("fp", &c));
  CHECK(c && !strncmp(tt_disk_cache_dir(c), root, strlen(root)), "TORCH_TPU_CACHE_DIR used");
  static unsigned char big[2 << 20];
  tt_error *err = c ? tt_disk_cache_put(c, "k", 1, big, sizeof big) : NULL;
  CHECK(err != NULL, "TORCH_TPU_CACHE_MAX_BYTES=1M caps entries");
  tt_error_free(err);
  tt_disk_cache_close(c);
  setenv("TORCH_TPU_CACHE_MAX_BYTES", "lots", 1);
  tt_settings_reset();
  c = NULL;
  err = tt_disk_cache_open_default("fp", &c);
  CHECK(err && strstr(tt_error_message(err), "TORCH_TPU_CACHE_MAX_BYTES") && !c,
        "bad size names the variable: %s", tt_error_message(err));
  tt_error_free(err);
  setenv("TORCH_TPU_CACHE", "off", 1);
  tt_settings_reset();
  c = (tt_disk_cache *)1;
  CHECK_OK(tt_disk_cache_open_default("fp", &c));
  CHECK(c == NULL, "TORCH_TPU_CACHE=0 disables");
  unsetenv("TORCH_TPU_CACHE");
  unsetenv("TORCH_TPU_CACHE_DIR");
  unsetenv("TORCH_TPU_CACHE_MAX_BYTES");
  tt_settings_reset();
}

/* The inspection calls `python -m torch_tpu.cache` uses: list, check, clear. */
static void test_inspection(void) {
  tt_disk_cache *a = open_fresh("inspect", 1 << 20), *b = NULL;
  char root[512], path[1024];
  snprintf(root, sizeof root, "%s/inspect", g_root);
  CHECK_OK(tt_disk_cache_open(root, "another plugin", 1 << 20, &b));
  for (int i = 0; a && b && i < 3; i++) {
    char key[16];
    snprintf(key, sizeof key, "key-%d", i);
    CHECK_OK(tt_disk_cache_put(a, key, strlen(key), "blob", 4));
    if (i < 2) CHECK_OK(tt_disk_cache_put(b, key, strlen(key), "longer blob", 11));
  }
  tt_disk_cache_listing l;
  CHECK_OK(tt_disk_cache_list(root, NULL, &l));
  CHECK(l.n_dirs == 2, "two fingerprint dirs: %zu", l.n_dirs);
  size_t entries = 0;
  for (size_t i = 0; i < l.n_dirs; i++) entries += l.dirs[i].n_files;
  CHECK(entries == 5, "five entries: %zu", entries);
  CHECK(l.n_dirs < 2 || strcmp(l.dirs[0].name, l.dirs[1].name) < 0, "sorted by name");
  tt_disk_cache_listing_free(&l);
  CHECK_OK(tt_disk_cache_list(root, "another plugin", &l));
  CHECK(l.n_dirs == 1 && !strcmp(l.dirs[0].fingerprint, "another plugin") &&
            l.dirs[0].n_files == 2 && l.dirs[0].bytes == 2 * (TT_DISK_CACHE_HEADER_SIZE + 5 + 11),
        "selected by fingerprint text");
  tt_disk_cache_listing_free(&l);

  if (a) entry_path(a, "key-1", path, sizeof path);
  tt_disk_cache_entry_check c;
  tt_disk_cache_check_entry(path, &c);
  CHECK(!strcmp(c.status, "ok") && c.key_len == 5 && !memcmp(c.key, "key-1", 5) && c.blob_len == 4,
        "check ok: %s", c.status);
  free(c.key);
  FILE *f = fopen(path, "r+b");
  if (f) {
    fseek(f, 45, SEEK_SET);
    fputc('X', f);
    fclose(f);
  }
  tt_disk_cache_check_entry(path, &c);
  CHECK(!strcmp(c.status, "checksum mismatch") && !c.key, "check corrupt: %s", c.status);
  snprintf(path + strlen(path) - 8, 9, "nope.ttc");
  tt_disk_cache_check_entry(path, &c);
  CHECK(!strncmp(c.status, "unreadable: ", 12), "check missing: %s", c.status);

  uint64_t removed = 0, freed = 0;
  CHECK_OK(tt_disk_cache_clear(root, tt_disk_cache_dir(b) + strlen(root) + 1, &removed, &freed));
  CHECK(removed == 2 && freed == 2 * (TT_DISK_CACHE_HEADER_SIZE + 5 + 11), "clear one: %llu",
        (unsigned long long)removed);
  CHECK(!exists(tt_disk_cache_dir(b)), "its directory is gone");
  CHECK_OK(tt_disk_cache_clear(root, NULL, &removed, &freed));
  CHECK(removed == 3, "clear the rest: %llu", (unsigned long long)removed);
  snprintf(path, sizeof path, "%s/missing", g_root);
  CHECK_OK(tt_disk_cache_list(path, NULL, &l));
  CHECK(l.n_dirs == 0, "a missing root is empty");
  tt_disk_cache_listing_free(&l);
  tt_disk_cache_close(a);
  tt_disk_cache_close(b);
}

/* ------------------------------------------------------------ programs */

static const char ADD_MUL[] =
    "module @add_mul {\n"
    "  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
    "    %1 = stablehlo.multiply %0, %b : tensor<4xf32>\n"
    "    return %1 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

/* A program of about the size a fused region or a matmul op gives. */
static const char MLP[] =
    "module @mlp {\n"
    "  func.func public @main(%x: tensor<64x128xf32>, %w: tensor<128x256xf32>,"
    " %b: tensor<256xf32>) -> tensor<64x256xf32> {\n"
    "    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] :"
    " (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>\n"
    "    %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>\n"
    "    %2 = stablehlo.add %0, %1 : tensor<64x256xf32>\n"
    "    %3 = stablehlo.tanh %2 : tensor<64x256xf32>\n"
    "    %4 = stablehlo.exponential %3 : tensor<64x256xf32>\n"
    "    %5 = stablehlo.multiply %4, %2 : tensor<64x256xf32>\n"
    "    return %5 : tensor<64x256xf32>\n"
    "  }\n"
    "}\n";

static tt_program *make_program(tt_runtime *rt, const char *text) {
  tt_program *p = calloc(1, sizeof *p);
  tt_compile_options opts = {.optimization_level = 2, .portable = true};
  double t0 = now_s();
  tt_executable *exe = NULL;
  CHECK_OK(tt_compile(rt, text, strlen(text), &opts, &exe));
  double compile_s = now_s() - t0;
  if (exe) tt_executable_release(tt_pool_install(&p->exe_slot, exe));
  p->text = strdup(text);
  p->n_params = 3;
  p->params = calloc(3, sizeof *p->params);
  p->params[0] = (tt_param_plan){TT_PARAM_STORAGE, 0, -1, TT_F32};
  p->params[1] = (tt_param_plan){TT_PARAM_SCALAR, 2, 1, TT_BF16};
  p->params[2] = (tt_param_plan){TT_PARAM_RNG, 3, -1, TT_U64};
  p->n_outs = 2;
  p->outs = calloc(2, sizeof *p->outs);
  int64_t dims[3] = {4, 0, 7};
  p->outs[0] = (tt_output_plan){TT_OUT_NEW, 0, -1, tt_shape_make(TT_F32, 3, dims)};
  p->outs[1] = (tt_output_plan){TT_OUT_WRITE, 1, 2, tt_shape_make(TT_I64, 0, NULL)};
  p->n_resize = 1;
  p->resize = calloc(1, sizeof *p->resize);
  p->resize[0] = (tt_output_plan){TT_OUT_WRITE, 4, -1, tt_shape_make(TT_BOOL, 1, dims)};
  p->n_value_args = 2;
  p->value_args = calloc(2, sizeof *p->value_args);
  p->value_args[0] = 1;
  p->value_args[1] = 5;
  p->compile_seconds = 0.123456789;
  g_last_compile_s = compile_s;
  return p;
}

static bool same_out_plans(const tt_output_plan *a, const tt_output_plan *b, int n) {
  for (int i = 0; i < n; i++) {
    if (a[i].kind != b[i].kind || a[i].arg != b[i].arg || a[i].elem != b[i].elem ||
        a[i].shape.dtype != b[i].shape.dtype || a[i].shape.ndim != b[i].shape.ndim)
      return false;
    for (int d = 0; d < a[i].shape.ndim; d++)
      if (a[i].shape.dims[d] != b[i].shape.dims[d]) return false;
  }
  return true;
}

static bool same_plan(const tt_program *a, const tt_program *b) {
  if (a->n_params != b->n_params || a->n_outs != b->n_outs || a->n_resize != b->n_resize ||
      a->n_value_args != b->n_value_args ||
      a->declined != b->declined || a->compile_seconds != b->compile_seconds)
    return false;
  for (int i = 0; i < a->n_params; i++)
    if (a->params[i].kind != b->params[i].kind || a->params[i].arg != b->params[i].arg ||
        a->params[i].elem != b->params[i].elem || a->params[i].dtype != b->params[i].dtype)
      return false;
  for (int i = 0; i < a->n_value_args; i++)
    if (a->value_args[i] != b->value_args[i]) return false;
  if ((a->decline_message == NULL) != (b->decline_message == NULL)) return false;
  if (a->decline_message && strcmp(a->decline_message, b->decline_message)) return false;
  return same_out_plans(a->outs, b->outs, a->n_outs) &&
         same_out_plans(a->resize, b->resize, a->n_resize);
}

static void run_add_mul(tt_runtime *rt, tt_executable *exe) {
  const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40.5f};
  const int64_t d4[1] = {4};
  tt_buffer *a = NULL, *b = NULL, *out = NULL;
  CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, d4, 1, x, &a));
  CHECK_OK(tt_buffer_from_host(rt, 0, TT_F32, d4, 1, y, &b));
  tt_buffer *args[2] = {a, b};
  CHECK_OK(tt_execute(exe, 0, args, 2, &out, 1));
  tt_buffer_release(a);
  tt_buffer_release(b);
  float r[4] = {0};
  if (out) CHECK_OK(tt_buffer_to_host(out, r, sizeof r));
  for (int i = 0; i < 4; i++)
    CHECK(r[i] == (x[i] + y[i]) * y[i], "deserialized result[%d] = %g", i, (double)r[i]);
  tt_buffer_release(out);
}

static void test_program_round_trip(tt_runtime *rt, int iters) {
  tt_program *p = make_program(rt, ADD_MUL);
  if (!p->exe_slot.exe) {
    tt_program_free(p);
    return;
  }
  void *blob = NULL;
  size_t len = 0;
  CHECK_OK(tt_program_serialize(p, true, &blob, &len));
  tt_program *q = NULL;
  CHECK_OK(tt_program_deserialize(rt, blob, len, &q));
  if (q) {
    CHECK(same_plan(p, q), "plan survives the round trip");
    CHECK(q->text && !strcmp(q->text, ADD_MUL), "text included");
    CHECK(q->exe_slot.exe && tt_executable_num_outputs(q->exe_slot.exe) == 1, "executable loaded");
    if (q->exe_slot.exe) run_add_mul(rt, q->exe_slot.exe);
  }
  tt_program_free(q);

  /* Through the disk cache, as a later process would. */
  tt_disk_cache *c = open_fresh("programs", 1 << 26);
  if (c) {
    CHECK_OK(tt_disk_cache_put(c, "add_mul.Tensor|f32[4]", 21, blob, len));
    void *back = NULL;
    size_t back_len = 0;
    CHECK_OK(tt_disk_cache_get(c, "add_mul.Tensor|f32[4]", 21, &back, &back_len));
    q = NULL;
    if (back) CHECK_OK(tt_program_deserialize(rt, back, back_len, &q));
    CHECK(q && q->exe_slot.exe, "program from disk");
    if (q && q->exe_slot.exe) run_add_mul(rt, q->exe_slot.exe);
    tt_program_free(q);
    free(back);
  }

  /* Every truncation and a wrong version are errors, never a crash. */
  int refused = 0, tried = 0;
  for (size_t cut = 0; cut < len; cut += (cut < 300 ? 1 : 97), tried++) {
    q = NULL;
    tt_error *err = tt_program_deserialize(rt, blob, cut, &q);
    refused += err != NULL && q == NULL;
    tt_error_free(err);
    tt_program_free(q);
  }
  CHECK(refused == tried, "%d of %d truncated blobs refused", refused, tried);
  unsigned char *bad = malloc(len);
  /* Any single flipped bit in the plan (before the executable bytes, which
   * the disk cache's checksum guards) loads or is refused; never a crash. */
  size_t exe_len = 0;
  if (p->exe_slot.exe) {
    void *exe_bytes = NULL;
    tt_error_free(tt_executable_serialize(p->exe_slot.exe, &exe_bytes, &exe_len));
    free(exe_bytes);
  }
  int handled = 0, plan_bytes = (int)(len - exe_len - 8);
  for (int i = 0; i < plan_bytes; i++) {
    memcpy(bad, blob, len);
    bad[i] ^= (unsigned char)(1u << (i % 8));
    q = NULL;
    tt_error *e = tt_program_deserialize(rt, bad, len, &q);
    handled += (e != NULL) != (q != NULL);
    tt_error_free(e);
    tt_program_free(q);
  }
  CHECK(plan_bytes > 100 && handled == plan_bytes, "%d of %d bit flips handled", handled,
        plan_bytes);
  memcpy(bad, blob, len);
  bad[8] ^= 1; /* version */
  tt_error *err = tt_program_deserialize(rt, bad, len, &q);
  CHECK(err && strstr(tt_error_message(err), "version"), "wrong version: %s", tt_error_message(err));
  tt_error_free(err);
  memcpy(bad, blob, len);
  bad[8 + 4 + 4 + 4 + 8 + 4] = 9; /* first parameter's kind, after n_params */
  err = tt_program_deserialize(rt, bad, len, &q);
  CHECK(err && strstr(tt_error_message(err), "parameter kind"), "bad kind: %s",
        tt_error_message(err));
  tt_error_free(err);
  free(bad);
  free(blob);

  /* Without text; a declined program (no executable) with its message. */
  CHECK_OK(tt_program_serialize(p, false, &blob, &len));
  q = NULL;
  CHECK_OK(tt_program_deserialize(rt, blob, len, &q));
  CHECK(q && q->text == NULL && q->exe_slot.exe, "text omitted");
  tt_program_free(q);
  free(blob);
  tt_pool_entry_clear(&p->exe_slot);
  p->declined = TT_ERR_NOT_IMPLEMENTED;
  p->decline_message = strdup("cummax: integer overflow semantics differ");
  CHECK_OK(tt_program_serialize(p, false, &blob, &len));
  q = NULL;
  CHECK_OK(tt_program_deserialize(rt, blob, len, &q));
  CHECK(q && same_plan(p, q) && q->exe_slot.exe == NULL, "declined value-dependent program round trip");
  tt_program_free(q);
  free(blob);
  tt_program_free(p);

  /* Figures for a typical executable blob (the MLP-sized program). */
  p = make_program(rt, MLP);
  if (!p->exe_slot.exe || !c) {
    tt_program_free(p);
    tt_disk_cache_close(c);
    return;
  }
  CHECK_OK(tt_program_serialize(p, false, &blob, &len));
  double t0 = now_s();
  for (int i = 0; i < iters; i++) {
    char key[32];
    snprintf(key, sizeof key, "mlp-%d", i);
    tt_error_free(tt_disk_cache_put(c, key, strlen(key), blob, len));
  }
  double put_s = (now_s() - t0) / iters;
  t0 = now_s();
  void *back = NULL;
  size_t back_len = 0;
  for (int i = 0; i < iters; i++) {
    char key[32];
    snprintf(key, sizeof key, "mlp-%d", i);
    free(back);
    back = NULL;
    tt_error_free(tt_disk_cache_get(c, key, strlen(key), &back, &back_len));
  }
  double get_s = (now_s() - t0) / iters;
  CHECK(back && back_len == len, "timed gets hit");
  t0 = now_s();
  q = NULL;
  for (int i = 0; i < iters && back; i++) {
    tt_program_free(q);
    q = NULL;
    tt_error_free(tt_program_deserialize(rt, back, back_len, &q));
  }
  double deser_s = (now_s() - t0) / iters;
  CHECK(q && q->exe_slot.exe, "timed deserialize");
  printf("  program blob %zu bytes (compile %.1f ms): put %.3f ms, get %.3f ms, "
         "deserialize %.3f ms\n",
         len, g_last_compile_s * 1e3, put_s * 1e3, get_s * 1e3, deser_s * 1e3);
  tt_program_free(q);
  free(back);
  free(blob);
  tt_program_free(p);
  tt_disk_cache_close(c);
}

/* ------------------------------------------------------------ CLI modes */

static int fill_mode(const char *dir, const char *fp, int n) {
  tt_disk_cache *c = NULL;
  tt_error *err = tt_disk_cache_open(dir, fp, UINT64_C(1) << 30, &c);
  for (int i = 0; i < n && !err; i++) {
    char key[32];
    snprintf(key, sizeof key, "key-%d", i);
    size_t len;
    unsigned char *blob = make_blob(i, &len);
    err = tt_disk_cache_put(c, key, strlen(key), blob, len);
    free(blob);
  }
  if (c) printf("%s\n", tt_disk_cache_dir(c));
  tt_disk_cache_close(c);
  if (err) fprintf(stderr, "fill: %s\n", tt_error_message(err));
  int rc = err ? 1 : 0;
  tt_error_free(err);
  return rc;
}

static int get_mode(const char *dir, const char *fp, const char *key) {
  tt_disk_cache *c = NULL;
  tt_error *err = tt_disk_cache_open(dir, fp, UINT64_C(1) << 30, &c);
  void *blob = NULL;
  size_t len = 0;
  if (!err) err = tt_disk_cache_get(c, key, strlen(key), &blob, &len);
  if (!err && blob) {
    unsigned char h[8];
    tt_blake2b(blob, len, h, 8);
    printf("hit %zu ", len);
    for (int i = 0; i < 8; i++) printf("%02x", h[i]);
    printf("\n");
  } else if (!err) {
    printf("miss\n");
  }
  free(blob);
  tt_disk_cache_close(c);
  if (err) fprintf(stderr, "get: %s\n", tt_error_message(err));
  int rc = err ? 1 : 0;
  tt_error_free(err);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--fill")) return fill_mode(argv[2], argv[3], atoi(argv[4]));
  if (argc == 5 && !strcmp(argv[1], "--get")) return get_mode(argv[2], argv[3], argv[4]);
  const char *plugin = argc > 1 ? argv[1] : getenv("TORCH_TPU_PJRT_PLUGIN");
  int iters = getenv("TT_BENCH_ITERS") ? atoi(getenv("TT_BENCH_ITERS")) : 200;
  if (iters < 1) iters = 1;
  snprintf(g_root, sizeof g_root, "%s/tt_disk_cache_test.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_root)) {
    perror("mkdtemp");
    return 1;
  }
  test_blake2b_vectors();
  test_round_trip_and_miss();
  test_collision_is_a_miss();
  test_corrupt_and_truncated();
  test_concurrent_processes();
  test_lru_eviction();
  test_eviction_across_fingerprints();
  test_io_errors();
  test_environment();
  test_inspection();
  test_code_id();
  if (!plugin) {
    fprintf(stderr, "FAIL: no plugin given (argv[1] or TORCH_TPU_PJRT_PLUGIN)\n");
    g_failed++;
  } else {
    tt_runtime *rt = NULL;
    CHECK_OK(tt_runtime_open(plugin, 1, &rt));
    if (rt) test_program_round_trip(rt, iters);
    tt_runtime_close(rt);
  }
  rm_rf(g_root);
  printf("disk_cache: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
