/* The audit hook in C that gives a Python process's opens their program line: see py_audit.h. */
#define _GNU_SOURCE
#include "py_audit.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* Python's C API, found in the global scope (no Python header: the library builds without one and
 * loads into any interpreter from 3.9, whose stable functions these are). */
typedef void PyObject;
typedef long Py_ssize_t;
typedef int (*AuditHook)(const char* event, PyObject* args, void* data);

static struct {
  int (*add_audit_hook)(AuditHook, void*);
  PyObject* (*eval_get_frame)(void);                   /* borrowed */
  PyObject* (*frame_get_back)(PyObject*);              /* new */
  PyObject* (*frame_get_code)(PyObject*);              /* new */
  int (*frame_get_line_number)(PyObject*);
  int (*frame_get_lasti)(PyObject*);                   /* 3.11 on; NULL before: no cache */
  PyObject* (*object_get_attr)(PyObject*, PyObject*);  /* new */
  PyObject* (*unicode_intern_from_string)(const char*); /* new */
  const char* (*unicode_as_utf8_and_size)(PyObject*, Py_ssize_t*);
  int (*unicode_fs_converter)(PyObject*, void*);       /* str, bytes, os.PathLike -> bytes (new) */
  int (*bytes_as_string_and_size)(PyObject*, char**, Py_ssize_t*);
  Py_ssize_t (*tuple_size)(PyObject*);
  PyObject* (*tuple_get_item)(PyObject*, Py_ssize_t); /* borrowed */
  int (*dict_set_item_string)(PyObject*, const char*, PyObject*);
  PyObject* (*dict_get_item_string)(PyObject*, const char*);     /* borrowed */
  PyObject* (*unicode_from_string)(const char*);                  /* new */
  PyObject* (*call_function_obj_args)(PyObject*, ...);            /* new */
  void (*inc_ref)(PyObject*);
  void (*err_clear)(void);
  void (*dec_ref)(PyObject*);
  PyObject* true_object;
} py;

enum {
  k_where_max = 1024,  /* a longer "file:line" is not handed on */
  k_prefix_bytes = 16384,
  k_prefix_max = 128,
};

/* Set once, at the arm event (under the interpreter's lock), then only read. */
static int g_armed;
static char g_prefix_text[k_prefix_bytes];
static const char* g_prefix[k_prefix_max];
static size_t g_prefix_len[k_prefix_max];
static size_t g_prefixes;
static char g_cwd[PATH_MAX];
static size_t g_cwd_len;
static PyObject* g_co_filename; /* the attribute's name, interned once */
/* files.py's hook, called from this one for the events it records besides opens (listings, chdir,
 * ctypes.dlopen): a strong reference, or NULL. Python's own audit hook would be called at every
 * event of the interpreter (10,000 in `import torch`); this one calls into Python for those only. */
static PyObject* g_forward;

/* The open this thread's Python announced last, until the next open takes it. Initial-exec TLS: no
 * allocation on first access (the library is preloaded). */
typedef struct Pending {
  size_t len;      /* of the path; 0: nothing announced */
  char path[PATH_MAX]; /* its bytes, when len <= PATH_MAX (any path an open can take) */
  uint64_t digest; /* of its bytes, when longer (an open that fails: ENAMETOOLONG) */
  int file_object; /* announced with a mode: a Python file object's open (py_audit.h) */
  size_t where_len;
  char where[k_where_max];
} Pending;
static __thread Pending t_pending __attribute__((tls_model("initial-exec")));
static __thread int t_busy __attribute__((tls_model("initial-exec")));

/* The line found last at the innermost frame (the program's own, or the import system's), by that
 * frame's code object and instruction offset: a loop that opens files from one line (a Dataset's
 * __getitem__, the import system's get_data) reads no line table and no file name again. The code
 * object is held (a reference), so it cannot be freed and its address given to another while it is
 * the key. A line found further out is not kept: it depends on the callers. */
typedef struct LastWhere {
  PyObject* code; /* a strong reference, or NULL */
  int lasti;
  size_t where_len;
  char where[k_where_max];
} LastWhere;
static __thread LastWhere t_last __attribute__((tls_model("initial-exec")));

