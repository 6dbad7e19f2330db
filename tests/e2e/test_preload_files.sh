# The preload library (preload/reprun_preload.c, issue 36) records what real programs open, list and
# exec, in every process, without changing what they see: coreutils, a shell script, Debian's
# Python (files, a folder, fork from a threaded process, subprocess and posix_spawn, a SIGKILL),
# a static program, an environment without the library, relative and dirfd paths, odd names, a
# failed open's errno. Every log line must parse (tests/e2e/preload_log.py).
source "$(dirname "$0")/lib.sh"
LIB="$(cd "$(dirname "$REPRUN")" && pwd -P)/libreprun_preload.so"
[[ -f $LIB ]] || skip "libreprun_preload.so is not built beside $REPRUN"
PY=/usr/bin/python3 # Debian's: the interpreter the issue names
[[ -x $PY ]] || PY=$(command -v python3) || skip "no python3"
PY=$("$PY" -c 'import os, sys; print(os.path.realpath(sys.executable))') # not a shim script
export TP SHELLPID=$$
mkdir w && cd w || exit 1 # the programs' folder; logs and outputs stay in $T
TP=$(pwd -P)

# with NAME CMD...: runs CMD recorded into $T/NAME.log; stdout, stderr and exit code in
# $T/NAME.with.{out,err,rc}. plain NAME CMD...: the same without the library, into NAME.plain.*.
with() {
  local name=$1
  shift
  LD_PRELOAD=$LIB REPRUN_FILES_LOG=$T/$name.log "$@" >"$T/$name.with.out" 2>"$T/$name.with.err"
  echo $? >"$T/$name.with.rc"
}
plain() {
  local name=$1
  shift
  "$@" >"$T/$name.plain.out" 2>"$T/$name.plain.err"
  echo $? >"$T/$name.plain.rc"
}
# same_output NAME: the program printed the same bytes and exited the same way with and without.
same_output() {
  local f
  for f in out err rc; do
    cmp -s "$T/$1.with.$f" "$T/$1.plain.$f" || fail "$1: $f differs with the library:
$(diff <(od -c "$T/$1.plain.$f") <(od -c "$T/$1.with.$f") | head -20)"
  done
}
# pycheck LOG <<'PY' ... PY: a Python check of a log, parsed strictly into R (preload_log.py).
pycheck() {
  { printf 'import os, sys\nfrom preload_log import *\nR = parse(sys.argv[1])\nTP = os.environ["TP"].encode()\n'
    cat; } >"$T/check.py"
  PYTHONPATH="$REPRUN_SRC/tests/e2e" "$PY" "$T/check.py" "$1" || fail "check of $1 failed (above)"
}

printf 'banana\napple\ncherry\n' >data.txt
mkdir sub
echo rel >sub/rel.txt

# cat and sort (coreutils): one S for the program, one O for the file; nothing of the library's own.
for prog in cat sort; do
  with "$prog" "$prog" data.txt
  plain "$prog" "$prog" data.txt
  same_output "$prog"
  pycheck "$T/$prog.log" <<'PY'
prog = os.path.basename(sys.argv[1])[:-4].encode()
S = [r for r in R if r.ev == "S"]
check(len(S) == 1 and os.path.basename(S[0].path) == prog and S[0].a == int(os.environ["SHELLPID"])
      and same_file(S[0], S[0].path), "one S record for the program, its parent the shell", R)
O = [r for r in R if r.ev == "O" and r.path == TP + b"/data.txt"]
check(len(O) == 1 and O[0].a & 3 == os.O_RDONLY and O[0].b >= 0 and same_file(O[0], "data.txt"),
      "one O record of data.txt, read-only, with its size, mtime and dev:ino", R)
check(not [r for r in R if r.path.startswith(b"/proc/self") or r.path.endswith(b".log")],
      "the library's own reads are not recorded", R)
PY
done

# A shell script, run through env's exec: env, bash and sort recorded; out.txt written with O_CREAT
# and the did-not-exist bit, then (second run) without it.
printf '#!/bin/bash\nsort data.txt > out.txt\n' >run.sh
chmod +x run.sh
with script env ./run.sh
cp out.txt out.with.txt
rm out.txt
plain script env ./run.sh
same_output script
cmp -s out.txt out.with.txt || fail "the script wrote another out.txt with the library"
with script2 env ./run.sh
pycheck "$T/script.log" <<'PY'
X = [r for r in R if r.ev == "X" and r.path == TP + b"/./run.sh"]
check(len(X) == 1 and X[0].a == "ok" and same_file(X[0], "run.sh"), "env's exec of ./run.sh: X ok", R)
bash = [r for r in R if r.ev == "S" and r.path.endswith(b"/bash")]
check(bash and same_file(bash[0], bash[0].path), "bash's S record", R)
script = [r for r in R if r.ev == "O" and r.path == TP + b"/./run.sh" and image_of(R, r).endswith(b"/bash")]
check(len(script) >= 1 and script[0].b >= 0, "bash opened the script", R)
out = [r for r in R if r.ev == "O" and r.path == TP + b"/out.txt"]
want = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | CREATED
check(len(out) == 1 and out[0].a == want and out[0].b >= 0 and image_of(R, out[0]).endswith(b"/bash"),
      f"out.txt opened by bash with flags {want} (O_CREAT and did not exist)", R)
