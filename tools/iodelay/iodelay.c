/* iodelay: a storage device's latency under a server's data files, for an emulated instance.
 *
 * Preloaded into the server (LD_PRELOAD), it makes every pread of a file on one block device return no sooner than
 * a set time after it was issued: the read itself (from a RAM-backed device, a few microseconds) and then a sleep
 * until the deadline, in the calling thread. Reads in different threads wait at once, as an SSD's queue serves
 * them; the device's IOPS cap (cgroup blkio) still bounds how many complete per second. An fsync or fdatasync of a
 * file on the device waits likewise for the flush latency (a RAM-backed device flushes in microseconds; an SSD's
 * flush is what a commit waits for). Nothing else in the process is touched.
 *
 *   IODELAY_DEV  "major:minor" of the device whose files' reads are delayed (unset: nothing is delayed)
 *   IODELAY_CTL  a file of 16 bytes, the latency per read and per flush in nanoseconds (two little-endian int64),
 *                read at every call: the harness changes them while the server runs (0 lifts a delay while data
 *                is loaded); a file of 8 bytes holds the read latency alone
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
typedef int (*sync_fn)(int);

static pread_fn real_pread;
static pread_fn real_pread64;
static sync_fn real_fsync;
static sync_fn real_fdatasync;
static int flush_control; /* the control file holds a flush latency too */
static atomic_ullong flushes;
static atomic_ullong flush_waited_ns;
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
    real_fsync = (sync_fn)dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = (sync_fn)dlsym(RTLD_NEXT, "fdatasync");
    const char *dev = getenv("IODELAY_DEV"), *ns = getenv("IODELAY_NS"), *ctl = getenv("IODELAY_CTL");
    unsigned int major_n, minor_n;
    if (!dev || sscanf(dev, "%u:%u", &major_n, &minor_n) != 2)
        return;
    device = makedev(major_n, minor_n);
    if (ctl) {
        int fd = open(ctl, O_RDONLY | O_CLOEXEC);
        struct stat st;
        flush_control = fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= (off_t)(2 * sizeof(int64_t));
        size_t size = (flush_control ? 2 : 1) * sizeof(int64_t);
        void *map = fd >= 0 ? mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
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
    return control ? (long long)control[0] : delay_ns;
}

static long long flush_latency_ns(void) {
    return control && flush_control ? (long long)control[1] : 0;
}

__attribute__((destructor)) static void iodelay_report(void) {
    const char *path = getenv("IODELAY_LOG");
    if (!active || !path || atomic_load(&reads) + atomic_load(&flushes) == 0) /* a child that did none: nothing */
        return;
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "reads %llu waited_ns %llu\n", (unsigned long long)atomic_load(&reads),
                (unsigned long long)atomic_load(&waited_ns));
        if (atomic_load(&flushes))
            fprintf(f, "flushes %llu waited_ns %llu\n", (unsigned long long)atomic_load(&flushes),
                    (unsigned long long)atomic_load(&flush_waited_ns));
        fclose(f);
    }
}

static int on_device(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == device;
}

static void wait_until(long long deadline) {
    if (!precise) { /* the default 50 us timer slack would lengthen every wait */
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        precise = 1;
    }
    if (now_ns() < deadline) {
        struct timespec until = {deadline / 1000000000LL, deadline % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != 0) {
        }
    }
}

static ssize_t delayed(pread_fn real, int fd, void *buf, size_t count, off_t offset) {
    long long latency = active ? latency_ns() : 0;
    if (latency <= 0 || !on_device(fd))
        return real(fd, buf, count, offset);
    long long start = now_ns();
    ssize_t got = real(fd, buf, count, offset);
    wait_until(start + latency);
    atomic_fetch_add(&reads, 1);
    atomic_fetch_add(&waited_ns, (unsigned long long)(now_ns() - start));
    return got;
}

static int flushed(sync_fn real, int fd) {
    long long latency = active ? flush_latency_ns() : 0;
    if (latency <= 0 || !on_device(fd))
        return real(fd);
    long long start = now_ns();
    int got = real(fd);
    wait_until(start + latency);
    atomic_fetch_add(&flushes, 1);
    atomic_fetch_add(&flush_waited_ns, (unsigned long long)(now_ns() - start));
    return got;
}

int fsync(int fd) {
    return flushed(real_fsync, fd);
}

int fdatasync(int fd) {
    return flushed(real_fdatasync, fd);
}

ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
    return delayed(real_pread, fd, buf, count, offset);
}

ssize_t pread64(int fd, void *buf, size_t count, off_t offset) {
    return delayed(real_pread64, fd, buf, count, offset);
}