static uint64_t digest(const char* s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (size_t i = 0; i < n; ++i) {
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  }
  return h;
}

/* Whether s[0..n) is all ASCII: eight bytes at a time. */
static int is_ascii(const char* s, size_t n) {
  uint64_t any = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, sizeof w);
    any |= w;
  }
  for (; i < n; ++i) {
    any |= (unsigned char)s[i];
  }
  return (any & 0x8080808080808080ull) == 0;
}

static int starts_with(const char* s, size_t n, const char* p, size_t pn) {
  return n >= pn && memcmp(s, p, pn) == 0;
}

static int under_prefix(const char* s, size_t n) {
  for (size_t i = 0; i < g_prefixes; ++i) {
    if (starts_with(s, n, g_prefix[i], g_prefix_len[i])) {
      return 1;
    }
  }
  return 0;
}

/* A str's UTF-8 bytes (borrowed from it), or NULL with no error left set. */
static const char* utf8(PyObject* s, size_t* n) {
  Py_ssize_t len = 0;
  const char* p = s != NULL ? py.unicode_as_utf8_and_size(s, &len) : NULL;
  if (p == NULL) {
    py.err_clear();
    return NULL;
  }
  *n = (size_t)len;
  return p;
}

/* (prefixes, cwd, state): files.py's folders, its directory, and where to say the hook is here. */
static void arm(PyObject* args) {
  if (g_armed || py.tuple_size(args) != 3) {
    py.err_clear();
    return;
  }
  PyObject* prefixes = py.tuple_get_item(args, 0);
  Py_ssize_t count = prefixes != NULL ? py.tuple_size(prefixes) : -1;
  size_t used = 0, n = 0;
  const char* cwd = utf8(py.tuple_get_item(args, 1), &n);
  if (count < 0 || cwd == NULL || n >= sizeof g_cwd) {
    py.err_clear();
    return;
  }
  memcpy(g_cwd, cwd, n);
  g_cwd_len = n;
  for (Py_ssize_t i = 0; i < count; ++i) {
    const char* p = utf8(py.tuple_get_item(prefixes, i), &n);
    if (p == NULL || g_prefixes == k_prefix_max || used + n > sizeof g_prefix_text) {
      return; /* not armed: files.py's own hook keeps the opens */
    }
    memcpy(g_prefix_text + used, p, n);
    g_prefix[g_prefixes] = g_prefix_text + used;
    g_prefix_len[g_prefixes++] = n;
    used += n;
  }
  g_co_filename = py.unicode_intern_from_string("co_filename");
  PyObject* state = py.tuple_get_item(args, 2);
  PyObject* forward = state != NULL ? py.dict_get_item_string(state, "hook") : NULL;
  if (g_co_filename == NULL || forward == NULL || py.dict_set_item_string(state, "native", py.true_object) != 0) {
    py.err_clear();
    return;
  }
  py.inc_ref(forward);
  g_forward = forward;
  g_armed = 1;
}

/* The events files.py records besides opens (its _NATIVE_EVENTS). */
static int forwarded(const char* event) {
  if (event[0] == 'o') {
    return strcmp(event, "os.listdir") == 0 || strcmp(event, "os.scandir") == 0 || strcmp(event, "os.chdir") == 0;
  }
  return event[0] == 'c' && strcmp(event, "ctypes.dlopen") == 0;
}

/* files.py's hook(event, args); it never raises, and an error here is dropped: an audit hook that
 * fails would fail the program's call. */
static void forward(const char* event, PyObject* args) {
  PyObject* name = py.unicode_from_string(event);
  PyObject* result = name != NULL ? py.call_function_obj_args(g_forward, name, args, NULL) : NULL;
  if (result != NULL) {
    py.dec_ref(result);
  } else {
    py.err_clear();
  }
  if (name != NULL) {
    py.dec_ref(name);
  }
}

/* Whether the innermost frame, running `code` at `lasti`, is t_last's: its line copied into p. */
static int take_last(Pending* p, PyObject* code, int lasti) {
  if (code == NULL || code != t_last.code || lasti != t_last.lasti || lasti < 0) {
    return 0;
  }
  memcpy(p->where, t_last.where, t_last.where_len);
  p->where_len = t_last.where_len;
  return 1;
}