xs = [r for r in R if r.ev == "X" and r.path.endswith(b"/sort")]
check(len(xs) == 1 and xs[0].a == "ok" and same_file(xs[0], xs[0].path), "bash's exec of sort: X ok", R)
sort = [r for r in R if r.ev == "S" and r.path.endswith(b"/sort")]
check(len(sort) == 1 and sort[0].pid == xs[0].pid and sort[0].a in [s.pid for s in bash],
      "sort's S record, its parent the script's bash", R)
data = [r for r in R if r.ev == "O" and r.path == TP + b"/data.txt"]
check(len(data) == 1 and data[0].pid == sort[0].pid and data[0].b >= 0, "sort read data.txt", R)
args = [(r.a, r.path) for r in R if r.ev == "A" and r.pid == sort[0].pid]
check(args == [(1, TP + b"/data.txt")] and same_file([r for r in R if r.ev == "A" and r.pid == sort[0].pid][0], "data.txt"),
      "sort's argument data.txt: one A record (its index, its stat, joined with the directory)", R)
env_args = [(r.a, r.path) for r in R if r.ev == "A" and image_of(R, r).endswith(b"/env")]
check(env_args == [(1, TP + b"/./run.sh")], "env's argument ./run.sh: an A record", R)
PY
pycheck "$T/script2.log" <<'PY'
out = [r for r in R if r.ev == "O" and r.path == TP + b"/out.txt"]
check(len(out) == 1 and out[0].a == os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
      "out.txt there before: no did-not-exist bit", R)
PY

# A shell's command after -c: the file it redirects into its child's input is named (an A record of
# the command's index), a folder it changes into is not, nor a word that names nothing.
mkdir -p sub
with shc sh -c "cd sub && cd .. && wc -l < $TP/data.txt; true nothing.txt"
plain shc sh -c "cd sub && cd .. && wc -l < $TP/data.txt; true nothing.txt"
same_output shc
pycheck "$T/shc.log" <<'PY'
sh = [r for r in R if r.ev == "S" and r.path.endswith((b"/sh", b"/dash", b"/bash"))]
args = [(r.a, r.path) for r in R if r.ev == "A" and r.pid == sh[0].pid]
check(args == [(2, TP + b"/data.txt")], "sh -c's command: one A record, data.txt (not sub, not nothing.txt)", R)
PY

# A symbolic link read (Python's os.path.realpath: readlink): an L record, the link's path and its
# target as stored; the library's own reads of /proc's links are not recorded.
ln -s data.txt link.txt
with link "$PY" -c 'import os; print(os.path.realpath("link.txt"))'
plain link "$PY" -c 'import os; print(os.path.realpath("link.txt"))'
same_output link
pycheck "$T/link.log" <<'PY'
L = [(r.path, r.where) for r in R if r.ev == "L"]
check(L == [(TP + b"/link.txt", b"data.txt")], "one L record: link.txt -> data.txt", R)
PY

# Debian's Python reads a file and lists a folder (opendir: D; an openat with O_DIRECTORY: O).
cat >read.py <<'PY'
import os
print(open("data.txt").read(), end="")
print(sorted(os.listdir("sub")), sorted(e.name for e in os.scandir(".")))
PY
with pyread "$PY" read.py
plain pyread "$PY" read.py
same_output pyread
pycheck "$T/pyread.log" <<'PY'
S = [r for r in R if r.ev == "S"]
check(len(S) == 1 and b"python3" in S[0].path, "one S record, Python's", R)
O = [r for r in R if r.ev == "O" and r.path == TP + b"/data.txt"]
check(len(O) == 1 and O[0].b >= 0 and same_file(O[0], "data.txt"), "Python's open() of data.txt", R)
listed = [r for r in R if r.path == TP + b"/sub" and (r.ev == "D" or r.ev == "O" and r.a & os.O_DIRECTORY)]
check(listed and listed[0].b >= 0 and same_file(listed[0], "sub"), "os.listdir('sub'): D or O|O_DIRECTORY", R)
check([r for r in R if r.path == TP + b"/." and r.ev in "DO"], "os.scandir('.')", R)
PY

# With the capture's audit hook armed (reprun's sitecustomize, as exec runs a program), the library's
# hook in C puts the program's line on each O record of Python's opens: open() of a str, bytes and
# pathlib path, os.open, from a thread, through the standard library (the caller's line), in a
# forked child; "import" on the modules the import system reads; no line on an open Python did
# not announce (a subprocess). The audit hook's own log then holds no open lines, its listings yes.
mkdir pkg && echo "VALUE = 3" >pkg/mod.py && printf '[s]\nk = v\n' >conf.ini && echo a >a.txt && echo b >b.txt && echo c >c.txt
cat >lines.py <<'PY'
import configparser, os, pathlib, subprocess, threading
open("data.txt").read()
open(b"sub/rel.txt", "rb").read()
open(pathlib.Path("conf.ini")).read()
os.close(os.open("data.txt", os.O_RDONLY))
t = threading.Thread(target=lambda: open("sub/rel.txt").read())
t.start(); t.join()
configparser.ConfigParser().read("conf.ini")
import pkg.mod
if os.fork() == 0:
    open("data.txt").read()
    os._exit(0)
