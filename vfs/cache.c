/*
** cache.c -- the local chunk cache of remote objects, shared by every
** process of one user on the machine, and by no other user (invariant 6);
** or, in shared mode, by the users of a group, who trust nothing in it
** they cannot verify (invariant 7).
**
** LAYOUT (under PAGEDB_CONFIG_CACHE_DIR or PAGEDB_CACHE_DIR; default
** $XDG_CACHE_HOME/pagedb, else $HOME/.cache/pagedb: rconfig.c)
**
**   usage               16 bytes: the bytes the cache holds, and a checksum
**   OBJ/                one directory per object version: OBJ is 16 hex
**                       digits of a hash of the URL, ETag and size (and
**                       of the chunk size, when it is not the cache's:
**                       rc_open_small)
**   OBJ/lock            fetch locks: byte K locked while chunk K is fetched
**   OBJ/verified        8 bytes per chunk K at 8*K: the identity of the
**                       chunk file last summed whole (invariant 2)
**   OBJ/K.c             chunk K (16 hex digits): a 4096-byte header, then
**                       the object's bytes [K*C, K*C + len), C the chunk size
**   OBJ/K.t.PID.N.B     a chunk being written (B bytes when whole);
**                       renamed to K.c when whole
**
**   Chunk header (little-endian):
**     0  8  magic "PDBCHNK\0"       32  8  pdb_sum of the chunk's bytes
**     8  4  version (1)             40  8  chunk size C of the cache
**    12  4  key length L (< 3000)   48  L  the key: URL, ETag, size
**    16  8  offset K*C             4088 8  checksum of bytes 0..4087
**    24  8  length
**
**   In a shared cache (invariant 7) OBJ and K are keyed hashes, a chunk
**   file is sealed (its header: see seal), and there is no OBJ/verified.
**
** INVARIANTS
**
**   1. A chunk file is never changed in place: it is written under a
**      temporary name and renamed, and removed only by unlink.  So a
**      mapping of it stays valid (and its bytes the same) until unmapped,
**      whatever other processes do.
**   2. Nothing read from the directory is trusted: a chunk is used only if
**      its header is intact, names this object's key, this offset and the
**      length this object has there, its file is exactly header + length
**      long, and its bytes match the header's sum (checked the first time
**      a process of the machine holds that file: see hold_file; the file's
**      identity is then recorded in OBJ/verified, and a file is that same
**      file only with the same inode, device, birth time, change time and
**      header sum, so a file written anew or changed in place after it was
**      summed is summed again).  Otherwise it is counted (chunk_bad),
**      removed and fetched again.
**   3. A chunk a process holds (rc_hold until rc_release) is shared-locked
**      with flock(); the lock lives as long as the mapping (the kernel
**      keeps the open file, and so its flock, while it is mapped, after the
**      descriptor is closed).  Eviction takes the exclusive lock without
**      waiting and skips a chunk it cannot get, so a chunk mapped by a
**      zero-copy reader is never evicted under it.
**   4. The cache never holds more than its bound (PAGEDB_CACHE_BYTES,
**      default 4 GiB): space for a chunk (header included) is reserved in
**      `usage` under its lock before the chunk is written, evicting the
**      least recently held unlocked chunks first (mtime is set at a hold
**      when it is a minute old or more); when nothing can be evicted the chunk is held in private
**      memory instead (counted as uncached).  A damaged `usage` is
**      recomputed by scanning.  A scan holds the usage lock, and so does
**      every rename into place and every unlink that gives bytes back:
**      a scan sees each file once, so the account it writes is the files'.
**   5. One fetch per chunk per machine: a process fetches chunk K only
**      while it holds byte K of OBJ/lock (an OFD lock, so threads of one
**      process exclude each other too), and looks for the file again once
**      it has it; one that finds the lock taken waits for it, then finds
**      the file.  Locks are taken without waiting while a process holds
**      others, and waited for only while it holds none: no deadlock.  A
**      batch takes each chunk's lock as its request starts (sink_begin),
**      passes over a chunk found locked and waits for those after the
**      batch, so that processes wanting the same chunks fetch different
**      ones at once.
**   6. Private: the cache directory and each object's directory are owned
**      by the user and writable by nobody else, else the open is refused
**      (dir_private); directories are made 0700 and files 0600 whatever
**      the umask (an object directory left more open by an older pagedb
**      is closed to 0700 at open).  Both directories are held open and
**      every file is opened, renamed and unlinked relative to them
**      (openat, O_NOFOLLOW): a symbolic link in the cache is never
**      followed, and a rename of the directory under an open handle does
**      not move where the handle's files go.
**   7. Shared (PAGEDB_CONFIG_CACHE_SHARED): the cache directory is made
**      once for a group, and an open checks it is owned by root or the
**      user, set-group-ID, writable by its group and not by others, of a
**      group the user is in (dir_shared); object directories are made
**      2770 and must be of that group, not world-writable.  Any member of
**      the group can write there, so nothing found there is trusted: an
**      object's keys are derived at each open from its first 64 KiB, its
**      key (URL, ETag, size) and the chunk size, fetched over its own
**      connection (derive_keys); directory and chunk names are keyed
**      hashes (a user who cannot read the object cannot tell which object
**      or chunk a file is); each chunk file is sealed with AES-256-GCM
**      (K, its length and the chunk size authenticated with it) and
**      checked at every hold, decrypted into private memory: one that
**      fails is counted (chunk_bad, chunk_forged), removed where the
**      directory lets us, and fetched again.  Plaintext is never written
**      there.  Invariants 1 and 4-6 hold as in a private cache (6's
**      ownership and modes replaced by these); 2 is this check instead of
**      the verified table; 3 only guards the read (the bytes held are the
**      process's own).
**   8. Shared, the index and the catalog (the small-chunk objects,
**      rc_open_small) are never read through the directory: their chunks
**      are fetched over the object's own connection and kept in the
**      process's memory for as long as the object is open (rc_hold,
**      hold_kept; pdb_malloc'd, so pagedb_memory_used counts them and
**      PAGEDB_CONFIG_MEMLIMIT bounds them), so the checksums they carry
**      -- what every value of the data file is verified against
**      (src/reader.c, PAGEDB_IOCAP_UNTRUSTED) -- are the server's.  A sealed chunk of the data file can be made by
**      any member who can read the dataset (the keys come from its bytes),
**      so the seal keeps out only members who cannot; the values' XXH3 in
**      the index catch the rest, and rc_refetch replaces a chunk whose
**      values fail it with the server's bytes.
*/
#define _GNU_SOURCE
#include "remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define HDR 4096
#define KEY_MAX 3000
static const char kMagic[8] = "PDBCHNK";

/* A cache's configuration, read at each open (rconfig.c). */
typedef struct Cfg {
  char dir[3072];
  int dfd;                  /* the directory, open: every name is resolved from it */
  uint64_t bound;
  uint64_t chunk;
  int shared;               /* a cache shared by a group (invariant 7) */
  gid_t gid;                /* shared: the directory's group */
  mode_t fmode;             /* usage and lock files: 0600, shared 0660 */
} Cfg;

static _Atomic uint64_t tmpseq;    /* temporary names unique in the process */

struct RcObj {
  Cfg cfg;
  RmtObject *obj;
  _Atomic uint64_t *vino;   /* per chunk: the file last verified whole, 0 none */
  _Atomic int seeded;       /* vino has taken OBJ/verified's entries (seed_verified) */
  int vfd;                  /* OBJ/verified, or -1 (then each process sums) */
  uint64_t size;
  uint64_t nchunk;
  int ofd;                  /* DIR/OBJ, open: chunk, lock and verified files by name from it */
  char dir[3200];           /* DIR/OBJ, for messages */
  const char *key;
  size_t keylen;
  int sealed;               /* shared: chunks sealed, named by NKEY (invariant 7) */
  uint8_t ekey[32];         /* shared: the AES-256-GCM key of its chunks */
  uint8_t nkey[32];         /* shared: the key of its chunks' names */
  int kept;                 /* shared, small chunks: held in memory only (invariant 8) */
  uint8_t *seed;            /* sealed: the object's first NSEED bytes, from the server */
  size_t nseed;
  uint8_t *_Atomic *mem;    /* kept: per chunk, its bytes (pdb_malloc), or NULL */
};

/* Make the missing directories of PATH, 0700 (a cache's parents are the
** user's own: XDG's ~/.cache is 0700 too). */
static int mkdirs(const char *path) {
  char tmp[3200];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Open a file NAME of directory DFD, never through a symbolic link
** (invariant 6), made MODE whatever the umask when FLAGS create it. */
static int open_in(int dfd, const char *name, int flags, mode_t mode) {
  int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
  struct stat st;
  if (fd >= 0 && (flags & O_CREAT) && fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 07777) != mode)
    if (fchmod(fd, mode) != 0) { /* our own file: cannot fail but on a read-only file system */ }
  return fd;
}

