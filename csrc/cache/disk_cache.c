#include "cache/disk_cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/blake2b.h"
#include "core/bytes_le.h"
#include "core/settings.h"

/* Temp files of other processes younger than this are writes in progress. */
#define STALE_TMP_SECONDS 60
/* Rescan the directory after this many of our own puts even under the cap:
 * other processes' writes are only seen by a scan. */
#define PUTS_PER_SCAN 64

struct tt_disk_cache {
  char *root; /* the cap covers every fingerprint directory in it */
  char *dir;  /* root/<fingerprint hex>: where this handle reads and writes */
  uint64_t max_bytes;
  pthread_mutex_t lock; /* guards stats and puts_since_scan */
  pthread_mutex_t scan_lock; /* one scan at a time; others skip theirs */
  tt_disk_cache_stats stats;
  unsigned puts_since_scan;
  unsigned tmp_counter;
};

/* ------------------------------------------------------------ helpers */

static void to_hex(const unsigned char *b, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = 0;
}

void tt_disk_cache_key_name(const void *key, size_t key_len, char out[33]) {
  unsigned char h[16];
  tt_blake2b(key, key_len, h, sizeof h);
  to_hex(h, sizeof h, out);
}

static void checksum(const unsigned char *header, const void *key, size_t key_len,
                     const void *blob, size_t blob_len, unsigned char out[8]) {
  tt_blake2b_state s;
  tt_blake2b_init(&s, 8);
  tt_blake2b_update(&s, header, 32);
  tt_blake2b_update(&s, key, key_len);
  tt_blake2b_update(&s, blob, blob_len);
  tt_blake2b_final(&s, out);
}

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *p = malloc(la + lb + 2);
  if (!p) return NULL;
  memcpy(p, a, la);
  p[la] = '/';
  memcpy(p + la + 1, b, lb + 1);
  return p;
}

static tt_error *oom(void) { return tt_error_new(TT_ERR_OUT_OF_MEMORY, "out of host memory"); }

static tt_error *mkdir_p(const char *path) {
  char *p = strdup(path);
  if (!p) return oom();
  tt_error *err = NULL;
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s != 0) continue;
    char saved = *s;
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      err = tt_error_new(TT_ERR_RUNTIME, "cannot create cache directory %s: %s", p, strerror(errno));
      break;
    }
    *s = saved;
    if (!saved) break;
  }
  free(p);
  if (err) return err;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return tt_error_new(TT_ERR_RUNTIME, "cache directory %s is not a directory", path);
  return NULL;
}

static bool write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    len -= (size_t)w;
  }
  return true;
}

/* Reads exactly len bytes at offset 0; false with errno set on failure, or
 * with errno 0 if the file turned out shorter. */
static bool read_all(int fd, void *data, size_t len) {
  char *p = data;
  size_t got = 0;
  while (got < len) {
    ssize_t r = pread(fd, p + got, len - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) {
      errno = 0;
      return false;
    }
    got += (size_t)r;
  }
  return true;
}

