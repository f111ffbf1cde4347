/*
 * berth-helper: berth's own process inside an attempt's container. It needs nothing from the
 * image (no libc, no shell, no /bin): a static program of a few hundred bytes, built for x86_64
 * and aarch64 by scripts/gen-helper.sh into src/pack/helper-bytes.ts, which berth copies into a
 * container through the engine's archive API (src/pack/helper.ts).
 *
 *   berth-helper pause
 *       Waits for a signal, doing nothing: the main process of a sandbox (spec.sandbox), under the
 *       engine's init (HostConfig.Init: docker-init is PID 1 and passes a TERM on), so a stop's
 *       TERM ends it at once.
 *   berth-helper kill NAME=VALUE
 *       Sends SIGKILL to every process of the container whose environment holds the entry
 *       NAME=VALUE exactly (what berth gives each exec it starts, BERTH_EXEC_ID=<id>), scanning
 *       /proc again until a scan finds none: an exec past its timeout, or whose client went away,
 *       is killed in the container with its children (which inherit the entry). Exit 0; 1 when
 *       /proc cannot be read; 2 on a usage error.
 */
typedef unsigned long size_t;

#if defined(__x86_64__)
#define SYS_read 0
#define SYS_write 1
#define SYS_close 3
#define SYS_nanosleep 35
#define SYS_getpid 39
#define SYS_kill 62
#define SYS_getdents64 217
#define SYS_exit_group 231
#define SYS_openat 257
#define SYS_ppoll 271
static long sc(long n, long a, long b, long c, long d, long e) {
  long r;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
  return r;
}
__asm__(".text\n.globl _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n and $-16,%rsp\n call cmain\n hlt\n");
#elif defined(__aarch64__)
#define SYS_openat 56
#define SYS_close 57
#define SYS_getdents64 61
#define SYS_read 63
#define SYS_write 64
#define SYS_ppoll 73
#define SYS_exit_group 94
#define SYS_nanosleep 101
#define SYS_kill 129
#define SYS_getpid 172
static long sc(long n, long a, long b, long c, long d, long e) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
}
__asm__(".text\n.globl _start\n_start:\n mov x0, sp\n bl cmain\n");
#else
#error "berth-helper: x86_64 or aarch64 only"
#endif

#define AT_FDCWD (-100)
#define SIGKILL 9

/* What the compiler may call on its own, even freestanding. */
void *memset(void *d, int c, size_t n) {
  unsigned char *p = d;
  while (n--) *p++ = (unsigned char)c;
  return d;
}
void *memcpy(void *d, const void *s, size_t n) {
  unsigned char *p = d;
  const unsigned char *q = s;
  while (n--) *p++ = *q++;
  return d;
}

static __attribute__((noreturn)) void quit(int code) {
  for (;;) sc(SYS_exit_group, code, 0, 0, 0, 0);
}

static size_t len(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

static int same(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

static void say(const char *s) {
  sc(SYS_write, 2, (long)s, (long)len(s), 0, 0);
}

static __attribute__((noreturn)) void pause_forever(void) {
  /* ppoll with no descriptors and no timeout: returns only when a signal is handled */
  for (;;) sc(SYS_ppoll, 0, 0, 0, 0, 0);
}

/* Whether the environment file `fd` holds the entry `m` (of length `ml`) exactly: read as it streams. */
static int holds(int fd, const char *m, size_t ml) {
  static char buf[16384];
  size_t pos = 0; /* bytes of the current entry matched so far */
  int ok = 1;     /* the current entry still matches */
  for (;;) {
    long n = sc(SYS_read, fd, (long)buf, sizeof buf, 0, 0);
    if (n <= 0) return 0;
    for (long i = 0; i < n; i++) {
      char c = buf[i];
      if (c == 0) {
        if (ok && pos == ml) return 1;
        pos = 0;
        ok = 1;
      } else if (ok && pos < ml && c == m[pos]) {
        pos++;
      } else {
        ok = 0;
      }
    }
  }
}

struct dirent64 {
  unsigned long d_ino;
  long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

/* One scan of /proc: SIGKILL to each process holding the entry; how many were found (-1: /proc unreadable). */
static long scan(const char *m, size_t ml, long self) {
  static char dents[8192];
  char path[64];
  long found = 0;
  long dir = sc(SYS_openat, AT_FDCWD, (long)"/proc", 0, 0, 0);
  if (dir < 0) return -1;
  for (;;) {
    long n = sc(SYS_getdents64, dir, (long)dents, sizeof dents, 0, 0);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct dirent64 *d = (struct dirent64 *)(dents + off);
      off += d->d_reclen;
      long pid = 0;
      const char *p = d->d_name;
      if (!*p) continue;
      while (*p >= '0' && *p <= '9' && pid < 100000000) pid = pid * 10 + (*p++ - '0');
      if (*p || pid == self || pid <= 1) continue;
      /* "/proc/<pid>/environ" */
      size_t k = 0;
      const char *pre = "/proc/";
      while (*pre) path[k++] = *pre++;
      for (const char *q = d->d_name; *q && k < 40;) path[k++] = *q++;
      const char *post = "/environ";
      while (*post) path[k++] = *post++;
      path[k] = 0;
      long fd = sc(SYS_openat, AT_FDCWD, (long)path, 0, 0, 0);
      if (fd < 0) continue;
      int hit = holds((int)fd, m, ml);
      sc(SYS_close, fd, 0, 0, 0, 0);
      if (hit) {
        sc(SYS_kill, pid, SIGKILL, 0, 0, 0);
        found++;
      }
    }
  }
  sc(SYS_close, dir, 0, 0, 0, 0);
  return found;
}

static __attribute__((noreturn)) void kill_marked(const char *m) {
  size_t ml = len(m);
  int eq = 0;
  for (size_t i = 0; i < ml; i++) eq |= m[i] == '=';
  if (ml < 3 || !eq) {
    say("berth-helper kill: NAME=VALUE expected\n");
    quit(2);
  }
  long self = sc(SYS_getpid, 0, 0, 0, 0, 0);
  /* again until a scan finds none (a process may fork while it is being killed), at most 200 scans */
  for (int round = 0; round < 200; round++) {
    long found = scan(m, ml, self);
    if (found < 0) {
      say("berth-helper kill: /proc cannot be read\n");
      quit(1);
    }
    if (found == 0) quit(0);
    long ts[2] = {0, 10 * 1000 * 1000}; /* 10 ms: the killed ones go */
    sc(SYS_nanosleep, (long)ts, 0, 0, 0, 0);
  }
  quit(0);
}

__attribute__((used)) void cmain(long *sp) {
  long argc = sp[0];
  char **argv = (char **)(sp + 1);
  if (argc >= 2 && same(argv[1], "pause")) pause_forever();
  if (argc == 3 && same(argv[1], "kill")) kill_marked(argv[2]);
  say("usage: berth-helper pause | berth-helper kill NAME=VALUE\n");
  quit(2);
}
