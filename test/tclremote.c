/*
** tclremote.c -- the remote settings of pagedb_config for remote.test and
** push.test:
**
**   pagedb_config_remote NAME            -> {VALUE SOURCE} (GETREMOTE)
**   pagedb_config_remote NAME VALUE      -> set (a number for a number's
**                                           setting, any string for a string's)
**   pagedb_config_remote NAME -unset     -> forget (NULL, or -1)
**
** NAME is cache_dir, cache_bytes, cache_chunk, timeout, retries,
** connections, s3_endpoint, s3_region, ca_bundle, push_part_bytes,
** push_parallel, s3_access_key_id, s3_secret_access_key, s3_session_token
** or s3_profile.  A failing call is a Tcl error whose errorCode is
** {PAGEDB PAGEDB_NAME}, with GETREMOTE's message when it gives one.
*/
#include "tclpagedb.h"

#include <string.h>

static const struct {
  const char *name;
  int op;
  int isstr;
} kNames[] = {
  { "cache_dir", PAGEDB_CONFIG_CACHE_DIR, 1 },
  { "cache_bytes", PAGEDB_CONFIG_CACHE_BYTES, 0 },
  { "cache_chunk", PAGEDB_CONFIG_CACHE_CHUNK, 0 },
  { "timeout", PAGEDB_CONFIG_REMOTE_TIMEOUT, 0 },
  { "retries", PAGEDB_CONFIG_REMOTE_RETRIES, 0 },
  { "connections", PAGEDB_CONFIG_REMOTE_CONNECTIONS, 0 },
  { "s3_endpoint", PAGEDB_CONFIG_S3_ENDPOINT, 1 },
  { "s3_region", PAGEDB_CONFIG_S3_REGION, 1 },
  { "ca_bundle", PAGEDB_CONFIG_CA_BUNDLE, 1 },
  { "push_part_bytes", PAGEDB_CONFIG_PUSH_PART_BYTES, 0 },
  { "push_parallel", PAGEDB_CONFIG_PUSH_PARALLEL, 0 },
  { "s3_access_key_id", PAGEDB_CONFIG_S3_ACCESS_KEY_ID, 1 },
  { "s3_secret_access_key", PAGEDB_CONFIG_S3_SECRET_ACCESS_KEY, 1 },
  { "s3_session_token", PAGEDB_CONFIG_S3_SESSION_TOKEN, 1 },
  { "s3_profile", PAGEDB_CONFIG_S3_PROFILE, 1 },
};

static int configRemoteCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]){
  (void)cd;
  if( objc != 2 && objc != 3 ){
    Tcl_WrongNumArgs(interp, 1, objv, "NAME ?VALUE|-unset?");
    return TCL_ERROR;
  }
  const char *name = Tcl_GetString(objv[1]);
  int k = -1;
  for(int i = 0; i < (int)(sizeof kNames / sizeof kNames[0]); i++){
    if( strcmp(kNames[i].name, name) == 0 ) k = i;
  }
  if( k < 0 ){
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("unknown remote setting \"%s\"", name));
    return TCL_ERROR;
  }
  int rc;
  if( objc == 2 ){
    char buf[4200];
    const char *src = "?";
    rc = pagedb_config(PAGEDB_CONFIG_GETREMOTE, kNames[k].op, buf, sizeof buf, &src);
    if( rc ) return pdbError(interp, rc, buf);
    Tcl_Obj *pRes = Tcl_NewListObj(0, 0);
    Tcl_ListObjAppendElement(interp, pRes, Tcl_NewStringObj(buf, -1));
    Tcl_ListObjAppendElement(interp, pRes, Tcl_NewStringObj(src, -1));
    Tcl_SetObjResult(interp, pRes);
    return TCL_OK;
  }
  int unset = strcmp(Tcl_GetString(objv[2]), "-unset") == 0;
  if( kNames[k].isstr ){
    rc = pagedb_config(kNames[k].op, unset ? (const char *)0 : (const char *)Tcl_GetString(objv[2]));
  }else{
    int64_t v = -1;
    if( !unset && getInt64(interp, objv[2], &v) ) return TCL_ERROR;
    rc = pagedb_config(kNames[k].op, v);
  }
  if( rc ) return pdbError(interp, rc, "pagedb_config refused the value");
  return TCL_OK;
}

void Tclremote_Init(Tcl_Interp *interp){
  Tcl_CreateObjCommand(interp, "pagedb_config_remote", configRemoteCmd, 0, 0);
}