static bool is_entry_name(const char *name) {
  size_t n = strlen(name);
  if (n != 32 + strlen(TT_DISK_CACHE_SUFFIX) || strcmp(name + 32, TT_DISK_CACHE_SUFFIX) != 0)
    return false;
  for (int i = 0; i < 32; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

/* Writes FINGERPRINT (the full text behind the directory name) if absent, so
 * `python -m torch_tpu.cache stats` can say which plugin a directory is for. */
static void write_fingerprint_file(const char *dir, const char *fingerprint) {
  char *path = join(dir, TT_DISK_CACHE_FINGERPRINT_FILE);
  if (!path) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    bool ok = write_all(fd, fingerprint, strlen(fingerprint)) && write_all(fd, "\n", 1);
    close(fd);
    if (!ok) unlink(path);
  }
  free(path);
}

/* ------------------------------------------------------------ scan / evict */

typedef struct {
  char name[80]; /* "<fingerprint dir>/<entry>" relative to the root */
  uint64_t size;
  struct timespec mtime;
} scanned;

static int older_first(const void *pa, const void *pb) {
  const scanned *a = pa, *b = pb;
  if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
  if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
  return strcmp(a->name, b->name);
}

static bool is_hex32(const char *name) {
  if (strlen(name) != 32) return false;
  for (int i = 0; i < 32; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

typedef struct {
  scanned *list;
  size_t n, cap;
  uint64_t total;
  bool truncated; /* out of memory: totals are a lower bound */
} scan_result;

/* Adds one fingerprint directory's entries; removes its stale temp files. */
static void scan_fingerprint_dir(int root_fd, const char *fp_name, time_t now, scan_result *r) {
  int fd = openat(root_fd, fp_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL && !r->truncated) {
    struct stat st;
    if (strncmp(de->d_name, TT_DISK_CACHE_TMP_PREFIX, strlen(TT_DISK_CACHE_TMP_PREFIX)) == 0) {
      if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          now - st.st_mtim.tv_sec > STALE_TMP_SECONDS)
        unlinkat(fd, de->d_name, 0); /* left by a process that died mid-write */
      continue;
    }
    if (!is_entry_name(de->d_name)) continue;
    if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (r->n == r->cap) {
      size_t nc = r->cap ? r->cap * 2 : 256;
      scanned *grown = realloc(r->list, nc * sizeof *grown);
      if (!grown) {
        r->truncated = true;
        break;
      }
      r->list = grown;
      r->cap = nc;
    }
    snprintf(r->list[r->n].name, sizeof r->list[r->n].name, "%.32s/%.36s", fp_name, de->d_name);
    r->list[r->n].size = (uint64_t)st.st_size;
    r->list[r->n].mtime = st.st_mtim;
    r->total += (uint64_t)st.st_size;
    r->n++;
  }
  closedir(d);
}

/* Sums the entries of every fingerprint directory under the root (the cap
 * covers them all, so entries of old plugin or torch_tpu builds, never used
 * again, are the first to go), removes stale temp files, and when over the
 * cap deletes least-recently-used entries until under 90% of it. Best
 * effort: files vanishing under us (other processes evicting) are fine. */
static void scan_and_evict(tt_disk_cache *c) {
  if (pthread_mutex_trylock(&c->scan_lock) != 0) return; /* another thread is on it */
  DIR *d = opendir(c->root);
  if (!d) {
    pthread_mutex_unlock(&c->scan_lock);
    return;
  }
  int root_fd = dirfd(d);
  time_t now = time(NULL);
  scan_result r = {0};
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (is_hex32(de->d_name)) scan_fingerprint_dir(root_fd, de->d_name, now, &r);
  uint64_t evicted = 0, total = r.total;
  if (total > c->max_bytes) {
    qsort(r.list, r.n, sizeof *r.list, older_first);
    uint64_t target = c->max_bytes / 10 * 9;
    for (size_t i = 0; i < r.n && total > target; i++) {
      if (unlinkat(root_fd, r.list[i].name, 0) == 0) evicted++;
      else if (errno != ENOENT) continue; /* could not delete: it still counts */
      total -= r.list[i].size;
      r.list[i].size = UINT64_MAX; /* marks it gone */
    }
  }
  size_t remaining = 0;
  for (size_t i = 0; i < r.n; i++) remaining += r.list[i].size != UINT64_MAX;
  closedir(d);
  free(r.list);
  pthread_mutex_lock(&c->lock);
  c->stats.evictions += evicted;
  c->stats.bytes_on_disk = total;
  c->stats.entries = remaining;
  c->puts_since_scan = 0;
  pthread_mutex_unlock(&c->lock);
  pthread_mutex_unlock(&c->scan_lock);
}

/* ------------------------------------------------------------ code id */

static pthread_once_t code_id_once = PTHREAD_ONCE_INIT;
static char code_id[33];       /* written once under code_id_once */
static char code_id_error[256]; /* or why it could not be computed */

/* The GNU build-id note of the loaded object containing `addr`: a hash the
 * linker computed over the binary's contents, free to read from memory. */
typedef struct {
  uintptr_t addr;
  const unsigned char *id;
  size_t id_len;
} build_id_search;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  build_id_search *q = data;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    contains = ph->p_type == PT_LOAD && q->addr >= start && q->addr < start + ph->p_memsz;
  }
  if (!contains) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      const unsigned char *name = p + sizeof *nh;
      const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
          nh->n_descsz > 0) {
        q->id = desc;
        q->id_len = nh->n_descsz;
        return 1;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return 1; /* our object, without a build id */
}