os.wait()
subprocess.run(["cat", "conf.ini"], stdout=subprocess.DEVNULL)
print(sorted(os.listdir("sub")))
def two(i):
    if i % 2:
        return open("a.txt").read()
    return open("b.txt").read()
for i in range(4):
    two(i)
    pathlib.Path("c.txt").read_text()
    open("c.txt").read()
import ctypes, importlib.abc, importlib.util, sys
class Plain(importlib.abc.Loader):  # a loader of the program's own, which reads the module by open()
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        with open(module.__file__) as f:
            exec(f.read(), module.__dict__)
spec = importlib.util.spec_from_file_location("own", "own.py", loader=Plain())
own = importlib.util.module_from_spec(spec)
sys.modules["own"] = own
spec.loader.exec_module(own)
PY
echo "VALUE = 4" >own.py
export T
PYDIR="$(cd "$(dirname "$REPRUN")" && pwd -P)/python"
[[ -f $PYDIR/sitecustomize.py ]] || fail "no sitecustomize.py in $PYDIR"
with pylines env PYTHONPATH="$PYDIR" REPRUN_PY_FILES_LOG="$T/pylines.py.log" PYTHONDONTWRITEBYTECODE=1 "$PY" lines.py
plain pylines env PYTHONPATH="$PYDIR" PYTHONDONTWRITEBYTECODE=1 "$PY" lines.py
same_output pylines
pycheck "$T/pylines.log" <<'PY'
def lines_of(name, pid=None):
    return [r.where for r in R if r.ev == "O" and r.path == TP + b"/" + name and (pid is None or r.pid == pid)]
main = [r for r in R if r.ev == "S"][0].pid
check(lines_of(b"data.txt", main) == [b"lines.py:2", b"lines.py:5"], "open() and os.open of data.txt: their lines", R)
check(lines_of(b"sub/rel.txt") == [b"lines.py:3", b"lines.py:6"], "a bytes path, and a thread's open: their lines", R)
check(lines_of(b"conf.ini", main) == [b"lines.py:4", b"lines.py:8"], "a pathlib path; configparser's open: the caller's line", R)
check(lines_of(b"pkg/mod.py") == [b"import"], "the module's source: the import system's", R)
child = [r for r in R if r.ev == "O" and r.path == TP + b"/data.txt" and r.pid != main]
check(len(child) == 1 and child[0].where == b"lines.py:11", "the forked child's open: its line", R)
cat = [r for r in R if r.ev == "O" and r.path == TP + b"/conf.ini" and r.pid not in (main, child[0].pid)]
check(len(cat) == 1 and cat[0].where == b"", "cat's open (no Python): no line", R)
check(all(r.where == b"" for r in R if r.ev != "O"), "lines only on O records", R)
# Opens repeated from one line, from two lines of one function, and through pathlib: each its own
# line (the hook keeps the last line found at the innermost frame, by code object and offset).
check(lines_of(b"a.txt") == [b"lines.py:18"] * 2 and lines_of(b"b.txt") == [b"lines.py:19"] * 2,
      "two lines of one function, alternately: " + repr(lines_of(b"a.txt") + lines_of(b"b.txt")), R)
check(lines_of(b"c.txt") == [b"lines.py:22", b"lines.py:23"] * 4, "pathlib's and a direct open, alternately: " +
      repr(lines_of(b"c.txt")), R)
py_log = open(os.environ["T"] + "/pylines.py.log").read().splitlines()
check(not [l for l in py_log if l.split("\t")[1] == "open"], "the audit hook left the opens to the library: " + repr(py_log[:5]))
check([l for l in py_log if l.split("\t")[1] == "listdir" and l.endswith("/sub")], "the listing is the audit hook's: " + repr(py_log))
check([l for l in py_log if l.split("\t")[1] == "start"], "the forked child said it started: " + repr(py_log))
# The modules listed at exit: those whose read no open recorded as the import system's. Not pkg/mod.py
# (its "import" O record above); the script (at start); os.py, imported before the hook; ctypes'
# extension module (dlopen: no open); own.py, read by the program's own loader (its open has the
# program's line, and it is a module all the same).
modules = [l.split("\t")[4] for l in py_log if l.split("\t")[1] == "module"]
check(not [m for m in modules if m.endswith("/pkg/mod.py")], "pkg/mod.py: not listed again at exit: " + repr(modules))
check([m for m in modules if m.endswith("/lines.py")], "the script: " + repr(modules))
check([m for m in modules if m.endswith("/os.py")], "os, imported before the hook: " + repr(modules))
check([m for m in modules if m.endswith("/own.py")], "a module of the program's own loader: " + repr(modules))
check(lines_of(b"own.py") == [b"lines.py:29"], "own.py's open: the loader's line", R)
import _ctypes
ext = getattr(_ctypes, "__file__", None)  # built into some interpreters
check(ext is None or [m for m in modules if m == os.path.abspath(ext)], "ctypes' extension module: " + repr(modules))
# A file object's open is written at the fstat the file object makes next (its result the record's):
# each O record of the program's lines holds its file's state, as one written at the open does.
for r in R:
    if r.ev == "O" and r.where.startswith(b"lines.py:") and r.b >= 0:
        check(same_file(r, r.path), "the O record of a file object's open holds its file's state: " + repr(r.__dict__), R)
