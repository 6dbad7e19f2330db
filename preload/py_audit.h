/* The program's line of each open a Python process makes, handed to the preload library's own record
 * of that open (issue 36): an audit hook in C, added with PySys_AddAuditHook when the process is a
 * Python interpreter (its C API in the global scope: python3's binary or libpython). It replaces
 * the capture's Python-level hook for opens (python/reprun_capture/files.py), which cost a Python
 * call, a frame walk in Python and a second write per open; listings, chdir and the modules at exit
 * stay there.
 *
 * The hook acts once the capture arms it: files.py raises the audit event "reprun.files.arm" with
 * (prefixes, cwd, state): the folders whose frames are not the program's (its standard library,
 * site-packages, reprun's python/), the directory cut from file names, and a dict in which the hook
 * sets "native" to say it is there. At an "open" event it finds the program's frame (the innermost
 * not under a prefix, not "<...>"), or the import system's (a module's source or .pyc), and leaves
 * it in a thread-local slot with the path's bytes; the open that follows in the same
 * thread (Python opens with libc's open right after the event) takes it into its O record when its
 * path's bytes match. No I/O here: the record is the preload library's one write.
 *
 * An open announced with a mode (a str: a Python file object's, builtins.open, io.open_code; not
 * os.open's None) is a FileIO's, which fstat()s its new descriptor right after it opens it, before
 * anything reads it: the library can write that open's record at that fstat, with its result. */
#pragma once

#include <stddef.h>

/* Adds the hook when this process is a Python interpreter; nothing otherwise. Once, from the
 * library's constructor (PySys_AddAuditHook may be called before Py_Initialize). */
void py_audit_install(void);

/* For an open of `path` (as libc got it): the program's line that Python announced for it ("file:
 * line", or "import" for the import system's), copied into out (at most cap bytes, not terminated),
 * and its length; 0 when this thread announced no open of these bytes. *file_object: 1 when the
 * announced open is a Python file object's (above), else 0. The slot is emptied either way.
 * Thread-local only: safe in any hook. */
size_t py_audit_take(const char* path, char* out, size_t cap, int* file_object);