/* Without a build id (linked with --build-id=none): hash the file itself. */
static void hash_own_file(tt_blake2b_state *s) {
  Dl_info info;
  if (!dladdr((void *)&tt_disk_cache_code_id, &info) || !info.dli_fname) {
    snprintf(code_id_error, sizeof code_id_error, "cannot find the torch_tpu core binary");
    return;
  }
  int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
  unsigned char *buf = malloc(1 << 20);
  if (fd < 0 || !buf) {
    snprintf(code_id_error, sizeof code_id_error, "cannot read %s: %s", info.dli_fname,
             fd < 0 ? strerror(errno) : "out of memory");
    if (fd >= 0) close(fd);
    free(buf);
    return;
  }
  for (;;) {
    ssize_t r = read(fd, buf, 1 << 20);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      snprintf(code_id_error, sizeof code_id_error, "cannot read %s: %s", info.dli_fname,
               strerror(errno));
      break;
    }
    if (r == 0) break;
    tt_blake2b_update(s, buf, (size_t)r);
  }
  close(fd);
  free(buf);
}

static void compute_code_id(void) {
  build_id_search q = {(uintptr_t)&tt_disk_cache_code_id, NULL, 0};
  dl_iterate_phdr(find_build_id, &q);
  tt_blake2b_state s;
  tt_blake2b_init(&s, 16);
  if (q.id) {
    tt_blake2b_update(&s, "gnu-build-id:", 13);
    tt_blake2b_update(&s, q.id, q.id_len);
  } else {
    hash_own_file(&s);
    if (code_id_error[0]) return;
  }
  unsigned char h[16];
  tt_blake2b_final(&s, h);
  to_hex(h, sizeof h, code_id);
}

tt_error *tt_disk_cache_code_id(char out[33]) {
  pthread_once(&code_id_once, compute_code_id);
  if (!code_id[0]) return tt_error_new(TT_ERR_RUNTIME, "%s", code_id_error);
  memcpy(out, code_id, sizeof code_id);
  return NULL;
}

/* ------------------------------------------------------------ open / close */

tt_error *tt_disk_cache_open(const char *root_dir, const char *fingerprint, uint64_t max_bytes,
                             tt_disk_cache **out) {
  if (!out) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_disk_cache_open: NULL out");
  *out = NULL;
  if (!root_dir || !*root_dir || !fingerprint || !*fingerprint)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "tt_disk_cache_open: empty cache directory or fingerprint");
  if (max_bytes == 0)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_disk_cache_open: max_bytes must be > 0");
  char fp_hex[33];
  tt_disk_cache_key_name(fingerprint, strlen(fingerprint), fp_hex);
  tt_disk_cache *c = calloc(1, sizeof *c);
  if (!c) return oom();
  c->dir = join(root_dir, fp_hex);
  c->root = strdup(root_dir);
  if (!c->dir || !c->root) {
    free(c->dir);
    free(c->root);
    free(c);
    return oom();
  }
  c->max_bytes = max_bytes;
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->scan_lock, NULL);
  tt_error *err = mkdir_p(c->dir);
  if (err) {
    tt_disk_cache_close(c);
    return err;
  }
  write_fingerprint_file(c->dir, fingerprint);
  scan_and_evict(c);
  *out = c;
  return NULL;
}

tt_error *tt_disk_cache_default_root(char *out, size_t out_size) {
  return tt_setting_path(TT_SETTING_CACHE_DIR, out, out_size);
}

tt_error *tt_disk_cache_open_default(const char *fingerprint, tt_disk_cache **out) {
  if (!out) return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_disk_cache_open_default: NULL out");
  *out = NULL;
  bool enabled = true;
  TT_TRY(tt_setting_bool(TT_SETTING_CACHE, &enabled));
  if (!enabled) return NULL;
  int64_t max_bytes = 0;
  TT_TRY(tt_setting_int(TT_SETTING_CACHE_MAX_BYTES, &max_bytes));
  char root[4096];
  TT_TRY(tt_disk_cache_default_root(root, sizeof root));
  return tt_disk_cache_open(root, fingerprint, (uint64_t)max_bytes, out);
}

void tt_disk_cache_close(tt_disk_cache *c) {
  if (!c) return;
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->scan_lock);
  free(c->dir);
  free(c->root);
  free(c);
}

const char *tt_disk_cache_dir(const tt_disk_cache *c) { return c ? c->dir : NULL; }

