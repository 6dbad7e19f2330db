# The preload library under load (preload/reprun_preload.c, issue 36): 8 threads, released at once,
# each create and open 2,000 files with long names. Every line of the log parses (8 fields, a
# numeric pid), none is interleaved with another, and there are exactly 16,000 O records, one per
# file, each created. A C program where gcc is found, else Python's threads (they let the GIL go
# around open(), so the hooks run at once there too). Then a program that takes the log's
# descriptor number (dup2 of its own file onto it, then os.closerange of every descriptor) and goes
# on opening files: its file holds only its own lines, and its opens are still recorded.
source "$(dirname "$0")/lib.sh"
LIB="$(cd "$(dirname "$REPRUN")" && pwd -P)/libreprun_preload.so"
[[ -f $LIB ]] || skip "libreprun_preload.so is not built beside $REPRUN"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3) || skip "no python3"
mkdir w && cd w || exit 1

cat >stress.c <<'C'
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static pthread_barrier_t start;
static void* work(void* arg) {
  long t = (long)arg;
  char name[256];
  pthread_barrier_wait(&start);
  for (int i = 0; i < 2000; ++i) {
    snprintf(name, sizeof name, "t%ld/file-%04d-a-long-name-so-that-each-record-takes-more-bytes-"
             "than-a-short-one-and-a-torn-write-would-show-%ld.txt", t, i, t);
    int fd = open(name, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) { perror(name); return (void*)1; }
    close(fd);
  }
  return NULL;
}
int main(void) {
  pthread_t th[8];
  pthread_barrier_init(&start, NULL, 8);
  for (long t = 0; t < 8; ++t) pthread_create(&th[t], NULL, work, (void*)t);
  long bad = 0;
  for (int t = 0; t < 8; ++t) { void* r; pthread_join(th[t], &r); bad |= (long)r; }
  puts(bad ? "failed" : "done");
  return (int)bad;
}
C
cat >stress.py <<'PY'
import os, threading
start = threading.Barrier(8)
def work(t):
    start.wait()
    for i in range(2000):
        os.close(os.open(f"t{t}/file-{i:04d}-a-long-name-so-that-each-record-takes-more-bytes-"
                         f"than-a-short-one-and-a-torn-write-would-show-{t}.txt", os.O_WRONLY | os.O_CREAT, 0o644))
threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print("done")
PY
if command -v gcc >/dev/null && gcc -O1 -pthread -o stress stress.c 2>"$T/gcc.err"; then
  prog=(./stress)
else
  echo "no gcc (or it failed): Python's threads instead"
  prog=("$PY" stress.py)
fi
# A log that already holds a line is appended to (log_fd.c); a new one is the mapped form (log_map.h):
# both are stressed. The seed line is a record, so that the strict reader reads it too.
seed() { printf '1\tS\t0\t0\t0\t0\t0:0:0\t-\t/seed\n' >"$1"; }
stress() { # stress LOG: the 8 threads' 16,000 creates, recorded into LOG
  rm -rf t[0-7] && mkdir t0 t1 t2 t3 t4 t5 t6 t7 || exit 1
  LD_PRELOAD=$LIB REPRUN_FILES_LOG=$1 "${prog[@]}" >"$T/out" 2>"$T/err" ||
    fail "${prog[*]} failed: $(head -c 2000 "$T/err")"
  grep -qx done "$T/out" || fail "${prog[*]}: $(cat "$T/out")"
  TP=$(pwd -P) PYTHONPATH="$REPRUN_SRC/tests/e2e" "$PY" - "$1" <<'PY' || fail "the stress log $1 is not as expected (above)"
import os, re, sys
from preload_log import parse, check, header, CREATED
R = parse(sys.argv[1])  # every line: 8 fields, a numeric pid, known event, escapes
tp = os.environ["TP"].encode()
name = re.compile(re.escape(tp) + rb"/t([0-7])/file-([0-9]{4})-a-long-name-so-that-each-record-takes-more-bytes-"
                  rb"than-a-short-one-and-a-torn-write-would-show-\1\.txt")
O = [r for r in R if r.ev == "O" and name.fullmatch(r.path)]
check(len(O) == 16000, f"{len(O)} O records of the 16,000 files", [r for r in R if r.ev == "O" and not name.fullmatch(r.path)])
check(len({r.path for r in O}) == 16000, "each file once")
check(all(r.b >= 0 and r.a & ~os.O_CLOEXEC == os.O_WRONLY | os.O_CREAT | CREATED and r.size == 0 and r.ino != 0 for r in O),
      "each open succeeded and created its file")
check(len({r.pid for r in O}) == 1, "one process")
mapped = header(open(sys.argv[1], "rb").read(64)) is not None
print(f"{sys.argv[1]}: {len(R)} records, {len(O)} O records of the stress files, {'mapped' if mapped else 'appended'}")
PY
}
stress "$T/stress.log"
head -c 22 "$T/stress.log" | grep -q '^reprun.files/3 mapped$' || fail "a new log is not in the mapped form: $(head -c 100 "$T/stress.log" | od -c | head -3)"
seed "$T/stress-appended.log"
stress "$T/stress-appended.log"
head -c 2 "$T/stress-appended.log" | grep -q '^1' || fail "a log that held a line is not appended to"

