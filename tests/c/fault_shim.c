/* LD_PRELOAD shim for tests/python/test_fault_injection.py: makes file
 * system calls under one directory fail, as a full or read-only disk would.
 *
 *   FAULT_SHIM_DIR=/path        only paths (and fds opened on paths) under it
 *   FAULT_SHIM_MODE=enospc      write() fails with ENOSPC once FAULT_SHIM_BYTES
 *                               bytes have been written there (the write that
 *                               crosses the limit is short, then fails)
 *   FAULT_SHIM_MODE=readonly    open(O_CREAT|O_WRONLY|O_RDWR), mkdir, rename,
 *                               unlink fail with EROFS there
 * Built by make as build/fault_shim.so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_long written;

static const char *dir(void) { return getenv("FAULT_SHIM_DIR"); }

static int mode_is(const char *m) {
  const char *v = getenv("FAULT_SHIM_MODE");
  return v && strcmp(v, m) == 0;
}

static int under(const char *path) {
  const char *d = dir();
  if (!d || !*d || !path) return 0;
  char abs[PATH_MAX];
  if (path[0] != '/') {
    if (!getcwd(abs, sizeof abs)) return 0;
    size_t n = strlen(abs);
    snprintf(abs + n, sizeof abs - n, "/%s", path);
    path = abs;
  }
  return strncmp(path, d, strlen(d)) == 0;
}

static int fd_under(int fd) {
  char link[64], target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = 0;
  return under(target);
}

#define REAL(name) \
  static __typeof__(&name) real_##name; \
  if (!real_##name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t count) {
  REAL(write);
  if (mode_is("enospc") && fd > 2 && fd_under(fd)) {
    long limit = atol(getenv("FAULT_SHIM_BYTES") ? getenv("FAULT_SHIM_BYTES") : "0");
    long before = atomic_load(&written);
    if (before >= limit) {
      errno = ENOSPC;
      return -1;
    }
    if ((long)count > limit - before) count = (size_t)(limit - before);
    ssize_t w = real_write(fd, buf, count);
    if (w > 0) atomic_fetch_add(&written, w);
    return w;
  }
  return real_write(fd, buf, count);
}

static int ro_open(const char *path, int flags) {
  return mode_is("readonly") && (flags & (O_CREAT | O_WRONLY | O_RDWR)) && under(path);
}

int open(const char *path, int flags, ...) {
  REAL(open);
  mode_t m = 0;
  /* (a real read-only file system also answers EROFS to O_CREAT of an
   * existing file opened for writing: no exception needed) */
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    m = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (ro_open(path, flags)) {
    errno = EROFS;
    return -1;
  }
  return real_open(path, flags, m);
}

int open64(const char *path, int flags, ...) {
  REAL(open64);
  mode_t m = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    m = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (ro_open(path, flags)) {
    errno = EROFS;
    return -1;
  }
  return real_open64(path, flags, m);
}

int mkdir(const char *path, mode_t m) {
  REAL(mkdir);
  struct stat st;
  if (mode_is("readonly") && under(path) && stat(path, &st) != 0) { /* else EEXIST, as a real one */
    errno = EROFS;
    return -1;
  }
  return real_mkdir(path, m);
}

int rename(const char *a, const char *b) {
  REAL(rename);
  if (mode_is("readonly") && (under(a) || under(b))) {
    errno = EROFS;
    return -1;
  }
  return real_rename(a, b);
}

int unlink(const char *path) {
  REAL(unlink);
  if (mode_is("readonly") && under(path)) {
    errno = EROFS;
    return -1;
  }
  return real_unlink(path);
}
