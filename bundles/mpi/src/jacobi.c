/* mpi-jacobi: a 2-D Jacobi solve of Laplace's equation on an N x N grid,
 * rows split across the ranks, with a halo exchange with both neighbours
 * every iteration, an MPI_Allreduce of the update's norm every --check
 * iterations and, at the end, an MPI_Reduce of a checksum of the grid.
 *
 * Deterministic: a fixed number of iterations and, per grid point, the same
 * floating-point expression whatever the decomposition, so the grid and its
 * checksum are bit-identical for any number of ranks and any placement (a
 * migrated run must print the checksum of an unmigrated one). The checksum
 * sums a 64-bit hash of (point index, bit pattern of its value) modulo
 * 2^64, which is independent of the order of the reduction.
 *
 * --bulk B --bulk-every K: every K iterations each rank also exchanges a
 * block of B bytes with each neighbour (B a multiple of 8), its words a
 * function of (exchange, sender, index) that the receiver checks. Sized
 * above UCX's eager limit, these take the rendezvous path (RDMA read or
 * write of the sender's buffer) that the 2 KiB halo rows of a small grid
 * never take; wrong words are counted ("bulk":{"errors"}) and fail the run.
 *
 * --verify: rank 0 also recomputes the whole grid serially and compares it
 * bit for bit with the distributed result (gathered row block by row block).
 *
 * --timeline K: the last rank also prints {"timeline":{"iter":I,"t":T}}
 * every K iterations, T its MPI_Wtime() since the start of the solve. The
 * last rank is the one a benchmark does not move, so T stays on one clock;
 * every rank waits for its neighbours each iteration, so a stall anywhere
 * shows in its timeline (tests/bench/mpi splits a job's delay with it).
 *
 * --hold PATH: rank 0, done iterating, waits until PATH exists before the
 * final reductions (the other ranks wait in them), polling every 10 ms, and
 * says so on stderr ({"hold":{"iter":I}}). A test looking at a moved rank
 * after its last move holds the job this way so that it cannot end first.
 *
 * stdout (rank 0): one JSON line. stderr: progress lines
 *   {"progress":{"iter":I,"norm":R}} every --progress iterations.
 * Exit status 0 only if the run checked out ("ok":true). */
#include <mpi.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: mpi-jacobi [--n N] [--iters I] [--check C] [--progress P] "
                        "[--bulk BYTES] [--bulk-every K] [--timeline K] [--hold PATH] [--verify|--no-verify]\n");
}

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

static uint64_t point_hash(uint64_t index, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return mix64(index * 0x9e3779b97f4a7c15ULL ^ mix64(bits));
}

/* Word i of the bulk block that rank `from` sends in exchange e. */
static uint64_t bulk_word(int e, int from, size_t i)
{
    return mix64(((uint64_t)e << 40) ^ ((uint64_t)from << 32) ^ i);
}

/* One bulk exchange with both neighbours (MPI_PROC_NULL: none); returns
 * the number of wrong words received. */