/* Whether the directory open as FD may hold this user's cache (invariant
** 6): owned by the user, writable by nobody else.  Otherwise 0, with the
** reason in MSG. */
static int dir_private(int fd, const char *path, char *msg, size_t cap) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(msg, cap, "cache directory %s: %s", path, strerror(errno));
    return 0;
  }
  const char *why = NULL;
  char buf[128];
  if (st.st_uid != geteuid()) {
    snprintf(buf, sizeof buf, "it is owned by uid %u, not by this user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
    why = buf;
  } else if (st.st_mode & 022) {
    snprintf(buf, sizeof buf, "it is writable by %s (mode %04o)", st.st_mode & 002 ? "every user" : "its group",
             (unsigned)(st.st_mode & 07777));
    why = buf;
  }
  if (!why) return 1;
  snprintf(msg, cap, "cache directory %s refused: %s, so another user could plant or read chunks there; a"
           " private cache must be a directory of your own that only you can write (mode 0700: set"
           " PAGEDB_CACHE_DIR or PAGEDB_CONFIG_CACHE_DIR to one); or share one with a group: mkdir DIR; chgrp"
           " GROUP DIR; chmod 2770 DIR; PAGEDB_CACHE_SHARED=1 (doc/remote.md, \"A shared cache\")", path, why);
  return 0;
}

/* Whether this process is in group GID (root: in every group). */
static int in_group(gid_t gid) {
  if (geteuid() == 0 || getegid() == gid) return 1;
  int n = getgroups(0, NULL), in = 0;
  gid_t *g = n > 0 ? pdb_malloc((size_t)n * sizeof *g) : NULL;
  if (g && getgroups(n, g) == n)
    for (int i = 0; i < n && !in; i++) in = g[i] == gid;
  pdb_free(g);
  return in;
}

