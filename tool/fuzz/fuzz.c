/*
** fuzz.c -- the helpers of fuzz.h.
*/
#include "fuzz.h"

#include "pagedb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static void remove_dir(void) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[FZ_PATH];
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

const char *fz_dir(void) {
  if (dir[0]) return dir;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(dir, sizeof dir, "%s/pagedb-fuzz-XXXXXX", base);
  if (!mkdtemp(dir)) {
    fprintf(stderr, "fuzz: cannot make a directory under %s: %s\n", base, strerror(errno));
    abort();
  }
  atexit(remove_dir);
  return dir;
}

void fz_path(char *out, const char *name) {
  snprintf(out, FZ_PATH, "%s/%s", fz_dir(), name);
}

void fz_write(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const char *p = data;
  while (fd >= 0 && n > 0) {
    ssize_t k = write(fd, p, n);
    if (k <= 0) break;
    p += k;
    n -= (size_t)k;
  }
  if (fd < 0 || n > 0 || close(fd) != 0) {
    fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
    abort();
  }
}

void fz_unlink(const char *path) {
  if (unlink(path) != 0 && errno != ENOENT) {
    fprintf(stderr, "fuzz: cannot remove %s: %s\n", path, strerror(errno));
    abort();
  }
}

void fz_rc(int rc, const char *what) {
  if (strcmp(pagedb_errname(rc), "PAGEDB_UNKNOWN") == 0) {
    fprintf(stderr, "fuzz: %s returned %d, which is no pagedb result code\n", what, rc);
    abort();
  }
}
