/*
** tclpagedb.h -- what the files of the Tcl test extension share.
*/
#ifndef TCLPAGEDB_H
#define TCLPAGEDB_H

#include <stdint.h>
#include <tcl.h>

/* Leave "PAGEDB_NAME: MSG" in the interpreter and errorCode
** {PAGEDB PAGEDB_NAME}; return TCL_ERROR. */
int pdbError(Tcl_Interp *interp, int rc, const char *msg);

/* A hash of three words (splitmix64 chained): the test data generator's. */
uint64_t mix3(uint64_t a, uint64_t b, uint64_t c);

/* Create pagedb_faultvfs, pagedb_vfs_find and pagedb_vfs_misuse
** (tclfault.c). */
void Tclfault_Init(Tcl_Interp *interp);

/* Create mem_fault_install, mem_fault and mem_fault_hits (tclmem.c). */
void Tclmem_Init(Tcl_Interp *interp);

/* Create the pool_* commands of pool.test (tclpool.c). */
int Tclpool_Init(Tcl_Interp *interp);

#endif /* TCLPAGEDB_H */