PY

# A file object's open waits for its fstat in the same thread (above): a waiting record is written at
# the thread's next hooked call (here another fstat) or at _exit, with an fstat of the library's. An
# open announced as a file object's (sys.audit) made through libc itself, never fstat'ed: ctypes.
cat >waiting.py <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
open("data.txt").read()  # a file object's open, then its fstat: the library learns the pattern
def announced(name):  # as a file object announces its open, then the open alone
    sys.audit("open", name, "r", 0)
    fd = libc.open(name.encode(), os.O_RDONLY)
    assert fd >= 0, ctypes.get_errno()
    return fd
announced("a.txt")
os.fstat(0)  # another descriptor's fstat: a.txt's record first
if os.fork() == 0:
    announced("b.txt")
    os._exit(0)  # _exit: b.txt's record, then the exit
os.wait()
announced("c.txt")
os._exit(0)
PY
with waiting env PYTHONPATH="$PYDIR" REPRUN_PY_FILES_LOG="$T/waiting.py.log" PYTHONDONTWRITEBYTECODE=1 "$PY" waiting.py
[[ $(cat "$T/waiting.with.rc") == 0 ]] || fail "waiting.py failed: $(cat "$T/waiting.with.err")"
pycheck "$T/waiting.log" <<'PY'
main = [r for r in R if r.ev == "S"][0].pid
for name, line, parent in ((b"a.txt", b"waiting.py:5", True), (b"b.txt", b"waiting.py:5", False), (b"c.txt", b"waiting.py:5", True)):
    O = [r for r in R if r.ev == "O" and r.path == TP + b"/" + name]
    check(len(O) == 1 and O[0].where == line and (O[0].pid == main) == parent and same_file(O[0], name),
          name.decode() + ": one O record with its line and its file's state", R)
a = [r for r in R if r.ev == "O" and r.path == TP + b"/a.txt"][0]
child = [r for r in R if r.ev == "S" and r.pid != main and r.a == main][0]
check(a.line < child.line, "a.txt's record written at the next fstat, before the fork", R)
PY

# A Python process with three threads opening files forks 20 times; each child opens a file and
# ends with os._exit: each has its S record (parent: the Python process) and its O record.
cat >forks.py <<'PY'
import os, threading
stop = threading.Event()
def spin(i):
    while not stop.is_set():
        with open(f"spin{i}.txt", "w") as f:
            f.write("x")
