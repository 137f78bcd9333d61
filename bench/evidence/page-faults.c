/* What a first touch of fresh anonymous memory costs on this machine, per 4 KiB page: the
 * kernel work behind tally's peak RSS (docs/performance.md, "Page faults on this machine").
 *
 *   cc -O2 bench/evidence/page-faults.c -o /tmp/page-faults && /tmp/page-faults
 *
 * Three rounds; in each, 300 MiB are mapped and touched one byte per page (as `tally trace`
 * does, with transparent huge pages off), then another 300 MiB are populated with
 * MADV_POPULATE_WRITE 1 MiB at a time before the same loop. The first round also pays for the
 * host backing the guest's memory. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    const size_t bytes = 300ul << 20, page = 4096, step = 1 << 20;
    const double pages = (double)(bytes / page);
    for (int round = 1; round <= 3; round++) {
        char *a = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *b = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED || b == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        double t = now();
        for (size_t i = 0; i < bytes; i += page) a[i] = 1;
        double touched = now() - t;
        t = now();
        for (size_t i = 0; i < bytes; i += step) madvise(b + i, step, MADV_POPULATE_WRITE);
        for (size_t i = 0; i < bytes; i += page) b[i] = 1;
        double populated = now() - t;
        printf("round %d: touch %.2f us/page, populate %.2f us/page\n", round,
               touched * 1e6 / pages, populated * 1e6 / pages);
        munmap(a, bytes);
        munmap(b, bytes);
    }
    return 0;
}
