/*
** tclpagedb.h -- what the files of the Tcl test extension share.
*/
#ifndef TCLPAGEDB_H
#define TCLPAGEDB_H

#include <stdint.h>
#include <tcl.h>

#include "pagedb.h"

/* Leave "PAGEDB_NAME: MSG" in the interpreter and errorCode
** {PAGEDB PAGEDB_NAME}; return TCL_ERROR. */
int pdbError(Tcl_Interp *interp, int rc, const char *msg);

/* A hash of three words (splitmix64 chained): the test data generator's. */
uint64_t mix3(uint64_t a, uint64_t b, uint64_t c);

/* Read a 64-bit integer; a field number or name of DB (-1 if unknown);
** a type's name (tclpagedb.c). */
int getInt64(Tcl_Interp *interp, Tcl_Obj *o, int64_t *v);
int getField(pagedb *db, Tcl_Obj *o);
const char *typeName(int t);

/* DB ingest ... and DB verify ... on DB; the pagedb_testdata command
** (tcldata.c). */
int dbIngest(Tcl_Interp *interp, pagedb *db, int objc, Tcl_Obj *const objv[]);
int dbVerify(Tcl_Interp *interp, pagedb *db, int objc, Tcl_Obj *const objv[]);
int testdataCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[]);

/* Create pagedb_faultvfs, pagedb_vfs_find and pagedb_vfs_misuse
** (tclfault.c). */
void Tclfault_Init(Tcl_Interp *interp);

/* Create mem_fault_install, mem_fault and mem_fault_hits (tclmem.c). */
void Tclmem_Init(Tcl_Interp *interp);

/* Create the pool_* commands of pool.test (tclpool.c). */
int Tclpool_Init(Tcl_Interp *interp);

/* Create pagedb_syscall (tclsyscall.c). */
void Tclsyscall_Init(Tcl_Interp *interp);

/* Create pagedb_stress (tclstress.c). */
void Tclstress_Init(Tcl_Interp *interp);

/* Create pagedb_config_remote (tclremote.c). */
void Tclremote_Init(Tcl_Interp *interp);

/* Create pagedb_parts_race (tclpartsrace.c). */
void Tclpartsrace_Init(Tcl_Interp *interp);

#endif /* TCLPAGEDB_H */