/* Keeps p's line as the innermost frame's (code at lasti); `code` is a reference this takes over. */
static void keep_last(const Pending* p, PyObject* code, int lasti) {
  PyObject* old = t_last.code;
  t_last.code = code;
  t_last.lasti = lasti;
  memcpy(t_last.where, p->where, p->where_len);
  t_last.where_len = p->where_len;
  if (old != NULL) {
    py.dec_ref(old);
  }
}

/* "file:line" of the program's frame into p->where, "import" for the import system's, or nothing. */
static void find_where(Pending* p) {
  PyObject* frame = py.eval_get_frame();
  int owned = 0, first = 1;
  while (frame != NULL) {
    PyObject* code = py.frame_get_code(frame);
    const int lasti = first && py.frame_get_lasti != NULL ? py.frame_get_lasti(frame) : -1;
    if (first && take_last(p, code, lasti)) {
      py.dec_ref(code);
      return; /* frame is borrowed: nothing else to release */
    }
    PyObject* name = code != NULL ? py.object_get_attr(code, g_co_filename) : NULL;
    size_t n = 0;
    const char* s = utf8(name, &n);
    int done = 0;
    if (s != NULL && first && starts_with(s, n, "<frozen importlib", 17)) {
      memcpy(p->where, "import", 6);
      p->where_len = 6;
      done = 1;
    } else if (s != NULL && n > 0 && s[0] != '<' && !under_prefix(s, n)) {
      if (g_cwd_len > 0 && starts_with(s, n, g_cwd, g_cwd_len)) {
        s += g_cwd_len;
        n -= g_cwd_len;
      }
      char digits[24];
      int line = py.frame_get_line_number(frame);
      size_t dn = 0;
      unsigned v = line > 0 ? (unsigned)line : 0u;
      do {
        digits[sizeof digits - 1 - dn++] = (char)('0' + v % 10);
        v /= 10;
      } while (v != 0);
      if (n + 1 + dn <= sizeof p->where) {
        memcpy(p->where, s, n);
        p->where[n] = ':';
        memcpy(p->where + n + 1, digits + sizeof digits - dn, dn);
        p->where_len = n + 1 + dn;
      }
      done = 1;
    }
    if (name != NULL) {
      py.dec_ref(name);
    }
    if (code != NULL && done && first && lasti >= 0 && p->where_len > 0) {
      keep_last(p, code, lasti); /* the reference now held by t_last */
    } else if (code != NULL) {
      py.dec_ref(code);
    } else {
      py.err_clear();
    }
    if (done) {
      break;
    }
    PyObject* back = py.frame_get_back(frame);
    if (owned) {
      py.dec_ref(frame);
    }
    frame = back;
    owned = 1;
    first = 0;
  }
  if (owned && frame != NULL) {
    py.dec_ref(frame);
  }
}

static void announce_open(PyObject* args) {
  Pending* p = &t_pending;
  p->len = 0;
  PyObject* path = py.tuple_size(args) >= 1 ? py.tuple_get_item(args, 0) : NULL;
  PyObject* bytes = NULL;
  const char* s = NULL;
  Py_ssize_t n = 0;
  if (path == NULL) {
    py.err_clear();
    return;
  }
  /* A str of ASCII (the usual path): its UTF-8, cached in it, is what libc gets. Else the
   * interpreter's own conversion (the file system encoding, surrogate escapes, os.PathLike,
   * bytes); an fd (an int) or anything else that names no path hands nothing on. */
  s = py.unicode_as_utf8_and_size(path, &n);
  int ascii = s != NULL && is_ascii(s, (size_t)n);
  if (!ascii) {
    py.err_clear();
    char* b = NULL;
    if (py.unicode_fs_converter(path, &bytes) == 0 || bytes == NULL ||
        py.bytes_as_string_and_size(bytes, &b, &n) != 0) {
      py.err_clear();
      if (bytes != NULL) {
        py.dec_ref(bytes);
      }
      return;
    }
    s = b;
  }
  if (n <= 0) {
    if (bytes != NULL) {
      py.dec_ref(bytes);
    }
    return;
  }
  p->where_len = 0;
  find_where(p);
  if (p->where_len > 0) {
    if ((size_t)n <= sizeof p->path) {
      memcpy(p->path, s, (size_t)n);
    } else {
      p->digest = digest(s, (size_t)n);
    }
    p->len = (size_t)n;
    /* ("Osi": path, mode, flags) from a file object; os.open's mode is None, which has no UTF-8. */
    PyObject* mode = py.tuple_size(args) >= 2 ? py.tuple_get_item(args, 1) : NULL;
    Py_ssize_t mode_len = 0;
    p->file_object = mode != NULL && py.unicode_as_utf8_and_size(mode, &mode_len) != NULL;
    if (!p->file_object) {
      py.err_clear();
    }
  }
  if (bytes != NULL) {
    py.dec_ref(bytes);
  }
}

