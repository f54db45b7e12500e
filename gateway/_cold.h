/* Forced into the mypyc group's C files (setup.py, `-include`).

   mypyc follows nearly every call with an `unlikely` test that leads to
   one of these helpers, which record a traceback or raise. Declared cold,
   GCC moves those blocks out of their functions into .text.unlikely, so
   the code a request runs sits on fewer cache lines and pages. */
#include <Python.h>

__attribute__((cold)) void CPy_AddTraceback(const char *filename, const char *funcname, int line,
                                            PyObject *globals);
__attribute__((cold)) void CPy_TypeErrorTraceback(const char *filename, const char *funcname,
                                                  int line, PyObject *globals,
                                                  const char *expected, PyObject *value);
__attribute__((cold)) void CPy_AttributeError(const char *filename, const char *funcname,
                                              const char *classname, const char *attrname,
                                              int line, PyObject *globals);
__attribute__((cold)) void CPy_TypeError(const char *expected, PyObject *value);
__attribute__((cold)) void CPyError_OutOfMemory(void);