# Processes at once (fork, as a DataLoader's workers): 4, released together, each opening 2,000 files
# of its own, into one mapped log: each record whole, once.
mkdir "$T/procs" && cd "$T/procs" || exit 1
for p in 0 1 2 3; do mkdir "p$p" && for i in $(seq 0 1999); do : >"p$p/f$i"; done; done
cat >procs.py <<'PYSRC'
import multiprocessing as mp, os
def work(p, start):
    start.wait()
    for i in range(2000):
        os.close(os.open(f"p{p}/f{i}", os.O_RDONLY))
if __name__ == "__main__":
    mp.set_start_method("fork")
    start = mp.Barrier(4)
    ps = [mp.Process(target=work, args=(p, start)) for p in range(4)]
    for x in ps:
        x.start()
    for x in ps:
        x.join()
    print("done" if all(x.exitcode == 0 for x in ps) else "failed")
PYSRC
[[ $(LD_PRELOAD=$LIB REPRUN_FILES_LOG=$T/procs.log "$PY" procs.py) == done ]] || fail "procs.py failed"
TP=$(pwd -P) PYTHONPATH="$REPRUN_SRC/tests/e2e" "$PY" - "$T/procs.log" <<'PY' || fail "the log of 4 processes is not as expected (above)"
import os, re, sys
from preload_log import parse, check
R = parse(sys.argv[1])
tp = os.environ["TP"].encode()
O = [r for r in R if r.ev == "O" and re.fullmatch(re.escape(tp) + rb"/p[0-3]/f[0-9]+", r.path)]
check(len(O) == 8000 and len({r.path for r in O}) == 8000, f"{len(O)} O records of the 8,000 files, each once", R)
by = {}
for r in O:
    by.setdefault(r.path.split(b"/")[-2], set()).add(r.pid)
check(len(by) == 4 and all(len(v) == 1 for v in by.values()) and len(set.union(*by.values())) == 4,
      "each process's files under its own pid", R)
print(f"{len(R)} records from {len({r.pid for r in R})} processes")
PY