threads = [threading.Thread(target=spin, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
children = []
for k in range(20):
    pid = os.fork()
    if pid == 0:
        os.close(os.open(f"child{k}.txt", os.O_RDONLY | os.O_CREAT, 0o644))
        os._exit(0)
    children.append(pid)
    os.waitpid(pid, 0)
stop.set()
for t in threads:
    t.join()
print(os.getpid(), *children)
PY
with forks "$PY" forks.py
[[ $(cat "$T/forks.with.rc") == 0 ]] || fail "forks.py failed: $(cat "$T/forks.with.err")"
pycheck "$T/forks.log" <<'PY'
parent, *children = map(int, open(sys.argv[1][:-4] + ".with.out").read().split())
S = [r for r in R if r.ev == "S" and r.pid == parent]
check(len(S) == 1, "one S record of the parent", R)
for k, pid in enumerate(children):
    mine = [r for r in R if r.pid == pid]
    check(len(mine) == 2 and mine[0].ev == "S" and mine[0].a == parent and mine[0].path == S[0].path,
          f"child {pid}: its S record first, parent {parent}, the same program", mine)
    o = mine[1]
    check(o.ev == "O" and o.path == TP + f"/child{k}.txt".encode() and o.b >= 0
          and o.a == os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | CREATED,
          f"child {pid}: O of child{k}.txt, created", mine)
spins = [r for r in R if r.ev == "O" and r.pid == parent and b"/spin" in r.path]
check(len(spins) >= 3, "the threads' opens recorded", R)
PY

# subprocess (vfork, Python searching PATH itself) and posix_spawn(p): X records; the parent's next
# opens still recorded; a spawn with an environment without LD_PRELOAD: cleared.
cat >spawn.py <<'PY'
import os, subprocess, sys
subprocess.run(["cat", "data.txt"], check=True)
open("sub/rel.txt").read()
pid = os.posix_spawnp("cat", ["cat", "sub/rel.txt"], os.environ)
os.waitpid(pid, 0)
env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
pid = os.posix_spawn("/bin/cat", ["cat", "data.txt"], env)
os.waitpid(pid, 0)
sys.stdout.flush()
PY
with spawn "$PY" spawn.py
plain spawn "$PY" spawn.py
same_output spawn
CAT=$(type -P cat)
TRUE=$(type -P true)
export CAT TRUE
pycheck "$T/spawn.log" <<'PY'
py = [r for r in R if r.ev == "S" and b"python3" in r.path][0]
cat = os.environ["CAT"].encode()
xs = [r for r in R if r.ev == "X"]
run = [r for r in xs if r.pid != py.pid]
check(run and run[-1].a == "ok" and run[-1].path == cat and same_file(run[-1], cat),
      "subprocess's child: an X per PATH candidate it tried, the last the cat it found", R)
child = [r for r in R if r.ev == "S" and r.pid == run[-1].pid]
check(len(child) == 1 and child[0].a == py.pid and child[0].path.endswith(b"/cat"), "the child cat's S", R)
after = [r for r in R if r.pid == py.pid and r.path == TP + b"/sub/rel.txt"]
check(after and after[0].line > child[0].line, "Python's open after subprocess is recorded", R)
spawned = [r for r in xs if r.pid == py.pid]
check(len(spawned) == 2 and spawned[0].a == "ok" and spawned[0].path == cat, "posix_spawnp: X ok after the PATH search", R)
check(spawned[1].a == "cleared" and spawned[1].path == b"/bin/cat", "posix_spawn without LD_PRELOAD: cleared", R)
cats = [r for r in R if r.ev == "S" and r.path.endswith(b"/cat")]
check(len(cats) == 2, "two cats recorded (the third had no library)", R)
PY

# A process killed by SIGKILL right after two opens: both records are in the log, whole.
cat >killed.py <<'PY'
import os, signal
os.open("data.txt", os.O_RDONLY)
os.open("sub/rel.txt", os.O_RDONLY)
os.kill(os.getpid(), signal.SIGKILL)
PY
with killed "$PY" killed.py 2>/dev/null # bash's "Killed" line
[[ $(cat "$T/killed.with.rc") == 137 ]] || fail "killed.py: exit $(cat "$T/killed.with.rc"), expected 137"
pycheck "$T/killed.log" <<'PY'
check([r.path for r in R[-2:]] == [TP + b"/data.txt", TP + b"/sub/rel.txt"] and all(r.b >= 0 for r in R[-2:]),
      "the opens before the kill are the last records", R)
PY

# A statically linked program (the library cannot be loaded into it): X static, for the program
# and for a script whose #! interpreter it is; it writes no S record.
static_note=""
if ! command -v gcc >/dev/null; then
  static_note="no gcc"
elif ! printf '#include <stdio.h>\nint main(int c, char** v) { printf("static ran %%d\\n", c); return 0; }\n' |
  gcc -static -x c -o static - 2>"$T/gcc.err"; then
  static_note="gcc -static failed (no libc.a? Debian: libc6-dev): $(head -c 300 "$T/gcc.err")"
fi
if [[ -z $static_note ]]; then
  printf '#!%s/static\n' "$TP" >via-static.sh
  chmod +x via-static.sh
  with static bash -c './static; ./via-static.sh; true'
  plain static bash -c './static; ./via-static.sh; true'
  same_output static
  pycheck "$T/static.log" <<'PY'
xs = {r.path: r for r in R if r.ev == "X"}
check(xs.get(TP + b"/./static") and xs[TP + b"/./static"].a == "static" and same_file(xs[TP + b"/./static"], "static"),
      "X static for ./static", R)
check(xs.get(TP + b"/./via-static.sh") and xs[TP + b"/./via-static.sh"].a == "static",
      "X static for a script whose interpreter is static", R)
check(not [r for r in R if r.ev == "S" and r.path.endswith(b"/static")], "no S record of the static program", R)
PY
else
  echo "static part skipped: $static_note"
fi

# Every hooked function from C (where gcc is found), built twice: with 32-bit file offsets (open,
# creat, fopen, freopen, openat and, fortified with flags not known at compile time, __open_2 and
# __openat_2) and with _FILE_OFFSET_BITS=64 (their 64 variants); fdopendir, and each exec variant
# in a forked child: execl, execlp, execle (an environment without the library: cleared), execv,
# execvpe, execvp of a program not in PATH; then an open in a vfork child.
cat >calls.c <<'C'
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
static void exec_child(int which) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {"true", NULL};
    char* bare[] = {"PATH=/usr/bin:/bin", NULL};
    switch (which) {
    case 0: execl("/bin/true", "true", (char*)NULL); break;
    case 1: execlp("true", "true", (char*)NULL); break;
    case 2: execle("/bin/true", "true", (char*)NULL, bare); break;
    case 3: execv("/bin/true", argv); break;
    case 4: execvpe("true", argv, environ); break;
    case 5: execvp("no-such-program-reprun", argv); break;
    }
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0);
  printf("exec %d: %d\n", which, WEXITSTATUS(status));
}
int main(int argc, char** argv) {
  int flags = argc > 5 ? O_WRONLY : O_RDONLY; /* not a constant: the fortified __open_2 */
  close(creat("created.txt", 0644));
  FILE* f = fopen("data.txt", "r");
  f = freopen("created.txt", "w+", f);
  fclose(f);
  close(open("data.txt", flags));
  close(openat(AT_FDCWD, "data.txt", flags));
  close(openat(AT_FDCWD, "sub/new.txt", O_CREAT | O_EXCL | O_WRONLY, 0644));
  closedir(fdopendir(open("sub", O_RDONLY | O_DIRECTORY)));
  for (int i = 0; i < 6; ++i) {
    exec_child(i);
  }
  pid_t v = vfork(); /* a child in the parent's memory that opens a file and exits without an exec */
  if (v == 0) {
    _exit(open("sub/rel.txt", O_RDONLY) >= 0 ? 0 : 1);
  }
  int vstatus;
  waitpid(v, &vstatus, 0);
  printf("vfork: %d\n", WEXITSTATUS(vstatus));
  printf("%s done\n", argv[0]);
  return 0;
}
C
calls_note=""
if [[ -n $static_note && $static_note == "no gcc" ]]; then
  calls_note="no gcc"
