#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyMethodDef methods[] = {{NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_cmars", NULL, -1, methods};
PyMODINIT_FUNC PyInit__cmars(void) { return PyModule_Create(&mod); }
