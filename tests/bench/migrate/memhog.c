/* Benchmark workload: touches MIB MiB once (then leaves it idle, the
 * "mostly idle heap") and appends a counter to a file every 200 ms.
 * Its stdio is the container's own /dev/null: the one `run -d` hands
 * over lives in a mount CRIU cannot see from inside the container.
 *
 * Usage: memhog [MIB [OUT [LIBRARY...]]]. Built dynamically, it first
 * dlopens each LIBRARY (a name or a path), so that it maps shared objects
 * as an application does (an MPI rank maps ~110 files). */
#ifndef MEMHOG_STATIC
#include <dlfcn.h>
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 16;
  const char* out = argc > 2 ? argv[2] : "/out/count.log";
#ifdef MEMHOG_STATIC
  if (argc > 3) return 2; /* no dlopen in a static binary */
#else
  /* GLOBAL: Open MPI's components resolve symbols of libmpi loaded
   * before them; LAZY: their functions are never called. One that does
   * not load (a library it needs is not installed) is left out, as Open
   * MPI leaves out such a component. */
  for (int i = 3; i < argc; ++i) dlopen(argv[i], RTLD_LAZY | RTLD_GLOBAL);
#endif
  size_t len = mib << 20;
  int null = open("/dev/null", O_RDWR);
  if (null < 0) return 1;
  for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
  if (null > 2) close(null);
  unsigned char* heap = malloc(len);
  if (!heap) return 1;
  for (size_t i = 0; i < len; i += 4096) heap[i] = (unsigned char)(i >> 12) | 1;
  for (unsigned long n = 0;; ++n) {
    FILE* f = fopen(out, "a");
    if (f) {
      fprintf(f, "%lu\n", n);
      fclose(f);
    }
    heap[(n * 4096) % len] ^= 1; /* a trickle of dirty pages */
    usleep(200000);
  }
}