elif ! gcc -O2 -D_FORTIFY_SOURCE=2 -o calls32 calls.c 2>"$T/gcc.err" ||
  ! gcc -O2 -D_FORTIFY_SOURCE=2 -D_FILE_OFFSET_BITS=64 -o calls64 calls.c 2>>"$T/gcc.err"; then
  calls_note="gcc failed: $(head -c 300 "$T/gcc.err")"
fi
if [[ -z $calls_note ]]; then
  for bits in 32 64; do
    suffix=""
    [[ $bits == 64 ]] && suffix=64
    imports=$(nm -D --undefined-only "calls$bits" | awk '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
    for fn in creat$suffix fopen$suffix freopen$suffix __open${suffix}_2 __openat${suffix}_2 openat$suffix \
      open$suffix fdopendir execl execlp execle execv execvpe execvp; do
      [[ " $imports" == *" $fn "* ]] || fail "calls$bits does not call $fn: $imports"
    done
    rm -f created.txt sub/new.txt
    with "calls$bits" "./calls$bits"
    rm -f created.txt sub/new.txt
    plain "calls$bits" "./calls$bits"
    same_output "calls$bits"
    pycheck "$T/calls$bits.log" <<'PY'
TRUE = os.environ["TRUE"].encode()
main = R[0]
check(main.ev == "S", "the program's S first", R)
mine = [r for r in R if r.pid == main.pid]
def opened(path):
    return [(r.ev, r.a, r.b >= 0) for r in mine if r.path == TP + path and r.ev in "OD"]
W, C, T = os.O_WRONLY, os.O_CREAT, os.O_TRUNC
check(opened(b"/created.txt") == [("O", W | C | T | CREATED, True), ("O", os.O_RDWR | C | T, True)],
      "creat made created.txt; freopen 'w+' opened it again", R)
check(opened(b"/data.txt") == [("O", 0, True)] * 3, "fopen 'r', __open_2 and __openat_2 of data.txt", R)
check(opened(b"/sub/new.txt") == [("O", C | os.O_EXCL | W | CREATED, True)], "openat O_CREAT|O_EXCL", R)
sub = opened(b"/sub")
check(sub == [("O", os.O_DIRECTORY, True), ("D", 0, True)], "open of sub, then fdopendir", R)
xs = [r for r in R if r.ev == "X"]
want = [("ok", b"/bin/true"), ("ok", TRUE), ("cleared", b"/bin/true"), ("ok", b"/bin/true"), ("ok", TRUE),
        ("ok", b"no-such-program-reprun")]
check([(r.a, r.path) for r in xs] == want, f"X records of the six execs: {want}", R)
check(all(same_file(r, r.path) for r in xs[:5]) and (xs[5].size, xs[5].dev, xs[5].ino) == (0, 0, 0),
      "the programs' stat; none for the one not found", R)
forks = [r for r in R if r.ev == "S" and r.a == main.pid and r.path == main.path]
check(len(forks) == 6 and [x.pid for x in xs] == [f.pid for f in forks], "each forked child's S, then its X", R)
trues = [r for r in R if r.ev == "S" and r.path.endswith(b"/true")]
check(sorted(r.pid for r in trues) == sorted(xs[i].pid for i in (0, 1, 3, 4)), "true recorded but where cleared", R)
# The vfork child's open: recorded, under its parent's pid (no fork handler runs in it: the pid the
# library keeps is its parent's, whose program it runs).
check(opened(b"/sub/rel.txt") == [("O", 0, True)], "the vfork child's open, under the parent's pid", R)
PY
  done
else
  echo "C calls part skipped: $calls_note"
fi

# The current directory the library joins relative paths with is kept between records (preload/cwd.h)
# and asked again after every change it can see: chdir and fchdir; nftw with FTW_CHDIR and fts
# without FTS_NOCHDIR, which change it inside glibc; a vfork child's chdir, in its parent's memory,
# whose directory must not become its parent's. Each open of data.txt and rel.txt is named by the
# directory it was opened in.
cat >cwd.c <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static void touch(const char* path) { close(open(path, O_RDONLY)); }
static int visit(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)st;
  if (type == FTW_F && strcmp(path + ftw->base, "rel.txt") == 0) {
    touch("rel.txt"); /* FTW_CHDIR: relative to the folder being walked */
  }
  return 0;
}
int main(void) {
  touch("data.txt");
  int top = open(".", O_RDONLY | O_DIRECTORY);
  if (chdir("sub") != 0) return 1;
  touch("rel.txt");
  if (fchdir(top) != 0) return 1;
  touch("data.txt");
  if (nftw("sub", visit, 8, FTW_CHDIR | FTW_PHYS) != 0) return 1;
  touch("data.txt");
  pid_t v = vfork();
  if (v == 0) {
    _exit(chdir("sub") == 0 && open("rel.txt", O_RDONLY) >= 0 ? 0 : 1);
  }
  int status;
  waitpid(v, &status, 0);
  touch("data.txt");
  char* roots[] = {"sub", NULL};
  FTS* fts = fts_open(roots, FTS_PHYSICAL, NULL);
  for (FTSENT* e; fts != NULL && (e = fts_read(fts)) != NULL;) {
    if (e->fts_info == FTS_F && strcmp(e->fts_name, "rel.txt") == 0) {
      touch(e->fts_accpath); /* relative to the folder fts changed into */
    }
  }
  fts_close(fts);
  touch("data.txt");
  printf("vfork %d\n", WEXITSTATUS(status));
  return 0;
}
C
if [[ -n $calls_note ]]; then
  echo "C current-directory part skipped: $calls_note"
