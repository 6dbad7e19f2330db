/* The current directory that the preload library joins a relative path with, kept between records
 * so that a DataLoader's 10,000 opens of "data/x.npy" cost one getcwd, not 10,000 (getcwd walks the
 * directory's path in the kernel: half a microsecond an open on a virtual machine, a third of what
 * recording an open costs there).
 *
 * Asked again after every change this library can see: chdir, fchdir and chroot (hooked here and
 * passed on), in any thread, and in a vfork or clone child that shares this process's memory; not
 * kept at all while glibc may change the directory inside itself, where no hook sees it: nftw with
 * FTW_CHDIR (for the call) and fts without FTS_NOCHDIR (from fts_open on). Kept only by
 * the process the log belongs to (a getpid at each keeping, which is rare), so that a vfork child's
 * directory never becomes its parent's. What it cannot see: a change by a raw system call
 * (syscall(SYS_chdir)), or the directory renamed while the program runs; a relative path is then
 * joined with the directory as it was last asked. Lock-free: a reader copies the kept directory and
 * uses it only when no change began meanwhile (a sequence count), else asks getcwd. */
#pragma once

/* The current directory into dir[PATH_MAX], terminated: 1, or 0 when unknown (getcwd failed). */
int cwd_get(char* dir);

/* In a child of fork(): the directory is the parent's, but another thread's keeping may have been
 * cut by the fork; asked again. */
void cwd_forked(void);