# A program that closes every descriptor and puts its own files on low numbers: the mapped log keeps
# no descriptor, so nothing of the program's is touched and every open is recorded.
cd "$T" && mkdir closeall && cd closeall || exit 1
echo x >in.txt
cat >closeall.py <<'PYSRC'
import os
os.closerange(3, 65536)
own = os.open("own.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for n in range(3, 64):
    if n != own:
        os.dup2(own, n)
for _ in range(100):
    with open("in.txt") as f:
        f.read()
    os.write(own, b"B\n")
print("done")
PYSRC
[[ $(LD_PRELOAD="$LIB" REPRUN_FILES_LOG="$T/closeall/files.log" "$PY" closeall.py) == done ]] || fail "closeall.py failed"
[[ $(grep -c . own.txt) == 100 && $(grep -vc '^B$' own.txt) == 0 ]] || fail "the program's file holds records: $(grep -av '^B$' own.txt | head -3)"
[[ $(grep -acF "$(pwd -P)/in.txt" files.log) == 100 ]] || fail "not every open recorded after the program closed every descriptor"

# A program under a file-size limit (RLIMIT_FSIZE of 4 MiB; growing the log past it would raise
# SIGXFSZ, which kills a program that does not ignore it, as bash does not): the log stops at the
# limit, the records past it are counted as lost in the header, and the program runs as it would.
cd "$T" && mkdir limited && cd limited || exit 1
name=$(printf 'x%.0s' {1..200})
: >"$name"
out=$( (ulimit -f 4096 && LD_PRELOAD="$LIB" REPRUN_FILES_LOG="$T/limited/files.log" bash -c \
  'for ((i = 0; i < 30000; i++)); do : <"$1"; done; echo done' bash "$name") 2>&1) || fail "bash under ulimit -f: $out"
[[ $out == done ]] || fail "bash under ulimit -f: $out"
PYTHONPATH="$REPRUN_SRC/tests/e2e" "$PY" - files.log <<'PY' || fail "the log of a program under a file-size limit (above)"
import os, sys
from preload_log import header, check
data = open(sys.argv[1], "rb").read()
reserved, lost, unmapped, size = header(data)
check(lost > 10000 and not unmapped, f"records past the limit counted as lost: {lost} lost, unmapped {unmapped}")
check(size == 4 << 20, f"the file grew to the limit and no further: {size} bytes")
body = data[4096:]
complete = body[:body.rindex(b"\n") + 1]
check(b"\0" not in complete and complete.count(b"/limited/" + b"x" * 200) > 10000,
      f"the records that fit are whole: {complete.count(b'/limited/')} of them")
print(f"{lost} records lost past the limit of {size} bytes")
PY
# The same into an appended log (one that held a line): the records past the limit are dropped,
# never written (the write would raise SIGXFSZ).
seed appended.log
out=$( (ulimit -f 4096 && LD_PRELOAD="$LIB" REPRUN_FILES_LOG="$T/limited/appended.log" bash -c \
  'for ((i = 0; i < 30000; i++)); do : <"$1"; done; echo done' bash "$name") 2>&1) || fail "bash under ulimit -f, appended log: $out"
[[ $out == done ]] || fail "bash under ulimit -f, appended log: $out"
size=$(stat -c %s appended.log)
(( size > 3 << 20 && size <= 4 << 20 )) || fail "the appended log under ulimit -f holds $size bytes"
[[ $(tail -c 1 appended.log | od -An -c | tr -d ' ') == '\n' ]] || fail "the appended log's last record is cut"
# A process maps the segments of the log it wrote into (a MiB each), never address space ahead of them.
cat >many.py <<'PYSRC'
import os
for _ in range(20000):  # some 5.6 MB of records
    os.close(os.open("x" * 200, os.O_RDONLY))
log = os.path.realpath(os.environ["REPRUN_FILES_LOG"])
mapped = 0
for line in open("/proc/self/maps"):
    f = line.split(None, 5)
    if len(f) == 6 and f[5].strip() == log:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        mapped += hi - lo
print(mapped, os.path.getsize(log))
PYSRC
read -r mapped size < <(LD_PRELOAD="$LIB" REPRUN_FILES_LOG="$T/limited/many.log" "$PY" many.py) || fail "many.py failed"
(( mapped > 0 && mapped <= size )) || fail "the process maps $mapped bytes of a log of $size"

# The program takes the appended log's number (a mapped log keeps none: above).
cd "$T" && mkdir take && cd take || exit 1
seed files.log
echo x >in.txt && echo y >in2.txt
cat >take.py <<'PYSRC'
import os
log = next(int(n) for n in os.listdir("/proc/self/fd")
           if os.path.realpath("/proc/self/fd/" + n) == os.path.realpath(os.environ["REPRUN_FILES_LOG"]))
own = os.open("own.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
os.dup2(own, log)  # its own file on the log's number
for _ in range(100):
    with open("in.txt") as f:
        f.read()
    os.write(log, b"B\n")
os.closerange(3, 65536)  # every descriptor, the log's again among them
with open("in2.txt") as f:
    f.read()
PYSRC
LD_PRELOAD="$LIB" REPRUN_FILES_LOG="$T/take/files.log" "$PY" take.py || fail "take.py failed"
[[ $(grep -c . own.txt) == 100 && $(grep -vc '^B$' own.txt) == 0 ]] || fail "the program's file holds records: $(grep -v '^B$' own.txt | head -3)"
grep -qF "$(pwd -P)/in.txt" files.log && grep -qF "$(pwd -P)/in2.txt" files.log ||
  fail "the opens after the log's number was taken are not recorded: $(tail -3 files.log)"

# The program takes the log's number by a raw system call, which no hook sees: the check before each
# record (the inode of what the number is open on) keeps the records out of the program's file.
cd "$T" && mkdir raw && cd raw || exit 1
seed files.log
echo x >in.txt
cat >raw.py <<'PYSRC'
import ctypes, os
# dup3: x86_64 292, aarch64 24 (aarch64 has no dup2)
nr = {"x86_64": 292, "aarch64": 24}.get(os.uname().machine)
if nr is None:
    print("skip")
    raise SystemExit
log = next(int(n) for n in os.listdir("/proc/self/fd")
           if os.path.realpath("/proc/self/fd/" + n) == os.path.realpath(os.environ["REPRUN_FILES_LOG"]))
own = os.open("own.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(nr, own, log, 0) != log:
    raise SystemExit("dup3: %s" % os.strerror(ctypes.get_errno()))
for _ in range(100):
    with open("in.txt") as f:
        f.read()
    os.write(log, b"B\n")
print("done")
PYSRC
out=$(LD_PRELOAD="$LIB" REPRUN_FILES_LOG="$T/raw/files.log" "$PY" raw.py) || fail "raw.py failed"
if [[ $out != skip ]]; then
  [[ $out == done && $(grep -c . own.txt) == 100 && $(grep -vc '^B$' own.txt) == 0 ]] ||
    fail "a raw dup3 onto the log's number: the program's file holds records: $(grep -v '^B$' own.txt | head -3)"
  [[ $(grep -cF "$(pwd -P)/in.txt" files.log) == 100 ]] ||
    fail "the opens after a raw dup3 onto the log's number are not all recorded: $(tail -3 files.log)"
fi
pass
