/* Workload for `crx migrate --pre-copy auto` (test_migrate.py): MIB MiB
 * whose every page holds (page index, pass) in its first 8 bytes, checked
 * before each rewrite, so a page that arrived stale after a migration is
 * caught; a counter line in LOG every 200 ms, "BAD ..." and exit 1 when
 * the memory is wrong.
 *   dirtier hot MIB LOG:  rewrites every page every 50 ms (far faster than
 *                         any link between the guests moves them);
 *   dirtier idle MIB LOG: writes the pages once, then only checks them.
 * Its stdio is the container's own /dev/null (as memhog's). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char* log_path;

static void say(const char* line) {
  FILE* f = fopen(log_path, "a");
  if (f) {
    fprintf(f, "%s\n", line);
    fclose(f);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* Checks that every page holds pass `expect`, then writes `next` (unless
 * next == expect: only the check). */
static void pass(uint64_t* heap, size_t pages, uint64_t expect, uint64_t next) {
  for (size_t i = 0; i < pages; ++i) {
    uint64_t* w = heap + i * (4096 / sizeof(uint64_t));
    uint64_t want = ((uint64_t)i << 32) | expect;
    if (*w != want) {
      char line[128];
      snprintf(line, sizeof line, "BAD page %zu: %#llx, want %#llx", i, (unsigned long long)*w,
               (unsigned long long)want);
      say(line);
      exit(1);
    }
    if (next != expect) *w = ((uint64_t)i << 32) | next;
  }
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  int hot = strcmp(argv[1], "hot") == 0;
  size_t pages = (strtoul(argv[2], NULL, 10) << 20) / 4096;
  log_path = argv[3];
  int null = open("/dev/null", O_RDWR);
  if (null < 0) return 1;
  for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
  if (null > 2) close(null);
  uint64_t* heap = aligned_alloc(4096, pages * 4096);
  if (!heap) return 1;
  for (size_t i = 0; i < pages; ++i) heap[i * (4096 / sizeof(uint64_t))] = (uint64_t)i << 32;
  uint64_t p = 0;
  unsigned long n = 0;
  double next_line = now();
  for (;;) {
    if (hot) {
      pass(heap, pages, p, p + 1);
      ++p;
    } else {
      pass(heap, pages, 0, 0);
    }
    /* The monotonic clock of another guest (after a migration) may be
     * far behind this one's. */
    if (next_line - now() > 1) next_line = now();
    if (now() >= next_line) {
      char line[32];
      snprintf(line, sizeof line, "%lu", n++);
      say(line);
      next_line += 0.2;
      if (next_line < now()) next_line = now() + 0.2;
    }
    usleep(hot ? 50000 : 200000);
  }
}
