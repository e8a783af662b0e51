/*
** fuzz.c -- the helpers of fuzz.h.
*/
#include "fuzz.h"

#include "pagedb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

/* Remove directory D and what it holds (fuzz_open makes one subdirectory,
** its dataset's NAME.parts). */
static void remove_tree(const char *d) {
  DIR *h = opendir(d);
  if (!h) return;
  struct dirent *e;
  char p[FZ_PATH];
  while ((e = readdir(h))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", d, e->d_name);
    if (unlink(p) != 0 && (errno == EISDIR || errno == EPERM)) remove_tree(p);
  }
  closedir(h);
  rmdir(d);
}

static void remove_dir(void) { remove_tree(dir); }

/* The directories of processes that died without their atexit (an abort,
** a sanitizer's report: every crash) are removed by the next one. */
static void remove_stale(const char *base) {
  DIR *h = opendir(base);
  if (!h) return;
  struct dirent *e;
  char p[FZ_PATH];
  int pid, end;
  while ((e = readdir(h))) {
    end = 0;
    if (sscanf(e->d_name, "pagedb-fuzz-%d%n", &pid, &end) != 1 || e->d_name[end] || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    snprintf(p, sizeof p, "%s/%s", base, e->d_name);
    remove_tree(p);
  }
  closedir(h);
}

const char *fz_dir(void) {
  if (dir[0]) return dir;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  remove_stale(base);
  snprintf(dir, sizeof dir, "%s/pagedb-fuzz-%d", base, (int)getpid());
  remove_tree(dir);         /* a dead process's, whose pid this one reuses */
  if (mkdir(dir, 0700) != 0) {
    fprintf(stderr, "fuzz: cannot make %s: %s\n", dir, strerror(errno));
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