static long bulk_exchange(int e, int rank, int up, int down, uint64_t *out, uint64_t *in_up,
                          uint64_t *in_down, size_t words)
{
    for (size_t i = 0; i < words; i++)
        out[i] = bulk_word(e, rank, i);
    MPI_Request req[4];
    MPI_Irecv(in_up, (int)words, MPI_UINT64_T, up, 3, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in_down, (int)words, MPI_UINT64_T, down, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(out, (int)words, MPI_UINT64_T, up, 2, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(out, (int)words, MPI_UINT64_T, down, 3, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    long wrong = 0;
    for (size_t i = 0; i < words; i++) {
        if (up != MPI_PROC_NULL && in_up[i] != bulk_word(e, up, i))
            wrong++;
        if (down != MPI_PROC_NULL && in_down[i] != bulk_word(e, down, i))
            wrong++;
    }
    return wrong;
}

/* Value of global point (gi, j), gi and j in 0..N+1 (0 and N+1: boundary). */
static double initial(int gi, int j, int n)
{
    if (gi == 0)
        return 1.0;
    if (gi == n + 1)
        return 0.0;
    if (j == 0)
        return (double)gi / (n + 1);
    if (j == n + 1)
        return 0.5;
    return (double)((gi * 7 + j * 13) % 17) / 17.0;
}

/* One sweep over rows 1..rows of u (row stride n+2) into v; returns the sum
 * of squared updates. */
static double sweep(const double *u, double *v, int rows, int n)
{
    int w = n + 2;
    double s = 0.0;
    for (int i = 1; i <= rows; i++) {
        const double *up = u + (size_t)(i - 1) * w, *mid = u + (size_t)i * w,
                     *dn = u + (size_t)(i + 1) * w;
        double *out = v + (size_t)i * w;
        for (int j = 1; j <= n; j++) {
            double x = 0.25 * ((up[j] + dn[j]) + (mid[j - 1] + mid[j + 1]));
            double d = x - mid[j];
            s += d * d;
            out[j] = x;
        }
    }
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int n = 512, iters = 400, check = 10, progress = 50, verify = 1, bulk = 0, bulk_every = 10;
    int timeline = 0;
    const char *hold = NULL;
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a];
        int *target = NULL;
        if (!strcmp(s, "--n"))
            target = &n;
        else if (!strcmp(s, "--iters"))
            target = &iters;
        else if (!strcmp(s, "--check"))
            target = &check;
        else if (!strcmp(s, "--progress"))
            target = &progress;
        else if (!strcmp(s, "--bulk"))
            target = &bulk;
        else if (!strcmp(s, "--bulk-every"))
            target = &bulk_every;
        else if (!strcmp(s, "--timeline"))
            target = &timeline;
        else if (!strcmp(s, "--hold") && a + 1 < argc) {
            hold = argv[++a];
            continue;
        } else if (!strcmp(s, "--verify")) {
            verify = 1;
            continue;
        } else if (!strcmp(s, "--no-verify")) {
            verify = 0;
            continue;
        } else {
            usage(rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (a + 1 >= argc || (*target = atoi(argv[a + 1])) < 0) {
            usage(rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        a++;
    }
    if (n < size || iters < 1 || check < 1 || bulk % 8 || bulk_every < 1) {
        if (rank == 0)
            fprintf(stderr, "mpi-jacobi: need n >= ranks (%d), iters >= 1, check >= 1, "
                            "bulk a multiple of 8, bulk-every >= 1\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Rows first0+1 .. first0+rows of the global grid (1-based interior). */
    int base = n / size, extra = n % size;
    int rows = base + (rank < extra);
    int first0 = rank * base + (rank < extra ? rank : extra);
    int w = n + 2;
    double *u = malloc(sizeof(double) * (size_t)(rows + 2) * w);
    double *v = malloc(sizeof(double) * (size_t)(rows + 2) * w);
    if (!u || !v) {
        fprintf(stderr, "mpi-jacobi: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < rows + 2; i++)
        for (int j = 0; j < w; j++)
            u[(size_t)i * w + j] = v[(size_t)i * w + j] = initial(first0 + i, j, n);
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    size_t bulk_words = (size_t)bulk / 8;
    uint64_t *bulk_buf = bulk ? malloc((size_t)bulk * 3) : NULL;
    if (bulk && !bulk_buf) {
        fprintf(stderr, "mpi-jacobi: rank %d: out of memory for --bulk\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long bulk_wrong = 0, bulk_errors = 0;
    int exchanges = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    double norm = 0.0;
    for (int it = 1; it <= iters; it++) {
        MPI_Request req[4];
        /* Halo: my first row goes up, my last row goes down. */
        MPI_Irecv(u, w, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(u + (size_t)(rows + 1) * w, w, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(u + (size_t)w, w, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(u + (size_t)rows * w, w, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        if (bulk && it % bulk_every == 0)
            bulk_wrong += bulk_exchange(exchanges++, rank, up, down, bulk_buf,
                                        bulk_buf + bulk_words, bulk_buf + 2 * bulk_words,
                                        bulk_words);
        double local = sweep(u, v, rows, n);
        double *t = u;
        u = v;
        v = t;
        if (it % check == 0 || it == iters) {
            MPI_Allreduce(&local, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (rank == 0 && progress > 0 && (it % progress == 0 || it == iters)) {
                fprintf(stderr, "{\"progress\":{\"iter\":%d,\"norm\":%.17g}}\n", it, norm);
                fflush(stderr);
            }
        }
        if (timeline > 0 && rank == size - 1 && it % timeline == 0) {
            fprintf(stderr, "{\"timeline\":{\"iter\":%d,\"t\":%.4f}}\n", it, MPI_Wtime() - t0);
            fflush(stderr);
        }
    }
    double seconds = MPI_Wtime() - t0;
    if (hold && rank == 0) {
        fprintf(stderr, "{\"hold\":{\"iter\":%d}}\n", iters);
        fflush(stderr);
        const struct timespec tick = {0, 10 * 1000 * 1000};
        while (access(hold, F_OK) != 0)
            nanosleep(&tick, NULL);
    }

    uint64_t local_sum = 0, checksum = 0;
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j <= n; j++)
            local_sum += point_hash((uint64_t)(first0 + i - 1) * n + (j - 1), u[(size_t)i * w + j]);
    MPI_Reduce(&local_sum, &checksum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bulk_wrong, &bulk_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    /* --verify: gather the row blocks on rank 0 and compare with a serial run. */
    long mismatches = 0;
    if (verify) {
        if (rank == 0) {
            double *g = malloc(sizeof(double) * (size_t)(n + 2) * w);
            double *h = malloc(sizeof(double) * (size_t)(n + 2) * w);
            double *blk = malloc(sizeof(double) * (size_t)(base + 1) * w);
            if (!g || !h || !blk) {
                fprintf(stderr, "mpi-jacobi: rank 0: out of memory for --verify\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            for (int i = 0; i < n + 2; i++)
                for (int j = 0; j < w; j++)
                    g[(size_t)i * w + j] = h[(size_t)i * w + j] = initial(i, j, n);
            for (int it = 0; it < iters; it++) {
                sweep(g, h, n, n);
                double *t = g;
                g = h;
                h = t;
            }
            for (int r = 0; r < size; r++) {
                int rr = base + (r < extra), f = r * base + (r < extra ? r : extra);
                const double *src = u + w;
                if (r != 0) {
                    MPI_Recv(blk, rr * w, MPI_DOUBLE, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    src = blk;
                }
                if (memcmp(src, g + (size_t)(f + 1) * w, sizeof(double) * (size_t)rr * w) != 0)
                    for (size_t k = 0; k < (size_t)rr * w; k++)
                        if (memcmp(&src[k], &g[(size_t)(f + 1) * w + k], sizeof(double)))
                            mismatches++;
            }
            free(g);
            free(h);
            free(blk);
        } else {
            MPI_Send(u + w, rows * w, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
        }
    }

    int ok = mismatches == 0 && bulk_errors == 0;
    if (rank == 0)
        printf("{\"program\":\"mpi-jacobi\",\"ok\":%s,\"ranks\":%d,\"n\":%d,\"iters\":%d,"
               "\"checksum\":\"%016" PRIx64 "\",\"norm\":%.17g,\"verified\":%s,"
               "\"mismatches\":%ld,\"seconds\":%.3f,\"bulk\":{\"bytes\":%d,"
               "\"exchanges\":%d,\"errors\":%ld}",
               ok ? "true" : "false", size, n, iters, checksum, norm,
               verify ? "true" : "false", mismatches, seconds, bulk, exchanges, bulk_errors);
    print_hosts(rank, size);
    if (rank == 0) {
        printf("}\n");
        fflush(stdout);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(u);
    free(v);
    free(bulk_buf);
    MPI_Finalize();
    return ok ? 0 : 1;
}
