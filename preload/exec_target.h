/* What an exec or a posix_spawn will run, for the preload library's X records: the PATH search of
 * execvp and posix_spawnp, whether the program (a #! script: its interpreter) is statically
 * linked, and whether the child's environment loads this library and names the log. Called inside
 * hooks, vfork children included: stack only, no allocation, no lock, and its own reads go through
 * the raw system call, so they are never recorded. */
#pragma once

#include <sys/types.h>

/* This library's file, to find it in a child's LD_PRELOAD. */
typedef struct LibraryFile {
  const char* path; /* as the dynamic loader named it (dladdr) */
  dev_t dev;
  ino_t ino;
} LibraryFile;

/* glibc's search of the caller's PATH for file (which has no '/'): the first candidate that is an
 * executable regular file, into out[PATH_MAX]; 0 when none is. */
int exec_search_path(const char* file, char* out);

/* Whether the program at path has no PT_INTERP program header (followed through #! lines as the
 * kernel does); 0 when it cannot be read. */
int exec_is_static(const char* path);

/* Whether a child with the environment envp loads the library (an LD_PRELOAD entry names it by
 * path or by another path to the same file) and finds the log (REPRUN_FILES_LOG absolute). The
 * first entry of each name counts, as getenv reads it. */
int exec_env_records_child(char* const envp[], const LibraryFile* self);