tt_disk_cache_stats tt_disk_cache_get_stats(tt_disk_cache *c) {
  tt_disk_cache_stats s = {0};
  if (!c) return s;
  pthread_mutex_lock(&c->lock);
  s = c->stats;
  pthread_mutex_unlock(&c->lock);
  return s;
}

static void count(tt_disk_cache *c, uint64_t *field) {
  pthread_mutex_lock(&c->lock);
  (*field)++;
  pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------ get */

const char *tt_disk_cache_validate(const void *entry, size_t size, char why[160],
                                   const unsigned char **key, size_t *key_len, size_t *blob_len) {
  const unsigned char *data = entry;
  if (size < TT_DISK_CACHE_HEADER_SIZE) {
    snprintf(why, 160, "truncated: %zu bytes, shorter than the header", size);
    return why;
  }
  if (memcmp(data, TT_DISK_CACHE_MAGIC, 8) != 0) return "not a torch_tpu cache entry (bad magic)";
  uint32_t version = (uint32_t)tt_get_le(data + 8, 4);
  if (version != TT_DISK_CACHE_VERSION) {
    snprintf(why, 160, "format version %u, expected %u", version, TT_DISK_CACHE_VERSION);
    return why;
  }
  uint64_t klen = tt_get_le(data + 16, 8), blen = tt_get_le(data + 24, 8);
  uint64_t body = size - TT_DISK_CACHE_HEADER_SIZE;
  if (klen > body || blen != body - klen) {
    snprintf(why, 160, "truncated: %zu bytes, header says %llu + %llu + %llu", size,
             (unsigned long long)TT_DISK_CACHE_HEADER_SIZE, (unsigned long long)klen,
             (unsigned long long)blen);
    return why;
  }
  unsigned char sum[8];
  const unsigned char *k = data + TT_DISK_CACHE_HEADER_SIZE;
  checksum(data, k, klen, k + klen, blen, sum);
  if (memcmp(sum, data + 32, 8) != 0) return "checksum mismatch";
  *key = k;
  *key_len = (size_t)klen;
  *blob_len = (size_t)blen;
  return NULL;
}

/* Removes a bad entry, unless another process has already replaced the file
 * at path with a new one (then ours is just an old inode). */
static void remove_corrupt(tt_disk_cache *c, int fd, const char *path, const char *why) {
  struct stat mine, now;
  bool same = fstat(fd, &mine) == 0 && stat(path, &now) == 0 && mine.st_dev == now.st_dev &&
              mine.st_ino == now.st_ino;
  if (same && unlink(path) == 0) {
    fprintf(stderr, "torch_tpu: removed corrupt cache entry %s: %s\n", path, why);
    pthread_mutex_lock(&c->lock);
    c->stats.corrupt_removed++;
    if (c->stats.entries) c->stats.entries--;
    if (c->stats.bytes_on_disk >= (uint64_t)mine.st_size) c->stats.bytes_on_disk -= (uint64_t)mine.st_size;
    pthread_mutex_unlock(&c->lock);
  }
}

tt_error *tt_disk_cache_get(tt_disk_cache *c, const void *key, size_t key_len, void **blob,
                            size_t *blob_len) {
  if (!c || !blob || !blob_len || (!key && key_len))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_disk_cache_get: NULL argument");
  *blob = NULL;
  *blob_len = 0;
  char name[33 + sizeof TT_DISK_CACHE_SUFFIX];
  tt_disk_cache_key_name(key, key_len, name);
  strcat(name, TT_DISK_CACHE_SUFFIX);
  char *path = join(c->dir, name);
  if (!path) return oom();

  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    count(c, &c->stats.misses);
    tt_error *err = e == ENOENT ? NULL
                                : tt_error_new(TT_ERR_RUNTIME, "cannot open cache entry %s: %s",
                                               path, strerror(e));
    free(path);
    return err;
  }
  tt_error *err = NULL;
  const char *bad = NULL; /* why the entry is invalid */
  char why[160];
  unsigned char *data = NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    err = tt_error_new(TT_ERR_RUNTIME, "cannot stat cache entry %s: %s", path, strerror(errno));
    goto done;
  }
  size_t size = (size_t)st.st_size;
  if (size < TT_DISK_CACHE_HEADER_SIZE) {
    snprintf(why, sizeof why, "truncated: %zu bytes, shorter than the header", size);
    bad = why;
    goto done;
  }
  data = malloc(size);
  if (!data) {
    err = oom();
    goto done;
  }
  if (!read_all(fd, data, size)) {
    if (errno == 0) {
      bad = "truncated while reading";
    } else {
      err = tt_error_new(TT_ERR_RUNTIME, "cannot read cache entry %s: %s", path, strerror(errno));
    }
    goto done;
  }
  const unsigned char *k;
  size_t klen, blen;
  bad = tt_disk_cache_validate(data, size, why, &k, &klen, &blen);
  if (bad) goto done;
  const unsigned char *b = k + klen;
  if (klen != key_len || memcmp(k, key, key_len) != 0) goto done; /* hash collision: a miss */
  void *copy = malloc(blen ? blen : 1);
  if (!copy) {
    err = oom();
    goto done;
  }
  memcpy(copy, b, blen);
  *blob = copy;
  *blob_len = blen;
  futimens(fd, NULL); /* recently used; failure only makes eviction less exact */

