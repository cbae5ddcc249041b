/* iodelay: a storage device's latency under a server's data files, for an emulated instance.
 *
 * Preloaded into the server (LD_PRELOAD), it makes every pread of a file on one block device return no sooner than
 * a set time after it was issued: the read itself (from a RAM-backed device, a few microseconds) and then a sleep
 * until the deadline, in the calling thread. Reads in different threads wait at once, as an SSD's queue serves
 * them; the device's IOPS cap (cgroup blkio) still bounds how many complete per second. Nothing else in the
 * process is touched.
 *
 *   IODELAY_DEV  "major:minor" of the device whose files' reads are delayed (unset: nothing is delayed)
 *   IODELAY_CTL  a file of 8 bytes, the latency per read in nanoseconds (a little-endian int64), read at every
 *                read: the harness changes it while the server runs (0 lifts the delay while data is loaded)
 *   IODELAY_NS   the latency per read, in nanoseconds, where there is no IODELAY_CTL
 *   IODELAY_LOG  a file the totals are written to at exit: "reads <n> waited_ns <sum>"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

static pread_fn real_pread;
static pread_fn real_pread64;
static long long delay_ns;
static volatile const int64_t *control; /* the harness's latency, when it gave a control file */
static dev_t device;
static int active;
static atomic_ullong reads;
static atomic_ullong waited_ns;
static __thread int precise;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((constructor)) static void iodelay_init(void) {
    real_pread = (pread_fn)dlsym(RTLD_NEXT, "pread");
    real_pread64 = (pread_fn)dlsym(RTLD_NEXT, "pread64");
    const char *dev = getenv("IODELAY_DEV"), *ns = getenv("IODELAY_NS"), *ctl = getenv("IODELAY_CTL");
    unsigned int major_n, minor_n;
    if (!dev || sscanf(dev, "%u:%u", &major_n, &minor_n) != 2)
        return;
    device = makedev(major_n, minor_n);
    if (ctl) {
        int fd = open(ctl, O_RDONLY | O_CLOEXEC);
        void *map = fd >= 0 ? mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (fd >= 0)
            close(fd);
        if (map != MAP_FAILED) {
            control = map;
            active = 1;
        }
    } else if (ns) {
        delay_ns = atoll(ns);
        active = delay_ns > 0;
    }
}

static long long latency_ns(void) {
    return control ? (long long)*control : delay_ns;
}

__attribute__((destructor)) static void iodelay_report(void) {
    const char *path = getenv("IODELAY_LOG");
    if (!active || !path || atomic_load(&reads) == 0) /* a child that read nothing says nothing */
        return;
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "reads %llu waited_ns %llu\n", (unsigned long long)atomic_load(&reads),
                (unsigned long long)atomic_load(&waited_ns));
        fclose(f);
    }
}

static int on_device(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == device;
}

static ssize_t delayed(pread_fn real, int fd, void *buf, size_t count, off_t offset) {
    long long latency = active ? latency_ns() : 0;
    if (latency <= 0 || !on_device(fd))
        return real(fd, buf, count, offset);
    if (!precise) { /* the default 50 us timer slack would lengthen every wait */
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        precise = 1;
    }
    long long start = now_ns();
    ssize_t got = real(fd, buf, count, offset);
    long long deadline = start + latency, done = now_ns();
    if (done < deadline) {
        struct timespec until = {deadline / 1000000000LL, deadline % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != 0) {
        }
    }
    atomic_fetch_add(&reads, 1);
    atomic_fetch_add(&waited_ns, (unsigned long long)(now_ns() - start));
    return got;
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
    return delayed(real_pread, fd, buf, count, offset);
}

ssize_t pread64(int fd, void *buf, size_t count, off_t offset) {
    return delayed(real_pread64, fd, buf, count, offset);
}
