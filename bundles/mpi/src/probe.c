/* mpi-probe: point-to-point latency and bandwidth between rank 0 and every
 * other rank in turn, for message sizes from 1 byte to --max-size (powers
 * of 4): small sizes go eagerly, large ones by rendezvous (UCX_RNDV_THRESH).
 * Every payload is filled from a generator seeded by (size, repetition,
 * direction, peer) and checked byte for byte on receipt.
 *
 * Latency: ping-pong, half the round trip. Bandwidth: rank 0 posts a window
 * of --window non-blocking sends, the peer receives them all, checks them
 * and answers with one byte; repeated.
 *
 * stdout (rank 0): one JSON line. Exit status 0 only if no payload was wrong. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints ,"hosts":[...] : every rank's MPI_Get_processor_name, in rank order
 * (collective; rank 0 prints). */
static void print_hosts(int rank, int size)
{
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    char *all = rank == 0 ? calloc((size_t)size, MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank != 0)
        return;
    printf(",\"hosts\":[");
    for (int r = 0; r < size; r++) {
        const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
        printf("%s\"", r ? "," : "");
        for (; *h; h++)
            if (*h != '"' && *h != '\\' && (unsigned char)*h >= 0x20)
                putchar(*h);
        printf("\"");
    }
    printf("]");
    free(all);
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static void fill(unsigned char *buf, size_t len, uint64_t seed)
{
    uint64_t x = mix64(seed + 0x9e3779b97f4a7c15ULL);
    size_t k = 0;
    for (; k + 8 <= len; k += 8) {
        x = mix64(x + k);
        memcpy(buf + k, &x, 8);
    }
    x = mix64(x + k);
    for (; k < len; k++)
        buf[k] = (unsigned char)(x >> (8 * (k % 8)));
}

static uint64_t seed_of(size_t size, int rep, int dir, int peer)
{
    return ((uint64_t)size << 32) ^ ((uint64_t)rep << 8) ^ ((uint64_t)dir << 4) ^ (uint64_t)peer;
}

/* Checks buf against the expected pattern; counts wrong payloads. */
static long check(const unsigned char *buf, unsigned char *want, size_t len, uint64_t seed)
{
    fill(want, len, seed);
    return memcmp(buf, want, len) != 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long max_size = 1 << 20;
    int reps = 20, window = 8;
    for (int a = 1; a < argc; a++) {
        if (a + 1 < argc && !strcmp(argv[a], "--max-size"))
            max_size = atol(argv[++a]);
        else if (a + 1 < argc && !strcmp(argv[a], "--reps"))
            reps = atoi(argv[++a]);
        else if (a + 1 < argc && !strcmp(argv[a], "--window"))
            window = atoi(argv[++a]);
        else {
            if (rank == 0)
                fprintf(stderr, "usage: mpi-probe [--max-size BYTES] [--reps R] [--window W]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (size < 2 || max_size < 1 || reps < 1 || window < 1) {
        if (rank == 0)
            fprintf(stderr, "mpi-probe: needs >= 2 ranks, --max-size, --reps, --window >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    unsigned char *want = malloc((size_t)max_size);
    unsigned char **bufs = malloc(sizeof(*bufs) * (size_t)window);
    MPI_Request *req = malloc(sizeof(*req) * (size_t)window);
    int oom = !want || !bufs || !req;
    for (int k = 0; !oom && k < window; k++)
        oom = !(bufs[k] = malloc((size_t)max_size));
    if (oom) {
        fprintf(stderr, "mpi-probe: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    long errors = 0;
    if (rank == 0) {
        printf("{\"program\":\"mpi-probe\",\"ranks\":%d,\"pairs\":[", size);
    }
    for (int peer = 1; peer < size; peer++) {
        if (rank == 0)
            printf("%s{\"peer\":%d,\"sizes\":[", peer > 1 ? "," : "", peer);
        int first = 1;
        for (long len = 1; len <= max_size; len = len < max_size && len * 4 > max_size ? max_size : len * 4) {
            /* fewer repetitions for big messages: at most ~64 MiB per size */
            int r = reps;
            while (r > 2 && (long long)r * len * window > (64LL << 20))
                r /= 2;
            double lat = 0.0, bw = 0.0;
            if (rank == 0 || rank == peer) {
                unsigned char *b = bufs[0];
                double t = MPI_Wtime();
                for (int i = 0; i < r; i++) {
                    if (rank == 0) {
                        fill(b, (size_t)len, seed_of((size_t)len, i, 0, peer));
                        MPI_Send(b, (int)len, MPI_BYTE, peer, 10, MPI_COMM_WORLD);
                        memset(b, 0, (size_t)len);
                        MPI_Recv(b, (int)len, MPI_BYTE, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        errors += check(b, want, (size_t)len, seed_of((size_t)len, i, 1, peer));
                    } else {
                        memset(b, 0, (size_t)len);
                        MPI_Recv(b, (int)len, MPI_BYTE, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        errors += check(b, want, (size_t)len, seed_of((size_t)len, i, 0, peer));
                        fill(b, (size_t)len, seed_of((size_t)len, i, 1, peer));
                        MPI_Send(b, (int)len, MPI_BYTE, 0, 11, MPI_COMM_WORLD);
                    }
                }
                lat = (MPI_Wtime() - t) / (2.0 * r) * 1e6;
                t = MPI_Wtime();
                for (int i = 0; i < r; i++) {
                    unsigned char ack = 0;
                    if (rank == 0) {
                        for (int k = 0; k < window; k++) {
                            fill(bufs[k], (size_t)len, seed_of((size_t)len, 1000 + i * window + k, 2, peer));
                            MPI_Isend(bufs[k], (int)len, MPI_BYTE, peer, 12, MPI_COMM_WORLD, &req[k]);
                        }
                        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                        MPI_Recv(&ack, 1, MPI_BYTE, peer, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        errors += ack != 1;
                    } else {
                        for (int k = 0; k < window; k++) {
                            memset(bufs[k], 0, (size_t)len);
                            MPI_Irecv(bufs[k], (int)len, MPI_BYTE, 0, 12, MPI_COMM_WORLD, &req[k]);
                        }
                        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                        long bad = 0;
                        for (int k = 0; k < window; k++)
                            bad += check(bufs[k], want, (size_t)len,
                                         seed_of((size_t)len, 1000 + i * window + k, 2, peer));
                        errors += bad;
                        ack = bad == 0;
                        MPI_Send(&ack, 1, MPI_BYTE, 0, 13, MPI_COMM_WORLD);
                    }
                }
                bw = (double)len * window * r / (MPI_Wtime() - t) / 1e6;
            }
            if (rank == 0) {
                printf("%s{\"size\":%ld,\"reps\":%d,\"lat_us\":%.1f,\"bw_MBps\":%.3f}",
                       first ? "" : ",", len, r, lat, bw);
                fflush(stdout);
            }
            first = 0;
            if (len == max_size)
                break;
        }
        if (rank == 0)
            printf("]}");
        MPI_Barrier(MPI_COMM_WORLD);
    }
    long total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("],\"errors\":%ld,\"ok\":%s", total, total == 0 ? "true" : "false");
    print_hosts(rank, size);
    if (rank == 0) {
        printf("}\n");
        fflush(stdout);
    }
    MPI_Bcast(&total, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    for (int k = 0; k < window; k++)
        free(bufs[k]);
    free(bufs);
    free(req);
    free(want);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