done:
  if (bad) remove_corrupt(c, fd, path, bad);
  close(fd);
  free(data);
  free(path);
  count(c, *blob ? &c->stats.hits : &c->stats.misses);
  return err;
}

/* ------------------------------------------------------------ put */

tt_error *tt_disk_cache_put(tt_disk_cache *c, const void *key, size_t key_len, const void *blob,
                            size_t blob_len) {
  if (!c || (!key && key_len) || (!blob && blob_len))
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "tt_disk_cache_put: NULL argument");
  uint64_t total = (uint64_t)TT_DISK_CACHE_HEADER_SIZE + key_len + blob_len;
  if (total > c->max_bytes)
    return tt_error_new(TT_ERR_INVALID_ARGUMENT,
                        "cache entry of %llu bytes exceeds the cache size cap of %llu bytes",
                        (unsigned long long)total, (unsigned long long)c->max_bytes);
  unsigned char header[TT_DISK_CACHE_HEADER_SIZE] = {0};
  memcpy(header, TT_DISK_CACHE_MAGIC, 8);
  tt_put_le(header + 8, TT_DISK_CACHE_VERSION, 4);
  tt_put_le(header + 16, key_len, 8);
  tt_put_le(header + 24, blob_len, 8);
  checksum(header, key, key_len, blob, blob_len, header + 32);

  char name[33 + sizeof TT_DISK_CACHE_SUFFIX];
  tt_disk_cache_key_name(key, key_len, name);
  pthread_mutex_lock(&c->lock);
  unsigned serial = c->tmp_counter++;
  pthread_mutex_unlock(&c->lock);
  char tmp_name[96];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(tmp_name, sizeof tmp_name, "%s%s-%ld-%u-%lx", TT_DISK_CACHE_TMP_PREFIX, name,
           (long)getpid(), serial, (unsigned long)ts.tv_nsec);
  strcat(name, TT_DISK_CACHE_SUFFIX);
  char *path = join(c->dir, name), *tmp = join(c->dir, tmp_name);
  tt_error *err = NULL;
  if (!path || !tmp) {
    err = oom();
    goto done;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    err = tt_error_new(TT_ERR_RUNTIME, "cannot write cache entry in %s: %s", c->dir,
                       strerror(errno));
    goto done;
  }
  /* No fsync: after a crash a torn entry fails its checksum and is removed. */
  bool ok = write_all(fd, header, sizeof header) && write_all(fd, key, key_len) &&
            write_all(fd, blob, blob_len);
  int write_errno = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    write_errno = errno;
  }
  if (!ok) {
    unlink(tmp);
    err = tt_error_new(TT_ERR_RUNTIME, "cannot write cache entry %s: %s", tmp,
                       strerror(write_errno));
    goto done;
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    err = tt_error_new(TT_ERR_RUNTIME, "cannot rename cache entry into %s: %s", path, strerror(e));
    goto done;
  }
  bool rescan;
  pthread_mutex_lock(&c->lock);
  c->stats.writes++;
  c->stats.entries++; /* an overwrite overcounts until the next scan */
  c->stats.bytes_on_disk += total;
  rescan = c->stats.bytes_on_disk > c->max_bytes || ++c->puts_since_scan >= PUTS_PER_SCAN;
  pthread_mutex_unlock(&c->lock);
  if (rescan) scan_and_evict(c);

done:
  free(path);
  free(tmp);
  return err;
}
