/* The exec targets of the preload library's X records (exec_target.h). */
#define _GNU_SOURCE
#include "exec_target.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { k_max_script_depth = 4 }; /* #! interpreters followed, as the kernel does */

/* Whether an LD_PRELOAD value (entries split by spaces and colons, as ld.so does) names self. */
static int preload_names(const char* value, const LibraryFile* self) {
  while (*value != '\0') {
    size_t n = strcspn(value, " :");
    if (n > 0 && n < PATH_MAX) {
      char entry[PATH_MAX];
      memcpy(entry, value, n);
      entry[n] = '\0';
      struct stat st;
      if (strcmp(entry, self->path) == 0 ||
          (stat(entry, &st) == 0 && st.st_dev == self->dev && st.st_ino == self->ino)) {
        return 1;
      }
    }
    value += n;
    value += strspn(value, " :");
  }
  return 0;
}

int exec_env_records_child(char* const envp[], const LibraryFile* self) {
  int preload = -1;
  int log = -1;
  if (envp == NULL) {
    return 0;
  }
  for (char* const* e = envp; *e != NULL && (preload < 0 || log < 0); ++e) {
    if (preload < 0 && strncmp(*e, "LD_PRELOAD=", 11) == 0) {
      preload = preload_names(*e + 11, self);
    } else if (log < 0 && strncmp(*e, "REPRUN_FILES_LOG=", 17) == 0) {
      log = (*e)[17] == '/'; /* the library ignores a relative one */
    }
  }
  return preload == 1 && log == 1;
}

/* Whether an ELF file (its first n bytes in head) has no PT_INTERP program header. */
static int elf_is_static(int fd, const unsigned char* head, ssize_t n) {
  if (n < EI_NIDENT || memcmp(head, ELFMAG, SELFMAG) != 0) {
    return 0;
  }
  uint64_t phoff;
  unsigned phentsize;
  unsigned phnum;
  if (head[EI_CLASS] == ELFCLASS64 && n >= (ssize_t)sizeof(Elf64_Ehdr)) {
    Elf64_Ehdr eh;
    memcpy(&eh, head, sizeof eh);
    phoff = eh.e_phoff;
    phentsize = eh.e_phentsize;
    phnum = eh.e_phnum;
  } else if (head[EI_CLASS] == ELFCLASS32 && n >= (ssize_t)sizeof(Elf32_Ehdr)) {
    Elf32_Ehdr eh;
    memcpy(&eh, head, sizeof eh);
    phoff = eh.e_phoff;
    phentsize = eh.e_phentsize;
    phnum = eh.e_phnum;
  } else {
    return 0;
  }
  if (phnum == 0 || phnum >= PN_XNUM || phentsize < 4) {
    return 0; /* nothing a kernel would run: leave it to the exec to fail */
  }
  for (unsigned i = 0; i < phnum; ++i) {
    uint32_t type;
    if (pread(fd, &type, sizeof type, (off_t)(phoff + (uint64_t)i * phentsize)) != sizeof type) {
      return 0;
    }
    if (type == PT_INTERP) {
      return 0;
    }
  }
  return 1;
}

/* Files are opened non-blocking (a FIFO must not hang the exec) and only regular files are read. */
int exec_is_static(const char* path) {
  char cur[PATH_MAX];
  size_t len = strlen(path);
  if (len >= sizeof cur) {
    return 0;
  }
  memcpy(cur, path, len + 1);
  for (int depth = 0; depth <= k_max_script_depth; ++depth) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, cur, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0) {
      return 0;
    }
    struct stat st;
    unsigned char head[256]; /* the kernel's BINPRM_BUF_SIZE */
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, head, sizeof head, 0) : -1;
    if (n >= 2 && head[0] == '#' && head[1] == '!') {
      close(fd);
      ssize_t i = 2;
      while (i < n && (head[i] == ' ' || head[i] == '\t')) {
        ++i;
      }
      ssize_t start = i;
      while (i < n && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && head[i] != '\0') {
        ++i;
      }
      if (i == start) {
        return 0;
      }
      memcpy(cur, head + start, (size_t)(i - start));
      cur[i - start] = '\0';
      continue;
    }
    int is_static = n > 0 && elf_is_static(fd, head, n);
    close(fd);
    return is_static;
  }
  return 0;
}

int exec_search_path(const char* file, char* out) {
  const char* path = getenv("PATH");
  if (path == NULL) {
    path = "/bin:/usr/bin"; /* glibc's default, confstr(_CS_PATH) */
  }
  size_t flen = strlen(file);
  for (;;) {
    size_t dlen = strcspn(path, ":");
    if (dlen + 1 + flen < PATH_MAX) {
      if (dlen == 0) {
        memcpy(out, file, flen + 1); /* an empty entry: the current directory */
      } else {
        memcpy(out, path, dlen);
        out[dlen] = '/';
        memcpy(out + dlen + 1, file, flen + 1);
      }
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) {
        return 1;
      }
    }
    if (path[dlen] == '\0') {
      return 0;
    }
    path += dlen + 1;
  }
}