static int hook(const char* event, PyObject* args, void* data) {
  (void)data;
  if (event[0] == 'o' && strcmp(event, "open") == 0) {
    if (g_armed && !t_busy) {
      t_busy = 1; /* a path's __fspath__ may open files: those go unannounced */
      announce_open(args);
      t_busy = 0;
    }
  } else if (event[0] == 'r' && strcmp(event, "reprun.files.arm") == 0) {
    arm(args);
  } else if (g_armed && forwarded(event)) {
    forward(event, args);
  }
  return 0;
}

size_t py_audit_take(const char* path, char* out, size_t cap, int* file_object) {
  Pending* p = &t_pending;
  *file_object = 0;
  if (p->len == 0) {
    return 0;
  }
  size_t len = p->len;
  p->len = 0;
  size_t n = strlen(path);
  const int same = n == len && (len <= sizeof p->path ? memcmp(path, p->path, len) == 0 : digest(path, n) == p->digest);
  if (!same || p->where_len > cap) {
    return 0;
  }
  memcpy(out, p->where, p->where_len);
  *file_object = p->file_object;
  return p->where_len;
}

#define FIND(field, name)                               \
  do {                                                  \
    *(void**)&py.field = dlsym(RTLD_DEFAULT, name);     \
    if (py.field == NULL) {                             \
      return;                                           \
    }                                                   \
  } while (0)

void py_audit_install(void) {
  py.add_audit_hook = NULL;
  if (dlsym(RTLD_DEFAULT, "PySys_AddAuditHook") == NULL) {
    return; /* not a Python process (the usual case): nothing else is looked up */
  }
  FIND(eval_get_frame, "PyEval_GetFrame");
  FIND(frame_get_back, "PyFrame_GetBack");
  FIND(frame_get_code, "PyFrame_GetCode");
  FIND(frame_get_line_number, "PyFrame_GetLineNumber");
  FIND(object_get_attr, "PyObject_GetAttr");
  FIND(unicode_intern_from_string, "PyUnicode_InternFromString");
  FIND(unicode_as_utf8_and_size, "PyUnicode_AsUTF8AndSize");
  FIND(unicode_fs_converter, "PyUnicode_FSConverter");
  FIND(bytes_as_string_and_size, "PyBytes_AsStringAndSize");
  FIND(tuple_size, "PyTuple_Size");
  FIND(tuple_get_item, "PyTuple_GetItem");
  FIND(dict_set_item_string, "PyDict_SetItemString");
  FIND(dict_get_item_string, "PyDict_GetItemString");
  FIND(unicode_from_string, "PyUnicode_FromString");
  FIND(call_function_obj_args, "PyObject_CallFunctionObjArgs");
  FIND(inc_ref, "Py_IncRef");
  FIND(err_clear, "PyErr_Clear");
  FIND(dec_ref, "Py_DecRef");
  *(void**)&py.frame_get_lasti = dlsym(RTLD_DEFAULT, "PyFrame_GetLasti"); /* optional */
  FIND(true_object, "_Py_TrueStruct");
  FIND(add_audit_hook, "PySys_AddAuditHook");
  py.add_audit_hook(hook, NULL);
}
