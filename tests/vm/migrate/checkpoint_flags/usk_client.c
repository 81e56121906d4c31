// A unix socket client for the container (busybox has none): connects a
// stream or datagram socket to a path, then sends its count through it and
// appends it to /out/count.log every 0.2 s. Built static on the host by
// test_checkpoint_flags.py.  Usage: usk_client stream|dgram PATH
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
static void note(const char* file, const char* text) {
  FILE* f = fopen(file, "a");
  if (f) { fputs(text, f); fclose(f); }
}
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int s = socket(AF_UNIX, strcmp(argv[1], "stream") == 0 ? SOCK_STREAM : SOCK_DGRAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
  char line[64];
  if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a) < 0) {
    snprintf(line, sizeof line, "connect: %s\n", strerror(errno));
    note("/out/err.log", line);
    return 1;
  }
  for (long i = 0;; i++) {
    int n = snprintf(line, sizeof line, "%ld\n", i);
    if (send(s, line, n, 0) != n) {
      snprintf(line, sizeof line, "send: %s\n", strerror(errno));
      note("/out/err.log", line);
      return 1;
    }
    note("/out/count.log", line);
    usleep(200000);
  }
}
