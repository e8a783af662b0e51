/*
** shellentry.c -- the pagedb shell (shell/) inside the Python module, so
** that a pip install has the same shell: python -m pagedb ARGS and the
** pagedb console script call _pagedb.shell_main([argv0, ARGS...]).
**
** The shell's sources are compiled into the module with PDB_SHELL_MAIN
** defined to pdb_shell_main (setup.py, Makefile.am), the name its main()
** then takes.  It runs as the pagedb program does, with one difference
** made up for here: CPython ignores SIGPIPE, which a program starts with
** at its default, so a pipe closed early ("pagedb x .dump | head") would
** become write errors instead of the quiet end it is for ./pagedb.  The
** shell's state is static and main() runs once in a program: a second call
** in one process is refused.  The GIL is released while it runs.
*/
#include "pypagedb.h"

#include <signal.h>

int pdb_shell_main(int argc, char **argv);

PyObject *pypdb_shell_main(PyObject *self, PyObject *arg) {
  static int ran;
  if (ran) {
    PyErr_SetString(PyExc_RuntimeError, "shell_main: the shell runs once in a process (it is its main())");
    return NULL;
  }
  PyObject *seq = PySequence_Fast(arg, "shell_main(argv): argv is a list of str, argv[0] the program's name");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n < 1 || n > INT_MAX - 1) {
    Py_DECREF(seq);
    PyErr_SetString(PyExc_ValueError, "shell_main(argv): argv needs the program's name first");
    return NULL;
  }
  PyObject **enc = PyMem_Calloc((size_t)n, sizeof *enc);
  char **argv = PyMem_Calloc((size_t)n + 1, sizeof *argv);
  PyObject *res = NULL;
  if (!enc || !argv) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    /* As the OS gave them: str arguments back to bytes with the file
    ** system encoding (surrogateescape), as sys.argv was decoded. */
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &enc[i])) goto done;
    argv[i] = PyBytes_AS_STRING(enc[i]);
  }
  ran = 1;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  signal(SIGPIPE, SIG_DFL);
  rc = pdb_shell_main((int)n, argv);
  fflush(stdout);
  fflush(stderr);
  Py_END_ALLOW_THREADS
  res = PyLong_FromLong(rc);
done:
  if (enc)
    for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(enc[i]);
  PyMem_Free(enc);
  PyMem_Free(argv);
  Py_DECREF(seq);
  return res;
}
