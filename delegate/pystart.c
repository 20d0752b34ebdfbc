/* Starting the embedded Python in a C/C++ host without risking the host process.
 *
 * cffi starts Python with Py_InitializeEx, which abort()s the whole process when Python cannot find
 * its standard library (wrong PYTHONHOME, a venv that moved, ...). Starting it first with the PyConfig
 * API turns such failures into an error status; cffi then finds Python running and only attaches. In
 * a Python host (Py_IsInitialized) nothing happens here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdio.h>

#include "pybridge.h"

/* Python is process-wide, and so is the outcome of starting it: a runtime whose start-up failed half
 * way must never be entered again, by any delegate instance. */
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static char start_error[256];

static void start_python(void)
{
    if (Py_IsInitialized())
        return;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0; /* the host owns its signals */
    config.configure_c_stdio = 0;       /* and its stdio buffering */
    config.parse_argv = 0;
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        snprintf(start_error, sizeof(start_error), "%s%s%s", status.func ? status.func : "",
                 status.func ? ": " : "", status.err_msg ? status.err_msg : "unknown error");
        return;
    }
    PyEval_SaveThread(); /* as cffi does after its own start-up: callers take the GIL per call */
}

int teflon_python_ready(char *err, size_t errlen)
{
    pthread_once(&start_once, start_python);
    if (!start_error[0])
        return 0;
    snprintf(err, errlen, "the embedded Python could not start (%s); check PYTHONHOME/PYTHONPATH, or put the "
             "virtual environment's bin directory first on PATH", start_error);
    return -1;
}