elif ! gcc -O2 -o cwd cwd.c 2>"$T/gcc.err"; then
  fail "gcc cwd.c: $(head -c 300 "$T/gcc.err")"
else
  imports=$(nm -D --undefined-only cwd | awk '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
  for fn in chdir fchdir nftw fts_open; do
    [[ " $imports" == *" $fn "* ]] || fail "cwd does not call $fn: $imports"
  done
  with cwd ./cwd
  plain cwd ./cwd
  same_output cwd
  pycheck "$T/cwd.log" <<'PY'
main = R[0]
got = [r.path[len(TP):] for r in R if r.pid == main.pid and r.ev == "O" and r.b >= 0
       and r.path.endswith((b"data.txt", b"rel.txt"))]
want = [b"/data.txt", b"/sub/rel.txt", b"/data.txt", b"/sub/rel.txt", b"/data.txt", b"/sub/rel.txt", b"/data.txt",
        b"/sub/rel.txt", b"/data.txt"]
check(got == want, f"each open named by the folder it was made in (chdir, fchdir, nftw, vfork, fts): {got}", R)
PY
fi
cat >cwd.py <<'PY'
import os, subprocess, threading
open("data.txt").close()
subprocess.run(["true"], cwd="sub", check=True)  # the child changes directory (vfork, then chdir)
open("data.txt").close()
os.chdir("sub")
t = threading.Thread(target=lambda: open("rel.txt").close())
t.start()
t.join()
os.chdir("..")
open("data.txt").close()
PY
with cwdpy "$PY" cwd.py
pycheck "$T/cwdpy.log" <<'PY'
main = R[0]
got = [r.path[len(TP):] for r in R if r.pid == main.pid and r.ev == "O" and r.b >= 0
       and r.path.endswith((b"data.txt", b"rel.txt"))]
check(got == [b"/data.txt", b"/data.txt", b"/sub/rel.txt", b"/data.txt"],
      f"after a subprocess with cwd=, a thread's open after chdir, chdir back: {got}", R)
PY

# An exec whose environment drops the library or the log, or makes the log relative: X cleared, and
# the child writes nothing.
with cleared env -u LD_PRELOAD cat data.txt
with cleared2 env -u REPRUN_FILES_LOG cat data.txt
with cleared3 env REPRUN_FILES_LOG=relative.log cat data.txt
[[ ! -e relative.log ]] || fail "a relative REPRUN_FILES_LOG was written"
for log in cleared cleared2 cleared3; do
  pycheck "$T/$log.log" <<'PY'
xs = [r for r in R if r.ev == "X"]
check(len(xs) == 1 and xs[0].a == "cleared" and xs[0].path == os.environ["CAT"].encode()
      and same_file(xs[0], xs[0].path), "env's exec of cat: X cleared, after the PATH search", R)
check([r.path.endswith(b"/env") for r in R if r.ev == "S"] == [True] and not [r for r in R if r.ev == "O"],
      "only env recorded", R)
PY
done

# Paths: relative after chdir (".." kept as it is), openat with a directory descriptor, names with
# a newline, a tab, a backslash, control bytes and bytes that are not UTF-8.
cat >paths.py <<'PY'
import os
os.chdir("sub")
open("rel.txt").read()
open("../data.txt").read()
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
os.chdir("..")
os.close(os.open("rel.txt", os.O_RDONLY, dir_fd=dfd))
for name in [b"we\nird\tname", b"back\\slash\x01\x7f", b"caf\xe9-latin1"]:
    open(name, "wb").close()
    with open(name, "rb") as f:
        f.read()
print(sorted(os.listdir(b".")))
try:
    open(b"/".join([b"\x01" * 200] * 19))  # 3,818 bytes, 15,272 escaped: more than a record holds
except OSError as e:
    print("deep:", e.errno)
open("data.txt").close()
PY
with paths "$PY" paths.py
rm -f we*name back*slash* caf*latin1
plain paths "$PY" paths.py
same_output paths
pycheck "$T/paths.log" <<'PY'
O = [r for r in R if r.ev == "O" and r.b >= 0]
paths = [r.path for r in O]
for want in [b"/sub/rel.txt", b"/sub/../data.txt", b"/sub/."]:
    check(TP + want in paths, f"{want} recorded after chdir, absolute and unresolved", R)
dirfd = [r for r in O if r.path == TP + b"/sub/rel.txt"]
check(len(dirfd) == 2 and same_file(dirfd[1], "sub/rel.txt"), "openat(dirfd of sub, 'rel.txt') after chdir back", R)
raw = records_text(sys.argv[1], open(sys.argv[1], "rb").read())
for name, escaped in [(b"we\nird\tname", b"/we\\nird\\tname\n"), (b"back\\slash\x01\x7f", b"/back\\\\slash\\x01\\x7f\n"),
                      (b"caf\xe9-latin1", b"/caf\xe9-latin1\n")]:
    check(raw.count(TP + escaped) == 2, f"{escaped!r} escaped in the log (written and read)", R)
    check(paths.count(TP + b"/" + name) == 2, f"{name!r} read back from the log", R)
    check(any(r.a == os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | CREATED for r in O if r.path == TP + b"/" + name),
          f"{name!r} created", R)
deep = [r for r in R if r.cut]
lines = raw.split(b"\n")
check(len(deep) == 1 and deep[0].b == -2 and deep[0].path.startswith(TP + b"/" + b"\x01" * 200)
      and len(lines[deep[0].line - 1]) < 4096 + 4096 and lines[deep[0].line - 1].endswith(b"\\x01\\c"),
      "the path too long for a record: cut at an escape's end, marked \\c, one line", R)
check(R[-1].path == TP + b"/data.txt" and R[-1].line == deep[0].line + 1, "the next record whole", R)
PY

# A failed open: b = -ENOENT, and the program sees errno as without the library; a successful open
# leaves errno as it was; open(NULL) gets EFAULT; fopen's failure too.
cat >errno.py <<'PY'
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.fopen.restype = ctypes.c_void_p
def call(what, fn, *args, errno_before=0):
    ctypes.set_errno(errno_before)
    r = fn(*args)
    print(what, r if r is None or r < 0 else "ok", errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
call("open missing:", libc.open, b"missing.txt", os.O_RDONLY)
call("open data (errno EINTR before):", libc.open, b"data.txt", os.O_RDONLY, errno_before=errno.EINTR)
call("open NULL:", libc.open, None, os.O_RDONLY)
call("openat missing:", libc.openat, -100, b"sub/missing.txt", os.O_RDONLY)
call("fopen missing:", libc.fopen, b"missing.txt", b"r")
call("opendir missing:", libc.opendir, b"nodir")
try:
    open("missing.txt")
except OSError as e:
    print("python:", errno.errorcode[e.errno])
PY
with errno "$PY" errno.py
plain errno "$PY" errno.py
same_output errno
grep -q 'open missing: -1 ENOENT' "$T/errno.with.out" && grep -q 'open data (errno EINTR before): ok EINTR' "$T/errno.with.out" &&
  grep -q 'open NULL: -1 EFAULT' "$T/errno.with.out" || fail "errno not as expected: $(cat "$T/errno.with.out")"
pycheck "$T/errno.log" <<'PY'
miss = [r for r in R if r.path == TP + b"/missing.txt"]
check(len(miss) == 3 and all(r.ev == "O" and r.b == -2 and (r.size, r.dev, r.ino) == (0, 0, 0) for r in miss),
      "three failed opens of missing.txt: b = -2, no stat", R)
check([r.b for r in R if r.path == TP + b"/sub/missing.txt"] == [-2], "openat(AT_FDCWD) missing: -2", R)
check([(r.ev, r.b) for r in R if r.path == TP + b"/nodir"] == [("D", -2)], "opendir missing: D -2", R)
PY

# The log itself read by the program: not recorded. No REPRUN_FILES_LOG (a relative one: above):
# the library records nothing and the program runs as without it.
with logread bash -c 'cat "$REPRUN_FILES_LOG" >/dev/null; cat data.txt >/dev/null'
pycheck "$T/logread.log" <<'PY'
check(not [r for r in R if r.path.endswith(b"logread.log")], "the log's own reads are not recorded", R)
check([r for r in R if r.path == TP + b"/data.txt"], "the other file is", R)
PY
LD_PRELOAD=$LIB cat data.txt >"$T/off.with.out" 2>"$T/off.with.err"
echo $? >"$T/off.with.rc"
plain off cat data.txt
same_output off
[[ -z $static_note ]] || echo "note: static part skipped: $static_note"
[[ -z $calls_note ]] || echo "note: C calls part skipped: $calls_note"
pass