/* Whether the directory open as CFG->dfd may hold a shared cache
** (invariant 7): owned by root or the user, set-group-ID, writable by its
** group and not by others, of a group the user is in.  Otherwise 0, with
** the rule it breaks in MSG. */
static int dir_shared(Cfg *cfg, char *msg, size_t cap) {
  struct stat st;
  if (fstat(cfg->dfd, &st) != 0) {
    snprintf(msg, cap, "shared cache directory %s: %s", cfg->dir, strerror(errno));
    return 0;
  }
  char why[160] = "";
  unsigned m = (unsigned)(st.st_mode & 07777);
  if (st.st_uid != 0 && st.st_uid != geteuid())
    snprintf(why, sizeof why, "it is owned by uid %u, neither root nor this user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
  else if (st.st_mode & 002)
    snprintf(why, sizeof why, "it is writable by every user (mode %04o)", m);
  else if (!(st.st_mode & S_ISGID))
    snprintf(why, sizeof why, "it is not set-group-ID (mode %04o)", m);
  else if (!(st.st_mode & 020))
    snprintf(why, sizeof why, "it is not writable by its group (mode %04o)", m);
  else if (!in_group(st.st_gid))
    snprintf(why, sizeof why, "this user is not in its group (gid %u)", (unsigned)st.st_gid);
  if (!why[0]) {
    cfg->gid = st.st_gid;
    return 1;
  }
  snprintf(msg, cap, "shared cache directory %s refused: %s; a shared cache must be a directory owned by root"
           " or by you, set-group-ID, writable by its group and not by others, of a group you are in (mkdir DIR;"
           " chgrp GROUP DIR; chmod 2770 DIR: doc/remote.md, \"A shared cache\")", cfg->dir, why);
  return 0;
}

static int cfg_init(Cfg *cfg, char *msg, size_t cap) {
  /* pagedb_config, else the environment, else the defaults (rconfig.c);
  ** the chunk is a power of two from 64 KiB to 64 MiB: whole pages, for
  ** mapping. */
  int64_t bound, chunk, shared;
  cfg->dfd = -1;
  int rc = pdb_rconf_str(PAGEDB_CONFIG_CACHE_DIR, cfg->dir, sizeof cfg->dir, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_num(PAGEDB_CONFIG_CACHE_BYTES, &bound, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_num(PAGEDB_CONFIG_CACHE_CHUNK, &chunk, msg, cap);
  if (rc == PAGEDB_OK) rc = pdb_rconf_num(PAGEDB_CONFIG_CACHE_SHARED, &shared, msg, cap);
  if (rc != PAGEDB_OK) return rc;
  assert(bound > 0 && chunk >= (64 << 10) && chunk <= (64 << 20) && !(chunk & (chunk - 1)));
  cfg->bound = (uint64_t)bound;
  cfg->chunk = (uint64_t)chunk;
  cfg->shared = shared == 1;
  cfg->fmode = cfg->shared ? 0660 : 0600;
  if (cfg->shared) {
    /* Made once by whoever shares it, never here: a directory made by
    ** this open would be this user's alone. */
    if ((cfg->dfd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
      snprintf(msg, cap, "shared cache directory %s: %s (a shared cache is made once for a group: mkdir DIR;"
               " chgrp GROUP DIR; chmod 2770 DIR)", cfg->dir, strerror(errno));
      return PAGEDB_CANTOPEN;
    }
    if (!dir_shared(cfg, msg, cap)) {
      close(cfg->dfd);
      cfg->dfd = -1;
      return PAGEDB_CANTOPEN;
    }
  }
  /* The directory itself may be reached through a link the user made;
  ** what is checked is the directory reached, held open from then on. */
  int fd = -1;
  if (cfg->dfd < 0 && (mkdirs(cfg->dir) != 0 || (cfg->dfd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)) {
    snprintf(msg, cap, "cache directory %s: %s (set PAGEDB_CACHE_DIR or PAGEDB_CONFIG_CACHE_DIR to a writable"
             " directory)", cfg->dir,
             strerror(errno));
    return PAGEDB_CANTOPEN;
  }
  if (!cfg->shared && !dir_private(cfg->dfd, cfg->dir, msg, cap)) {
    close(cfg->dfd);
    cfg->dfd = -1;
    return PAGEDB_CANTOPEN;
  }
  if ((fd = open_in(cfg->dfd, "usage", O_RDWR | O_CREAT, cfg->fmode)) < 0) {
    snprintf(msg, cap, "cache directory %s: usage: %s (set PAGEDB_CACHE_DIR or PAGEDB_CONFIG_CACHE_DIR to a"
             " writable directory)", cfg->dir, strerror(errno));
    close(cfg->dfd);
    cfg->dfd = -1;
    return PAGEDB_CANTOPEN;
  }
  close(fd);
  return PAGEDB_OK;
}

/* --- the usage account (invariant 4) ------------------------------------------ */

static int ofd_lock(int fd, short type, off_t start, off_t len, int wait) {
  struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };
  int r;
  do r = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
  while (r != 0 && errno == EINTR);
  return r;
}

typedef struct Entry {
  char path[64];            /* OBJ/NAME, from the cache directory */
  uint64_t size;
  struct timespec mtime;
} Entry;

static int by_mtime(const void *a, const void *b) {
  const Entry *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec > y->mtime.tv_nsec;
}

static int is_hex16(const char *s, size_t n) {
  if (strlen(s) < n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

/* Remove the file at PATH (from directory DFD) if it can be locked
** exclusively now (nobody holds it) and is still the file at PATH.
** Returns 1 if removed. */
static int evict_one(int dfd, const char *path) {
  int fd = open_in(dfd, path, O_RDONLY, 0);
  if (fd < 0) return errno == ENOENT;
  int gone = 0;
  struct stat a, b;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 && fstatat(dfd, path, &b, AT_SYMLINK_NOFOLLOW) == 0
      && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
    gone = unlinkat(dfd, path, 0) == 0;
  close(fd);
  return gone;
}

/* Scan the cache: its bytes now; if TARGET is not UINT64_MAX, evict the
** least recently held chunks until it holds at most TARGET.  Caller holds
** the usage lock. */
static uint64_t scan(const Cfg *cfg, uint64_t target) {
  int tfd = openat(cfg->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *top = tfd >= 0 ? fdopendir(tfd) : NULL;
  if (!top) {
    if (tfd >= 0) close(tfd);
    return UINT64_MAX;
  }
  Entry *e = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  struct dirent *d;
  while ((d = readdir(top))) {
    if (strlen(d->d_name) != 16 || !is_hex16(d->d_name, 16)) continue;
    int sfd = openat(cfg->dfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *dd = sfd >= 0 ? fdopendir(sfd) : NULL;
    if (!dd) {
      if (sfd >= 0) close(sfd);
      continue;
    }
    struct dirent *f;
    while ((f = readdir(dd))) {
      if (!is_hex16(f->d_name, 16) || f->d_name[16] != '.') continue;
      char path[64];
      if (snprintf(path, sizeof path, "%s/%s", d->d_name, f->d_name) >= (int)sizeof path) continue;
      struct stat st;
      if (fstatat(sfd, f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
      if (f->d_name[17] == 't') {
        /* A writer's temporary counts as the bytes its name reserves (it
        ** may not have them yet); one left by a writer that died long ago
        ** is removed. */
        const char *dot = strrchr(f->d_name, '.');
        unsigned long long want = strtoull(dot + 1, NULL, 10);
        if (now - st.st_mtime > 600) unlinkat(sfd, f->d_name, 0);
        else total += want > (uint64_t)st.st_size && want <= HDR + (64u << 20) ? want : (uint64_t)st.st_size;
        continue;
      }
      if (f->d_name[17] != 'c' || f->d_name[18]) continue;
      total += (uint64_t)st.st_size;
      if (n == cap) {
        size_t nc = cap ? cap * 2 : 256;
        Entry *ne = realloc(e, nc * sizeof *e);
        if (!ne) continue;
        e = ne;
        cap = nc;
      }
      snprintf(e[n].path, sizeof e[n].path, "%s", path);
      e[n].size = (uint64_t)st.st_size;
      e[n].mtime = st.st_mtim;
      n++;
    }
    closedir(dd);
  }
  closedir(top);
  if (target != UINT64_MAX && total > target) {
    qsort(e, n, sizeof *e, by_mtime);
    for (size_t i = 0; i < n && total > target; i++) {
      if (evict_one(cfg->dfd, e[i].path)) {
        total -= e[i].size;
        atomic_fetch_add(&rmt_stats.evictions, 1);
      }
    }
  }
  free(e);
  return total;
}

static uint64_t usage_read(int fd) {
  uint8_t b[16];
  if (pread(fd, b, sizeof b, 0) != (ssize_t)sizeof b || pdb_get64(b + 8) != pdb_checksum(b, 8))
    return UINT64_MAX;
  return pdb_get64(b);
}

static void usage_write(int fd, uint64_t v) {
  uint8_t b[16];
  pdb_put64(b, v);
  pdb_put64(b + 8, pdb_checksum(b, 8));
  if (pwrite(fd, b, sizeof b, 0) != (ssize_t)sizeof b) {
    /* A usage we could not record is recomputed by the next reserve. */
    if (ftruncate(fd, 0) != 0) { /* then the checksum fails: the same */ }
  }
}

/* The usage lock: held while the account changes and while a file a scan
** counts changes its name (a rename into place, an unlink that gives its
** bytes back), so that a scan, made under it, sees each file once (a
** readdir racing a rename can see a file under both names or neither) and
** the account it writes matches the files.  Returns the locked usage
** file, or -1. */
static int usage_lock(const Cfg *cfg) {
  /* Opened per call: a descriptor kept open would outlive every handle. */
  int fd = open_in(cfg->dfd, "usage", O_RDWR | O_CREAT, cfg->fmode);
  if (fd >= 0 && ofd_lock(fd, F_WRLCK, 0, 0, 1) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

static void usage_unlock(int fd) {
  if (fd >= 0) close(fd);   /* drops the lock */
}

/* Reserve N bytes (DELTA > 0) or give them back (DELTA < 0), the usage
** lock held (FD).  Returns 0 if the reservation could not be made without
** passing the bound. */
static int usage_add_locked(const Cfg *cfg, int fd, int64_t delta) {
  if (fd < 0) return 0;
  uint64_t u = usage_read(fd);
  if (u == UINT64_MAX) u = scan(cfg, UINT64_MAX);
  int ok = 1;
  if (delta < 0) {
    u = u > (uint64_t)-delta ? u + (uint64_t)delta : 0;
  } else if (u == UINT64_MAX) {
    ok = 0;
  } else if (u + (uint64_t)delta > cfg->bound) {
    /* Evict down to leave a tenth of the bound free, so that the scans
    ** stay rare while a cold epoch streams in. */
    uint64_t want = (uint64_t)delta > cfg->bound ? 0 : cfg->bound - (uint64_t)delta;
    uint64_t low = want - want / 10 > 0 ? want - want / 10 : want;
    u = scan(cfg, low);
    if (u == UINT64_MAX || u + (uint64_t)delta > cfg->bound) ok = 0;
    if (u == UINT64_MAX) u = 0;
  }
  if (ok && delta > 0) u += (uint64_t)delta;
  usage_write(fd, u);
  return ok;
}

static int usage_add(const Cfg *cfg, int64_t delta) {
  int fd = usage_lock(cfg);
  int ok = usage_add_locked(cfg, fd, delta);
  usage_unlock(fd);
  return ok;
}

/* Unlink NAME of directory DFD and give back its BYTES (if the unlink did
** it), as one step for a scan (usage_lock). */
static void usage_unlink(const Cfg *cfg, int dfd, const char *name, uint64_t bytes) {
  int fd = usage_lock(cfg);
  if (unlinkat(dfd, name, 0) == 0 && bytes) usage_add_locked(cfg, fd, -(int64_t)bytes);
  usage_unlock(fd);
}

/* --- a shared cache's seals (invariant 7) ------------------------------------- */

/* The bytes of an object read to derive its keys: its first 64 KiB (all of
** a smaller one).  Only a reader of the object has them. */
#define SEED_BYTES (64u << 10)

/* Derive C's keys in a shared cache, and the name of its directory (16 hex
** digits, into ONAME), from what only a reader of the object can know:
** its first SEED_BYTES, fetched now over the object's own (authenticated)
** connection, with its key (URL, ETag, size) and the chunk size.  A user
** who cannot read the object can derive neither the keys nor the names. */
static int derive_keys(RcObj *c, char *oname, char *msg, size_t cap) {
  size_t n = c->size < SEED_BYTES ? (size_t)c->size : SEED_BYTES;
  uint8_t *seed = pdb_malloc(n ? n : 1);
  if (!seed) {
    snprintf(msg, cap, "out of memory opening %s", rmt_url(c->obj));
    return PAGEDB_NOMEM;
  }
  RmtRange r = { seed, n, 0, 0 };
  int rc = n ? rmt_fetch(c->obj, &r, 1, msg, cap) : PAGEDB_OK;
  uint8_t root[32], mac[32], cb[8];
  unsigned rl = 0, ml = 0;
  pdb_put64(cb, c->cfg.chunk);
  EVP_MD_CTX *x = rc == PAGEDB_OK ? EVP_MD_CTX_new() : NULL;
  int ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL) == 1
           && EVP_DigestUpdate(x, "pagedb shared cache 1", 22) == 1
           && EVP_DigestUpdate(x, c->key, c->keylen + 1) == 1 && EVP_DigestUpdate(x, cb, 8) == 1
           && EVP_DigestUpdate(x, seed, n) == 1 && EVP_DigestFinal_ex(x, root, &rl) == 1 && rl == 32
           && HMAC(EVP_sha256(), root, 32, (const uint8_t *)"seal", 4, c->ekey, &ml) && ml == 32
           && HMAC(EVP_sha256(), root, 32, (const uint8_t *)"name", 4, c->nkey, &ml) && ml == 32
           && HMAC(EVP_sha256(), root, 32, (const uint8_t *)"dir", 3, mac, &ml) && ml == 32;
  EVP_MD_CTX_free(x);
  OPENSSL_cleanse(root, sizeof root);
  /* Kept: the server's own first bytes, which rc_seed gives (the data
  ** file's header among them). */
  if (rc == PAGEDB_OK && ok) {
    c->seed = seed;
    c->nseed = n;
  } else {
    OPENSSL_cleanse(seed, n);
    pdb_free(seed);
  }
  if (rc != PAGEDB_OK) return rc;
  if (!ok) {
    snprintf(msg, cap, "%s: cannot derive the shared cache's keys (libcrypto failed)", rmt_url(c->obj));
    return PAGEDB_CANTOPEN;
  }
  snprintf(oname, 17, "%016llx", (unsigned long long)pdb_get64(mac));
  c->sealed = 1;
  return PAGEDB_OK;
}

/*
** A sealed chunk file: a HDR-byte header, then the chunk's LEN bytes
** encrypted with AES-256-GCM (so the file is HDR + LEN long, as a private
** chunk is: the usage account and the scan treat both alike).  Header
** (little-endian; the rest zero, and ignored):
**     0  8  magic "PDBSEAL\0"        16  8  LEN
**     8  4  version (1)              24 12  nonce (random per file)
**    12  4  0                        36 16  GCM tag
** The additional data authenticated with it is K, LEN and the chunk size,
** so a sealed chunk moved to another name or object does not verify.
*/
static const char kSealMagic[8] = "PDBSEAL";
#define SEAL_HDR 52

static void seal_aad(const RcObj *c, uint64_t k, size_t len, uint8_t *aad) {
  pdb_put64(aad, k);
  pdb_put64(aad + 8, len);
  pdb_put64(aad + 16, c->cfg.chunk);
}

/* Encrypt LEN bytes at IN into OUT (which may be IN) with C's key,
** header H (nonce and tag filled here).  Returns 1 on success. */
static int seal(const RcObj *c, uint64_t k, const uint8_t *in, size_t len, uint8_t *out, uint8_t *h) {
  uint8_t aad[24];
  int n = 0;
  memset(h, 0, SEAL_HDR);
  memcpy(h, kSealMagic, 8);
  pdb_put32(h + 8, 1);
  pdb_put64(h + 16, len);
  seal_aad(c, k, len, aad);
  EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
  int ok = x && RAND_bytes(h + 24, 12) == 1 && EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1
           && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1
           && EVP_EncryptInit_ex(x, NULL, NULL, c->ekey, h + 24) == 1
           && EVP_EncryptUpdate(x, NULL, &n, aad, sizeof aad) == 1
           && (len == 0 || EVP_EncryptUpdate(x, out, &n, in, (int)len) == 1)
           && EVP_EncryptFinal_ex(x, aad, &n) == 1 && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, h + 36) == 1;
  EVP_CIPHER_CTX_free(x);
  return ok;
}

/* Decrypt chunk K's LEN bytes at B in place, with header H: 1 if its seal
** verifies (then B holds the bytes stored), 0 if not (B's contents then
** unspecified). */
static int unseal(const RcObj *c, uint64_t k, const uint8_t *h, uint8_t *b, size_t len) {
  uint8_t aad[24], tag[16];
  int n = 0;
  seal_aad(c, k, len, aad);
  memcpy(tag, h + 36, 16);
  EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
  int ok = x && EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1
           && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1
           && EVP_DecryptInit_ex(x, NULL, NULL, c->ekey, h + 24) == 1
           && EVP_DecryptUpdate(x, NULL, &n, aad, sizeof aad) == 1
           && (len == 0 || EVP_DecryptUpdate(x, b, &n, b, (int)len) == 1)
           && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1 && EVP_DecryptFinal_ex(x, aad, &n) == 1;
  EVP_CIPHER_CTX_free(x);
  return ok;
}

/* --- objects ------------------------------------------------------------------ */

static int open_obj(RmtObject *o, int small, RcObj **out, char *msg, size_t cap) {
  *out = NULL;
  RcObj *c = pdb_calloc(1, sizeof *c);
  if (!c) return PAGEDB_NOMEM;
  c->vfd = c->ofd = -1;
  int rc = cfg_init(&c->cfg, msg, cap);
  if (rc != PAGEDB_OK) {
    pdb_free(c);
    return rc;
  }
  /* Another chunk size is another directory (the key's hash with the
  ** size): chunk files of two sizes never meet (invariant 2 would reject
  ** them, at the cost of fetching again). */
  uint64_t salt = 0;
  if (small && c->cfg.chunk > RC_SMALL_CHUNK) {
    c->cfg.chunk = RC_SMALL_CHUNK;
    salt = pdb_mix64(RC_SMALL_CHUNK);
  }
  c->vfd = -1;
  c->obj = o;
  c->size = rmt_size(o);
  c->nchunk = (c->size + c->cfg.chunk - 1) / c->cfg.chunk;
  if (!(c->vino = pdb_calloc(c->nchunk ? c->nchunk : 1, sizeof *c->vino))) {
    rc_close(c);
    return PAGEDB_NOMEM;
  }
  c->key = rmt_key(o);
  c->keylen = strlen(c->key);
  if (c->keylen >= KEY_MAX) {
    snprintf(msg, cap, "%s: the URL is too long for the cache", rmt_url(o));
    rc_close(c);
    return PAGEDB_CANTOPEN;
  }
  if (small && c->cfg.shared) {
    /* Invariant 8: nothing of it in the directory, not even its name. */
    c->kept = 1;
    if (!(c->mem = pdb_calloc(c->nchunk ? c->nchunk : 1, sizeof *c->mem))) {
      rc_close(c);
      return PAGEDB_NOMEM;
    }
    snprintf(c->dir, sizeof c->dir, "%s (in memory)", rmt_url(o));
    *out = c;
    return PAGEDB_OK;
  }
  char oname[20];
  snprintf(oname, sizeof oname, "%016llx", (unsigned long long)(pdb_sum(c->key, c->keylen) ^ salt));
  if (c->cfg.shared && (rc = derive_keys(c, oname, msg, cap)) != PAGEDB_OK) {
    rc_close(c);
    return rc;
  }
  snprintf(c->dir, sizeof c->dir, "%s/%s", c->cfg.dir, oname);
  /* The object's directory is the user's (invariant 6): made 0700, never
  ** reached through a link, and one left by an older pagedb with more
  ** open modes is closed. */
  int fd = -1;
  struct stat st;
  mode_t dmode = c->sealed ? 02770 : 0700;
  if ((mkdirat(c->cfg.dfd, oname, dmode) != 0 && errno != EEXIST)
      || (c->ofd = openat(c->cfg.dfd, oname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0
      || fstat(c->ofd, &st) != 0) {
    snprintf(msg, cap, "cache directory %s: %s", c->dir, strerror(errno));
    rc_close(c);
    return PAGEDB_CANTOPEN;
  }
  if (st.st_uid == geteuid() && (st.st_mode & 07777) != dmode && fchmod(c->ofd, dmode) != 0) { /* checked next */ }
  if (c->sealed) {
    /* Any member of the group may have made it: what is in it is checked
    ** chunk by chunk; only its group and modes must keep it the group's. */
    if (fstat(c->ofd, &st) != 0 || st.st_gid != c->cfg.gid || (st.st_mode & 002)) {
      snprintf(msg, cap, "shared cache directory %s refused: not of the cache's group (gid %u) or writable by"
               " every user (gid %u, mode %04o)", c->dir, (unsigned)c->cfg.gid, (unsigned)st.st_gid,
               (unsigned)(st.st_mode & 07777));
      rc_close(c);
      return PAGEDB_CANTOPEN;
    }
  } else if (!dir_private(c->ofd, c->dir, msg, cap)) {
    rc_close(c);
    return PAGEDB_CANTOPEN;
  }
  if ((fd = open_in(c->ofd, "lock", O_RDWR | O_CREAT, c->cfg.fmode)) < 0) {
    snprintf(msg, cap, "cache directory %s: lock: %s", c->dir, strerror(errno));
    rc_close(c);
    return PAGEDB_CANTOPEN;
  }
  close(fd);
  /* Without it, each process sums; a shared cache has none (each hold
  ** checks the seal). */
  if (!c->sealed) c->vfd = open_in(c->ofd, "verified", O_RDWR | O_CREAT, 0600);
  *out = c;
  return PAGEDB_OK;
}

int rc_open(RmtObject *o, RcObj **out, char *msg, size_t cap) { return open_obj(o, 0, out, msg, cap); }
int rc_open_small(RmtObject *o, RcObj **out, char *msg, size_t cap) { return open_obj(o, 1, out, msg, cap); }

void rc_close(RcObj *c) {
  if (!c) return;
  if (c->vfd >= 0) close(c->vfd);
  if (c->ofd >= 0) close(c->ofd);
  if (c->cfg.dfd >= 0) close(c->cfg.dfd);
  OPENSSL_cleanse(c->ekey, sizeof c->ekey);
  OPENSSL_cleanse(c->nkey, sizeof c->nkey);
  for (uint64_t k = 0; c->mem && k < c->nchunk; k++) pdb_free(c->mem[k]);
  if (c->seed) OPENSSL_cleanse(c->seed, c->nseed);
  pdb_free(c->seed);
  pdb_free(c->mem);
  pdb_free(c->vino);
  pdb_free(c);
}

uint64_t rc_chunk_size(const RcObj *c) {
  return c->cfg.chunk;
}

uint64_t rc_bound(const RcObj *c) {
  return c->cfg.bound;
}

int rc_untrusted(const RcObj *c) {
  return c->sealed;
}

const uint8_t *rc_seed(const RcObj *c, size_t *n) {
  *n = c->nseed;
  return c->seed;
}

static size_t chunk_len(const RcObj *c, uint64_t k) {
  uint64_t off = k * c->cfg.chunk;
  return (size_t)(c->size - off < c->cfg.chunk ? c->size - off : c->cfg.chunk);
}

/* Chunk K's file name in its object's directory: K, or in a shared
** cache a keyed hash of K (invariant 7). */
static void chunk_path(const RcObj *c, uint64_t k, char *out, size_t cap) {
  if (c->sealed) {
    uint8_t b[8], mac[32];
    unsigned ml = 0;
    pdb_put64(b, k);
    if (!HMAC(EVP_sha256(), c->nkey, sizeof c->nkey, b, sizeof b, mac, &ml)) memset(mac, 0, sizeof mac);
    k = pdb_get64(mac);
  }
  snprintf(out, cap, "%016llx.c", (unsigned long long)k);
}

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* Put a fixed mapping at AT back to an inaccessible reservation. */
static void unfix(void *at, size_t len) {
  mmap(at, page_round(len), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

void rc_release(RcHeld *h, int fixed) {
  if (!h->base) return;
  if (fixed) unfix(h->base, h->maplen);
  else munmap(h->base, h->maplen);
  h->base = NULL;
}

static void encode(const RcObj *c, uint64_t k, uint64_t sum, size_t len, uint8_t *h) {
  memset(h, 0, HDR);
  memcpy(h, kMagic, 8);
  pdb_put32(h + 8, 1);
  pdb_put32(h + 12, (uint32_t)c->keylen);
  pdb_put64(h + 16, k * c->cfg.chunk);
  pdb_put64(h + 24, len);
  pdb_put64(h + 32, sum);
  pdb_put64(h + 40, c->cfg.chunk);
  memcpy(h + 48, c->key, c->keylen);
  pdb_put64(h + HDR - 8, pdb_checksum(h, HDR - 8));
}

/* Whether header H describes chunk K of C; *SUM receives its data sum.
** Its checksum is checked apart (header_sum_ok): only when the file is
** not known verified (hold_file). */
static int header_ok(const RcObj *c, uint64_t k, const uint8_t *h, uint64_t *sum) {
  size_t len = chunk_len(c, k);
  if (memcmp(h, kMagic, 8) != 0 || pdb_get32(h + 8) != 1) return 0;
  if (pdb_get32(h + 12) != c->keylen || memcmp(h + 48, c->key, c->keylen) != 0) return 0;   /* foreign */
  if (pdb_get64(h + 16) != k * c->cfg.chunk || pdb_get64(h + 24) != len || pdb_get64(h + 40) != c->cfg.chunk) return 0;
  *sum = pdb_get64(h + 32);
  return 1;
}

static int header_sum_ok(const uint8_t *h) { return pdb_get64(h + HDR - 8) == pdb_checksum(h, HDR - 8); }

/* Remove a chunk file found bad, if PATH still names FD's file. */
static void drop_bad(const RcObj *c, const char *path, int fd) {
  struct stat a, b;
  atomic_fetch_add(&rmt_stats.chunk_bad, 1);
  if (fstat(fd, &a) == 0 && fstatat(c->ofd, path, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino
      && a.st_dev == b.st_dev)
    usage_unlink(&c->cfg, c->ofd, path, (uint64_t)a.st_size);
}

/* The identity of a file from its statx SX (see file_id). */
static uint64_t statx_id(const struct statx *sx, uint64_t sum) {
  if ((sx->stx_mask & (STATX_BTIME | STATX_CTIME)) != (STATX_BTIME | STATX_CTIME)) return 0;
  uint64_t t = pdb_mix64((uint64_t)sx->stx_btime.tv_sec << 30 ^ sx->stx_btime.tv_nsec)
               ^ pdb_mix64(pdb_mix64((uint64_t)sx->stx_ctime.tv_sec << 30 ^ sx->stx_ctime.tv_nsec) + 1);
  uint64_t id = pdb_mix64(sx->stx_ino ^ pdb_mix64(((uint64_t)sx->stx_dev_major << 32 | sx->stx_dev_minor) ^ t)) ^ sum;
  return id + (id == 0);
}

/* The identity of the chunk file open as FD (or, FD -1, at PATH) whose
** header says SUM, for the verified tables (hold_file): inode, device,
** birth time, change time (which any write, truncation or rename moves)
** and SUM.  0 when the file system keeps no birth time (then the bytes
** are summed at every hold). */
static uint64_t file_id(int fd, const char *path, uint64_t sum) {
  struct statx sx;
  if (statx(fd >= 0 ? fd : AT_FDCWD, fd >= 0 ? "" : path, fd >= 0 ? AT_EMPTY_PATH : 0,
            STATX_INO | STATX_BTIME | STATX_CTIME, &sx) != 0)
    return 0;
  return statx_id(&sx, sum);
}

/* The identity OBJ/verified records for chunk K, or 0.  Damaged, it only
** names no file, and the chunk is summed again. */
static uint64_t shared_id(const RcObj *c, uint64_t k) {
  uint8_t b[8];
  if (c->vfd < 0 || pread(c->vfd, b, 8, (off_t)(k * 8)) != 8) return 0;
  return pdb_get64(b);
}

static void shared_put(const RcObj *c, uint64_t k, uint64_t id) {
  uint8_t b[8];
  pdb_put64(b, id);
  if (c->vfd >= 0 && pwrite(c->vfd, b, 8, (off_t)(k * 8)) != 8) { /* then the next process sums it: speed only */ }
}

/* Verified-table bookkeeping after a hold of chunk K: ID now, MINE the
** process's entry, SHARED the machine's as read (ID when not read). */
static void note_verified(RcObj *c, uint64_t k, uint64_t id, uint64_t mine, uint64_t shared) {
  if (id != mine) atomic_store_explicit(&c->vino[k], id, memory_order_relaxed);
  if (id && shared != id) shared_put(c, k, id);
}

/* Take the machine's table (OBJ/verified) as this process's, for the
** chunks it knows nothing of yet: one read at the first hold instead of
** one per chunk (a process of a world holds every chunk of the file).
** An entry read here that no longer matches is read again before the
** chunk is summed (hold_file), so a stale copy costs a read, never a sum
** skipped: an identity names one unchanged file. */
static void seed_verified(RcObj *c) {
  if (atomic_exchange(&c->seeded, 1) || c->vfd < 0) return;
  size_t n = (size_t)c->nchunk, got = 0;
  uint8_t *b = pdb_malloc(n ? n * 8 : 1);
  if (!b) return;
  while (got < n * 8) {
    ssize_t r = pread(c->vfd, b + got, n * 8 - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  for (size_t k = 0; k < got / 8; k++) {
    uint64_t zero = 0, id = pdb_get64(b + 8 * k);
    if (id) atomic_compare_exchange_strong_explicit(&c->vino[k], &zero, id, memory_order_relaxed, memory_order_relaxed);
  }
  pdb_free(b);
}

/* Map chunk K's LEN bytes from its open file FD into *OUT: at AT (a
** page-aligned place in a reservation) or anywhere.  Returns 0 on failure
** (a fixed place is then put back to a reservation). */
static int map_chunk(int fd, uint64_t k, size_t len, void *at, RcHeld *out) {
  void *base;
  const uint8_t *data;
  size_t maplen;
  if (at) {
    /* MAP_POPULATE: the pages are in the page cache (written or read
    ** just now); mapping them in one go costs far less than a fault per
    ** page on first touch. */
    base = mmap(at, page_round(len), PROT_READ, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, HDR);
    data = base;
    maplen = len;
  } else {
    /* Not populated: a held chunk is often wanted for a few of its
    ** samples (a rank of a world reads a quarter of each), and setting up
    ** and tearing down the page tables of the whole chunk cost 2.6 times
    ** the CPU of a warm four-rank epoch (perf, pagedb-rbench); a touch
    ** maps 64 KiB around it (the kernel's fault-around). */
    maplen = HDR + len;
    base = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, 0);
    data = (const uint8_t *)base + HDR;
  }
  if (base == MAP_FAILED) {
    if (at) unfix(at, len);
    return 0;
  }
  *out = (RcHeld){ k, data, len, base, maplen };
  return 1;
}

/* Read N bytes at offset AT of FD into B: 1 if all were read. */
static int read_full(int fd, uint8_t *b, size_t n, off_t at) {
  while (n > 0) {
    ssize_t r = pread(fd, b, n, at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    b += r;
    n -= (size_t)r;
    at += r;
  }
  return 1;
}

/* A sealed chunk found bad (invariant 7): counted as such, then as any
** bad chunk (drop_bad: removed if it is still there). */
static void drop_forged(const RcObj *c, const char *path, int fd) {
  atomic_fetch_add(&rmt_stats.chunk_forged, 1);
  drop_bad(c, path, fd);
}

/* Hold chunk K of a shared cache from its file (invariant 7): its seal
** checked at every hold, its bytes decrypted into private memory (at AT,
** or anywhere).  Everything in the file is untrusted until the seal
** verifies: its type, size and header are checked before a byte is
** read into memory, and the length comes from the object, never the file.
** Returns 1 on success, 0 if there is no good file. */
static int hold_sealed(RcObj *c, uint64_t k, void *at, RcHeld *out) {
  char path[32];
  chunk_path(c, k, path, sizeof path);
  int fd = open_in(c->ofd, path, O_RDONLY | O_NONBLOCK, 0);   /* a planted FIFO must not block */
  if (fd < 0) return 0;
  size_t len = chunk_len(c, k);
  struct stat st;
  uint8_t h[SEAL_HDR];
  if (flock(fd, LOCK_SH | LOCK_NB) != 0 || fstat(fd, &st) != 0 || st.st_nlink == 0) {
    close(fd);
    return 0;
  }
  if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != HDR + (uint64_t)len || !read_full(fd, h, sizeof h, 0)
      || memcmp(h, kSealMagic, 8) != 0 || pdb_get32(h + 8) != 1 || pdb_get64(h + 16) != len) {
    drop_forged(c, path, fd);
    close(fd);
    return 0;
  }
  /* Read, not mapped: a file another member truncates under a mapping
  ** would fault (SIGBUS); a read just comes back short.  Populated at
  ** once: a page fault per page in the read cost more than the
  ** decryption (perf, tool/sharedcache-bench.tcl). */
  size_t maplen = page_round(len ? len : 1);
  uint8_t *base = mmap(at, maplen, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | (at ? MAP_FIXED : 0), -1, 0);
  if (base == MAP_FAILED) {
    close(fd);
    return 0;
  }
  if (!read_full(fd, base, len, HDR) || !unseal(c, k, h, base, len)) {
    drop_forged(c, path, fd);
    if (at) unfix(at, len);
    else munmap(base, maplen);
    close(fd);
    return 0;
  }
  mprotect(base, maplen, PROT_READ);
  /* The eviction order (invariant 4), to the minute; a file of another
  ** member of the group cannot be touched (EPERM), and keeps its time. */
  if (time(NULL) - st.st_mtime >= 60 && futimens(fd, NULL) != 0) { /* not ours: fine */ }
  close(fd);
  atomic_fetch_add(&rmt_stats.chunk_hits, 1);
  *out = (RcHeld){ k, base, len, base, at ? len : maplen };
  return 1;
}

static int hold_mem(uint64_t k, const uint8_t *data, size_t len, void *at, int uncached, RcHeld *out);

/* Hold chunk K of an object kept in memory (invariant 8) from its bytes
** fetched earlier: a copy (at AT, or anywhere), as a shared chunk is
** held.  0 if it has not been fetched yet.  Such chunks count in neither
** chunk_fetches nor chunk_hits (the requests and bytes count them). */
static int hold_kept(RcObj *c, uint64_t k, void *at, RcHeld *out) {
  uint8_t *b = atomic_load_explicit(&c->mem[k], memory_order_acquire);
  return b && hold_mem(k, b, chunk_len(c, k), at, 0, out);   /* not counted: not the cache's */
}

/* Hold chunk K from its cache file (invariants 2, 3).  Returns 1 on
** success, 0 if there is no good file.  A process of a world holds every
** chunk of the file for a share of its samples, so a hold is kept to a
** few system calls: open, flock, statx, the header's read, mmap, close. */
static int hold_file(RcObj *c, uint64_t k, void *at, RcHeld *out) {
  if (c->sealed) return hold_sealed(c, k, at, out);
  if (c->kept) return hold_kept(c, k, at, out);
  char path[32];
  chunk_path(c, k, path, sizeof path);
  int fd = open_in(c->ofd, path, O_RDONLY, 0);
  if (fd < 0) return 0;
  size_t len = chunk_len(c, k);
  uint8_t h[HDR] __attribute__((aligned(8)));
  struct statx sx;
  uint64_t sum = 0;
  /* Shared lock first: an evictor holding it is removing the file. */
  if (flock(fd, LOCK_SH | LOCK_NB) != 0
      || statx(fd, "", AT_EMPTY_PATH, STATX_NLINK | STATX_SIZE | STATX_MTIME | STATX_INO | STATX_BTIME | STATX_CTIME, &sx)
         != 0
      || sx.stx_nlink == 0) {
    close(fd);
    return 0;
  }
  if (pread(fd, h, HDR, 0) != HDR || !header_ok(c, k, h, &sum) || sx.stx_size != HDR + len) {
    drop_bad(c, path, fd);
    close(fd);
    return 0;
  }
  /* The bytes, and the header's checksum, are checked the first time a
  ** process of the machine holds this file: files are never changed in
  ** place (invariant 1), so the same file with the same header holds the
  ** same bytes.  "Same" is inode, device, birth and change time and the
  ** header's sum, so a file made anew in a reused inode, or changed in
  ** place, is checked again; without a birth time (a file system that
  ** keeps none) every hold checks. */
  uint64_t id = statx_id(&sx, sum), mine = atomic_load_explicit(&c->vino[k], memory_order_relaxed);
  if (id && mine != id && !atomic_load_explicit(&c->seeded, memory_order_relaxed)) {
    seed_verified(c);
    mine = atomic_load_explicit(&c->vino[k], memory_order_relaxed);
  }
  uint64_t shared = id && mine != id ? shared_id(c, k) : id;
  int check = id == 0 || shared != id;
  if (check && !header_sum_ok(h)) {
    drop_bad(c, path, fd);
    close(fd);
    return 0;
  }
  RcHeld m;
  if (!map_chunk(fd, k, len, at, &m)) {
    close(fd);
    return 0;
  }
  if (check && pdb_sum(m.data, len) != sum) {
    drop_bad(c, path, fd);
    if (at) unfix(at, len);
    else munmap(m.base, m.maplen);
    close(fd);
    return 0;
  }
  /* Most recently held: the eviction order (invariant 4).  To the minute:
  ** a metadata write per read would cost more than the read.  It moves
  ** the change time: the file's identity is taken again. */
  if (time(NULL) - sx.stx_mtime.tv_sec >= 60 && futimens(fd, NULL) == 0) {
    id = file_id(fd, NULL, sum);
    shared = 0;
  }
  note_verified(c, k, id, mine, shared);
  close(fd);          /* the mapping keeps the file and its flock */
  atomic_fetch_add(&rmt_stats.chunk_hits, 1);
  *out = m;
  return 1;
}

/* Hold LEN bytes at DATA in private memory (no room in the cache, counted
** if UNCACHED; or the bytes of a shared cache's chunk, always). */
static int hold_mem(uint64_t k, const uint8_t *data, size_t len, void *at, int uncached, RcHeld *out) {
  size_t maplen = page_round(len ? len : 1);
  /* Populated in one go: cheaper than a fault per page in the copy. */
  void *base = mmap(at, maplen, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | (at ? MAP_FIXED : 0), -1, 0);
  if (base == MAP_FAILED) return 0;
  memcpy(base, data, len);
  mprotect(base, maplen, PROT_READ);
  if (uncached) atomic_fetch_add(&rmt_stats.uncached, 1);
  *out = (RcHeld){ k, base, len, base, at ? len : maplen };
  return 1;
}

/*
** A chunk being received (rmt_fetch_sink), written as it arrives into its
** temporary file (invariant 1) and summed on the way.  curl hands the body
** over in pieces of 16 KiB at most; a write per piece cost a system call
** and ext4's per-write page-cache work each time, so the pieces are
** gathered in a small staging buffer (STAGE bytes, small enough to stay
** in the CPU's cache: the write copies them from there, not from memory)
** and written by one call when it is full.  The file's space is allocated
** in one go when the chunk starts.  The temporary stays open, and
** shared-locked, until the chunk is mapped from it (invariant 3): it is
** held without being opened again or its header read back.  Without room
** in the cache (or after a failed write) the chunk is gathered in memory
** instead and held from there (hold_mem).
*/
#define STAGE (256u << 10)

typedef struct Wr {
  int fd;                   /* the temporary file, or -1 */
  uint64_t need;            /* bytes reserved in usage for it, 0 none */
  uint8_t *mem;             /* the bytes, when not in a file */
  int pooled;               /* MEM is the pool's (pdb_buf_alloc), not malloc's */
  uint8_t *stage;           /* pieces not yet written (STAGE bytes) */
  size_t staged;            /* how many */
  uint64_t stage_at;        /* their offset in the chunk */
  XXH3_state_t *hs;         /* the sum so far */
  char tmp[96];              /* its name in the object's directory */
} Wr;

/* A fetch in progress: each chunk is stored and held as soon as it has
** arrived. */
typedef struct Fetch {
  RcObj *c;
  const uint64_t *k;
  void *const *at;
  RcHeld *out;
  Wr *w;
  uint8_t *held;            /* per chunk: stored and held */
  uint8_t *lazy;            /* per chunk, or NULL (all locked already): 0 not
                            ** locked yet, 2 locked by this fetch, 3 found
                            ** locked by another (passed over), 1 held from a
                            ** file another finished meanwhile */
  int nomem;
  int lockfd;               /* holds the chunks' fetch locks */
} Fetch;

/* Give up chunk I's file or memory. */
static void wr_drop(Fetch *f, int i) {
  Wr *w = &f->w[i];
  assert(w->fd >= 0 || w->need == 0);   /* a reservation is a temporary's */
  if (w->fd >= 0) {
    close(w->fd);
    usage_unlink(&f->c->cfg, f->c->ofd, w->tmp, w->need);
    w->fd = -1;
  }
  w->need = 0;
  if (w->pooled) pdb_buf_free(w->mem);
  else pdb_free(w->mem);
  w->mem = NULL;
  w->pooled = 0;
  w->staged = 0;
}

/* Write N bytes at B to chunk I's file at offset AT of the chunk. */
static int wr_file(Wr *w, const uint8_t *b, size_t n, uint64_t at) {
  while (n > 0) {
    ssize_t r = pwrite(w->fd, b, n, (off_t)(HDR + at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    b += r;
    n -= (size_t)r;
    at += (uint64_t)r;
  }
  return 1;
}

/* Gather chunk I in memory from now on, with the AT bytes its file and
** staging buffer have. */
static int wr_to_mem(Fetch *f, int i, uint64_t at) {
  Wr *w = &f->w[i];
  uint8_t *m = pdb_malloc(chunk_len(f->c, f->k[i]) ? chunk_len(f->c, f->k[i]) : 1);
  uint64_t infile = at - w->staged;
  if (!m || (infile && (w->fd < 0 || pread(w->fd, m, (size_t)infile, HDR) != (ssize_t)infile))) {
    pdb_free(m);
    return 0;
  }
  if (w->staged) memcpy(m + infile, w->stage, w->staged);
  wr_drop(f, i);
  w->mem = m;
  return 1;
}

/* Write chunk I's staged pieces into its file; on failure, gather it in
** memory (the AT bytes so far).  Returns 0 when neither works. */
static int wr_flush(Fetch *f, int i, uint64_t at) {
  Wr *w = &f->w[i];
  if (w->fd < 0 || w->staged == 0) return 1;
  if (wr_file(w, w->stage, w->staged, w->stage_at)) {
    w->staged = 0;
    return 1;
  }
  return wr_to_mem(f, i, at);
}

static int sink_begin(void *ctx, int i) {
  Fetch *f = ctx;
  Wr *w = &f->w[i];
  RcObj *c = f->c;
  if (f->lazy && f->lazy[i] == 0) {
    /* Invariant 5, taken as each chunk's request starts rather than for
    ** the whole batch at once: processes wanting the same chunks (the
    ** ranks of a world) then fetch different ones side by side, each with
    ** its requests in flight, instead of all but one waiting. */
    void *at = f->at ? f->at[i] : NULL;
    if (ofd_lock(f->lockfd, F_WRLCK, (off_t)f->k[i], 1, 0) != 0) {
      f->lazy[i] = 3;
      return 0;
    }
    if (hold_file(c, f->k[i], at, &f->out[i])) {   /* finished meanwhile */
      ofd_lock(f->lockfd, F_UNLCK, (off_t)f->k[i], 1, 0);
      f->lazy[i] = 1;
      f->held[i] = 1;
      return 0;
    }
    f->lazy[i] = 2;
  }
  wr_drop(f, i);
  XXH3_64bits_reset(w->hs);
  if (c->kept) {   /* gathered in memory, and kept there (invariant 8) */
    if (!wr_to_mem(f, i, 0)) f->nomem = 1;
    return 1;
  }
  /* A shared cache's chunk is gathered in memory, sealed and stored
  ** whole (sink_end): its plaintext never reaches the directory. */
  if (c->sealed) {
    /* From the pool: a buffer used before, its pages in place (a fresh
    ** one faulted a page at a time: most of a cold epoch's extra CPU). */
    if ((w->mem = pdb_buf_alloc(chunk_len(c, f->k[i]) ? chunk_len(c, f->k[i]) : 1, NULL))) w->pooled = 1;
    else f->nomem = 1;
    return 1;
  }
  uint64_t need = HDR + chunk_len(c, f->k[i]);
  /* The temporary exists, its name saying how many bytes it will hold,
  ** before the space is reserved: a scan from then on counts it (scan),
  ** so no eviction pass forgets a reservation in flight.  Shared-locked
  ** from its creation until it is held: another process's eviction
  ** (invariant 3) cannot take it after the rename. */
  snprintf(w->tmp, sizeof w->tmp, "%016llx.t.%ld.%llu.%llu", (unsigned long long)f->k[i], (long)getpid(),
           (unsigned long long)atomic_fetch_add(&tmpseq, 1), (unsigned long long)need);
  w->fd = open_in(c->ofd, w->tmp, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (w->fd >= 0 && (flock(w->fd, LOCK_SH | LOCK_NB) != 0 || !usage_add(&c->cfg, (int64_t)need))) {
    close(w->fd);
    unlinkat(c->ofd, w->tmp, 0);
    w->fd = -1;
  }
  if (w->fd >= 0) {
    w->need = need;
    /* One extent for the whole chunk: ext4 then skips its per-page
    ** delayed-allocation bookkeeping.  The size still grows as the bytes
    ** are written (KEEP_SIZE): a temporary's size says what it holds.
    ** Where it is not supported, the writes allocate. */
    if (fallocate(w->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)need) != 0) { /* EOPNOTSUPP and the like */ }
    if (w->stage || (w->stage = pdb_buf_alloc(STAGE, NULL))) return 1;
  }
  if (!wr_to_mem(f, i, 0)) f->nomem = 1;   /* then put refuses: the range fails */
  return 1;
}

static int sink_put(void *ctx, int i, const uint8_t *b, size_t n, uint64_t at) {
  Fetch *f = ctx;
  Wr *w = &f->w[i];
  assert(at + n <= chunk_len(f->c, f->k[i]));
  if (!f->c->sealed) XXH3_64bits_update(w->hs, b, n);   /* a sealed chunk needs no sum */
  if (w->fd >= 0 && w->staged + n > STAGE && !wr_flush(f, i, at)) return 0;
  if (w->fd >= 0) {
    assert(w->staged == 0 || at == w->stage_at + w->staged);
    if (n <= STAGE) {
      if (w->staged == 0) w->stage_at = at;
      memcpy(w->stage + w->staged, b, n);
      w->staged += n;
      return 1;
    }
    if (wr_file(w, b, n, at)) return 1;     /* a piece larger than the stage */
    if (!wr_to_mem(f, i, at)) return 0;
  }
  if (!w->mem) return 0;
  memcpy(w->mem + at, b, n);
  return 1;
}

/* Store chunk K's LEN bytes at B in a shared cache, sealed (invariant 7):
** encrypted in place (B's bytes are the ciphertext afterwards), written
** under a temporary name and renamed into place, as a private chunk is
** (invariant 1).  Best effort: the caller holds the bytes from memory
** whatever happens here (no room, a name another member of the group
** keeps in a sticky directory, a failed write). */
static void store_sealed(RcObj *c, uint64_t k, uint8_t *b, size_t len) {
  char name[32], tmp[96];
  chunk_path(c, k, name, sizeof name);
  uint64_t need = HDR + (uint64_t)len;
  snprintf(tmp, sizeof tmp, "%.16s.t.%ld.%llu.%llu", name, (long)getpid(),
           (unsigned long long)atomic_fetch_add(&tmpseq, 1), (unsigned long long)need);
  uint8_t h[HDR];
  memset(h, 0, HDR);
  if (!seal(c, k, b, len, b, h)) return;
  /* Group-readable: the other members hold it; only its seal makes it
  ** the object's. */
  int fd = open_in(c->ofd, tmp, O_RDWR | O_CREAT | O_EXCL, 0640);
  if (fd < 0) return;
  if (!usage_add(&c->cfg, (int64_t)need)) {
    close(fd);
    unlinkat(c->ofd, tmp, 0);
    return;
  }
  int good = 1;
  for (uint64_t at = 0; good && at < need;) {
    const uint8_t *p = at < HDR ? h + at : b + (at - HDR);
    size_t n = at < HDR ? HDR - (size_t)at : (size_t)(need - at);
    ssize_t r = pwrite(fd, p, n, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    good = r > 0;
    if (good) at += (uint64_t)r;
  }
  int ufd = good ? usage_lock(&c->cfg) : -1;   /* a scan sees one name */
  if (good) good = renameat(c->ofd, tmp, c->ofd, name) == 0;
  usage_unlock(ufd);
  if (!good) usage_unlink(&c->cfg, c->ofd, tmp, need);
  close(fd);
}

/* Chunk I has arrived whole (OK) or failed for good: finish its file,
** rename it into place and hold it from the file still open, or hold its
** bytes from memory; let go of its fetch lock. */
static void sink_end(void *ctx, int i, int ok) {
  Fetch *f = ctx;
  Wr *w = &f->w[i];
  RcObj *c = f->c;
  uint64_t k = f->k[i];
  size_t len = chunk_len(c, k);
  void *at = f->at ? f->at[i] : NULL;
  int arrived = ok;
  if (ok && !wr_flush(f, i, len)) ok = 0;
  if (ok && w->fd >= 0) {
    uint64_t sum = XXH3_64bits_digest(w->hs);
    uint8_t *h = malloc(HDR);
    char path[32];
    chunk_path(c, k, path, sizeof path);
    int good = h != NULL;
    if (good) encode(c, k, sum, len, h);
    good = good && pwrite(w->fd, h, HDR, 0) == HDR;
    free(h);
    int ufd = good ? usage_lock(&c->cfg) : -1;   /* a scan sees one name */
    if (good) good = renameat(c->ofd, w->tmp, c->ofd, path) == 0;
    usage_unlock(ufd);
    if (good) {
      w->need = 0;            /* the chunk file holds the reservation now */
      /* Bytes this process has just summed and written need no second
      ** reading: the tables name this very file, as the rename left it. */
      note_verified(c, k, file_id(w->fd, NULL, sum), 0, 0);
      if (map_chunk(w->fd, k, len, at, &f->out[i])) {
        f->held[i] = 1;
      } else {
        /* Not mappable: the file stays (a good chunk), the bytes are held
        ** from memory, read back from it. */
        uint8_t *m = pdb_malloc(len ? len : 1);
        if (m && pread(w->fd, m, len, HDR) == (ssize_t)len) w->mem = m;
        else pdb_free(m), ok = 0;
      }
      close(w->fd);           /* a mapping keeps the file and its flock */
      w->fd = -1;
    } else if (!wr_to_mem(f, i, len)) {
      ok = 0;
    }
  }
  if (ok && !f->held[i] && w->mem && hold_mem(k, w->mem, len, at, !c->sealed && !c->kept, &f->out[i])) f->held[i] = 1;
  if (ok && c->sealed && w->mem) store_sealed(c, k, w->mem, len);   /* held already: sealed in place */
  if (ok && c->kept && w->mem && !w->pooled) {
    /* Kept for the object's life; a thread that fetched it too keeps its own
    ** copy out (the bytes are the same: one version, pinned). */
    uint8_t *none = NULL;
    if (atomic_compare_exchange_strong(&c->mem[k], &none, w->mem)) w->mem = NULL;
  }
  /* Arrived but not held: the fetch must fail, never report it held. */
  if (arrived && !f->held[i]) f->nomem = 1;
  if (f->held[i] && !c->kept) atomic_fetch_add(&rmt_stats.chunk_fetches, 1);   /* kept: not the cache's */
  wr_drop(f, i);
  if (w->stage) pdb_buf_free(w->stage);
  w->stage = NULL;
  /* Stored: a process waiting for this chunk may take it now, before the
  ** rest of the batch has arrived. */
  if (f->lockfd >= 0) ofd_lock(f->lockfd, F_UNLCK, (off_t)k, 1, 0);
}

static const RmtSink kSink = { sink_begin, sink_put, sink_end };

/* Fetch chunks K[0..N) and hold them in OUT.  Their fetch locks are held
** on LOCKFD already (LAZY NULL), or taken on LOCKFD as each request starts
** (LAZY: N zeroed bytes; a chunk another process is fetching is passed
** over, LAZY 3, and not held).  Each lock is let go as soon as its chunk
** is stored. */
static int fetch_store(RcObj *c, const uint64_t *k, int n, void *const *at, RcHeld *out, int lockfd, uint8_t *lazy,
                       char *msg, size_t cap) {
  RmtRange *r = pdb_calloc((size_t)n, sizeof *r);
  uint8_t *held = pdb_calloc((size_t)n, 1);
  Wr *w = pdb_calloc((size_t)n, sizeof *w);
  int rc = r && held && w ? PAGEDB_OK : PAGEDB_NOMEM;
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    r[i].n = chunk_len(c, k[i]);
    r[i].off = k[i] * c->cfg.chunk;
    w[i].fd = -1;
    if (!(w[i].hs = XXH3_createState())) rc = PAGEDB_NOMEM;
  }
  if (rc == PAGEDB_NOMEM) snprintf(msg, cap, "out of memory fetching %d chunks of %s", n, rmt_url(c->obj));
  Fetch f = { c, k, at, out, w, held, lazy, 0, lockfd };
  if (rc == PAGEDB_OK) rc = rmt_fetch_sink(c->obj, r, n, &kSink, &f, msg, cap);
  if (rc == PAGEDB_OK && f.nomem) {
    rc = PAGEDB_NOMEM;
    snprintf(msg, cap, "out of memory holding a chunk of %s", rmt_url(c->obj));
  }
  for (int i = 0; i < n && rc != PAGEDB_OK && held; i++)
    if (held[i]) rc_release(&out[i], at != NULL);
  for (int i = 0; i < n && w; i++) {
    if (w[i].hs) wr_drop(&f, i);
    if (w[i].stage) pdb_buf_free(w[i].stage);
    XXH3_freeState(w[i].hs);
  }
  pdb_free(r);
  pdb_free(held);
  pdb_free(w);
  return rc;
}

int rc_hold(RcObj *c, const uint64_t *k, int n, void *const *at, RcHeld *out, char *msg, size_t cap) {
  uint8_t *st = pdb_calloc((size_t)n, 1);   /* 0 to do, 1 held, 3 being fetched by another */
  uint64_t *mine = pdb_malloc((size_t)n * sizeof *mine);
  void **mat = pdb_malloc((size_t)n * sizeof *mat);
  RcHeld *mout = pdb_malloc((size_t)n * sizeof *mout);
  int *midx = pdb_malloc((size_t)n * sizeof *midx);
  int rc = st && mine && mat && mout && midx ? PAGEDB_OK : PAGEDB_NOMEM;
  if (rc != PAGEDB_OK) snprintf(msg, cap, "out of memory reading %s", rmt_url(c->obj));
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    assert(k[i] < c->nchunk);
    if (hold_file(c, k[i], at ? at[i] : NULL, &out[i])) st[i] = 1;
  }
  /* Invariant 5: the missing ones whose fetch lock is free are ours,
  ** locked as their requests start (sink_begin); those another process is
  ** fetching are passed over and waited for below.  The lock file is
  ** opened per call: OFD locks of one open file description do not
  ** exclude each other, and threads must. */
  int nm = 0, lockfd = -1;
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    if (st[i]) continue;
    mine[nm] = k[i];
    mat[nm] = at ? at[i] : NULL;
    midx[nm++] = i;
  }
  if (rc == PAGEDB_OK && nm > 0 && c->kept) {
    /* In memory (invariant 8): no file, no lock; fetched by this call. */
    rc = fetch_store(c, mine, nm, mat, mout, -1, NULL, msg, cap);
    for (int j = 0; j < nm && rc == PAGEDB_OK; j++) {
      out[midx[j]] = mout[j];
      st[midx[j]] = 1;
    }
    nm = 0;
  }
  if (rc == PAGEDB_OK && nm > 0 && (lockfd = open_in(c->ofd, "lock", O_RDWR | O_CREAT, c->cfg.fmode)) < 0) {
    rc = PAGEDB_IOERR_LOCK;
    snprintf(msg, cap, "cache %s/lock: %s", c->dir, strerror(errno));
  }
  if (rc == PAGEDB_OK && nm > 0) {
    uint8_t *lazy = pdb_calloc((size_t)nm, 1);
    if (!lazy) {
      rc = PAGEDB_NOMEM;
      snprintf(msg, cap, "out of memory reading %s", rmt_url(c->obj));
    } else {
      rc = fetch_store(c, mine, nm, mat, mout, lockfd, lazy, msg, cap);
    }
    for (int j = 0; j < nm && rc == PAGEDB_OK; j++) {
      assert(lazy[j] != 0);
      if (lazy[j] == 3) {
        st[midx[j]] = 3;
      } else {
        out[midx[j]] = mout[j];
        st[midx[j]] = 1;
      }
    }
    pdb_free(lazy);
  }
  /* Those another process or thread was fetching: wait, holding nothing
  ** locked, then take the file (or fetch it, if that fetch failed). */
  for (int i = 0; i < n && rc == PAGEDB_OK; i++) {
    if (st[i] != 3) continue;
    if (ofd_lock(lockfd, F_WRLCK, (off_t)k[i], 1, 1) != 0) {
      rc = PAGEDB_IOERR_LOCK;
      snprintf(msg, cap, "cache %s: waiting for chunk %llu: %s", c->dir, (unsigned long long)k[i], strerror(errno));
      break;
    }
    void *a = at ? at[i] : NULL;
    if (!hold_file(c, k[i], a, &out[i])) rc = fetch_store(c, &k[i], 1, &a, &out[i], lockfd, NULL, msg, cap);
    ofd_lock(lockfd, F_UNLCK, (off_t)k[i], 1, 0);
    if (rc == PAGEDB_OK) st[i] = 1;
  }
  if (rc != PAGEDB_OK)
    for (int i = 0; i < n && st; i++)
      if (st[i] == 1) rc_release(&out[i], at != NULL);
  if (lockfd >= 0) close(lockfd);   /* drops any lock still held */
  pdb_free(st);
  pdb_free(mine);
  pdb_free(mat);
  pdb_free(mout);
  pdb_free(midx);
  return rc;
}

/* Put chunk K's LEN bytes at B (encrypted in place) in a shared cache in
** place of the file there: removed first, its bytes given back (a rename
** over it would replace it without the usage account knowing: invariant
** 4). */
static void replace_sealed(RcObj *c, uint64_t k, uint8_t *b, size_t len) {
  char name[32];
  struct stat st;
  chunk_path(c, k, name, sizeof name);
  if (fstatat(c->ofd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
    usage_unlink(&c->cfg, c->ofd, name, (uint64_t)st.st_size);
  store_sealed(c, k, b, len);
}

int rc_put_sealed(RcObj *c, uint64_t k, const uint8_t *b, size_t len) {
  if (!c->sealed || k >= c->nchunk || len != chunk_len(c, k)) return PAGEDB_MISUSE;
  uint8_t *copy = pdb_malloc(len ? len : 1);
  if (!copy) return PAGEDB_NOMEM;
  memcpy(copy, b, len);
  replace_sealed(c, k, copy, len);
  pdb_free(copy);
  return PAGEDB_OK;
}

int rc_refetch(RcObj *c, uint64_t k, uint8_t **out, size_t *len, int *differs, char *msg, size_t cap) {
  *out = NULL;
  *differs = -1;
  size_t n = chunk_len(c, k);
  uint8_t *b = pdb_malloc(n ? n : 1), *sealme = c->sealed ? pdb_malloc(n ? n : 1) : NULL;
  if (!b || (c->sealed && !sealme)) {
    pdb_free(b);
    pdb_free(sealme);
    snprintf(msg, cap, "out of memory fetching a chunk of %s again", rmt_url(c->obj));
    return PAGEDB_NOMEM;
  }
  RmtRange r = { b, n, k * c->cfg.chunk, 0 };
  int rc = n ? rmt_fetch(c->obj, &r, 1, msg, cap) : PAGEDB_OK;
  if (rc != PAGEDB_OK) {
    pdb_free(b);
    pdb_free(sealme);
    return rc;
  }
  if (c->sealed) {
    /* What the directory holds now: the same bytes (the server's own are
    ** what failed: nothing to replace), or others (or nothing good),
    ** replaced by the server's, sealed anew (invariant 1: the old file is
    ** unlinked, never changed, so a mapping of it elsewhere stays as it was). */
    RcHeld h;
    if (hold_sealed(c, k, NULL, &h)) {
      *differs = memcmp(h.data, b, n) != 0;
      rc_release(&h, 0);
    }
    if (*differs != 0) {
      memcpy(sealme, b, n);
      replace_sealed(c, k, sealme, n);
    }
  }
  pdb_free(sealme);
  *out = b;
  *len = n;
  return PAGEDB_OK;
}

int rc_file_agrees(RcObj *c, uint64_t k, uint64_t at, const uint8_t *b, size_t n) {
  RcHeld h;
  if (!c->sealed || !hold_sealed(c, k, NULL, &h)) return -1;
  int same = at <= h.len && n <= h.len - at && memcmp(h.data + at, b, n) == 0;
  rc_release(&h, 0);
  return same;
}
