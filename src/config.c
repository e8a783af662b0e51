/*
** config.c -- pagedb_config: each op goes to the layer that owns it.
**
**   1..6   the allocator, the pool, the memory limit   src/mem.c
**   7..23  the remote settings                          vfs/rconfig.c
**   24     the busy timeout                             src/pager.c
**   25, 26 the bound on open parts, small parts' copies  src/parts.c
**
** The allocator and pool ops may be used only while the library is not
** initialized (mem.c checks); MEMLIMIT and the remote settings at any
** time.  Here, above both layers, so that neither calls upward.
*/
#include "pagedbInt.h"
#include "api.h"
#include "os.h"
#include "pager.h"

#include <stdarg.h>

int pagedb_config(int op, ...) {
  va_list ap;
  va_start(ap, op);
  int rc;
  if (op == PAGEDB_CONFIG_GETREMOTE) rc = pdb_rconf_get(ap);
  else if ((op >= PAGEDB_CONFIG_CACHE_DIR && op <= PAGEDB_CONFIG_PUSH_PARALLEL)
           || (op >= PAGEDB_CONFIG_S3_ACCESS_KEY_ID && op <= PAGEDB_CONFIG_CACHE_SHARED))
    rc = pdb_rconf_set(op, ap);
  else if (op == PAGEDB_CONFIG_BUSY_TIMEOUT) rc = pager_busy_config(va_arg(ap, int64_t));
  else if (op == PAGEDB_CONFIG_PARTS_OPEN) rc = parts_open_config(va_arg(ap, int64_t));
  else if (op == PAGEDB_CONFIG_PARTS_COPY) rc = parts_copy_config(va_arg(ap, int64_t));
  else rc = pdb_mem_config(op, ap);
  va_end(ap);
  return rc;
}
