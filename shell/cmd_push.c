/*
** cmd_push.c -- .push and .pull: a dataset to object storage or a served
** directory (pagedb_push), and a remote dataset to local files
** (pagedb_pull).  The work and its guarantees (catalog last, nothing
** half-pushed opens) are the library's: see pagedb.h.
*/
#include "shell.h"

#include <string.h>

/* USAGE: .push DEST
** Copy the open dataset's committed samples to DEST (s3://BUCKET/KEY,
** an http(s) URL taking PUT, or a local path or directory). */
int dotPush(ShellState *p, int nArg, char **azArg){
  if( nArg != 2 ){
    shellError(p, "usage: .push DEST");
    return 1;
  }
  if( shellNeedDb(p, ".push") ) return 1;
  int rc = pagedb_push(p->db, azArg[1]);
  if( rc ){
    shellError(p, ".push %s: %s (%s)", azArg[1], pagedb_errname(rc), pagedb_errmsg(p->db));
    return 1;
  }
  fprintf(p->out, "pushed %s to %s\n", pagedb_path(p->db), azArg[1]);
  return 0;
}

/* USAGE: .pull SRC DEST
** Download the remote dataset SRC to the local path DEST. */
int dotPull(ShellState *p, int nArg, char **azArg){
  if( nArg != 3 ){
    shellError(p, "usage: .pull SRC DEST");
    return 1;
  }
  char zMsg[1024];
  int rc = pagedb_pull(azArg[1], azArg[2], zMsg, sizeof zMsg);
  if( rc ){
    shellError(p, ".pull %s %s: %s (%s)", azArg[1], azArg[2], pagedb_errname(rc), zMsg);
    return 1;
  }
  fprintf(p->out, "pulled %s to %s\n", azArg[1], azArg[2]);
  return 0;
}
