/*
 * rxe_migr_test: exercises the patched rdma_rxe's migration support from
 * user space (runs inside the test guests).
 *
 *   recv    --port P --qps N [--srq] --count M --dump-after K --dump F
 *           listen for a sender, receive sequence-numbered messages on N RC
 *           QPs; after K messages dump the context (QPs stop) to F, F.mem
 *           (receive buffer) and F.state, print DUMPED and wait.
 *   send    --host H --port P --qps N --count M [--window W]
 *           send M messages per QP; fail on any error completion.
 *   restore --dump F --count M [--expect-fail]
 *           in a new process: map the buffer at its old address, restore
 *           every object with ibv_restore_object, refill (resume), and
 *           receive the rest: every message exactly once, in order.
 *   take    --qpn Q    hold a QP with number Q (sleeps) to provoke EBUSY
 *   hostile            feed bad inputs to every new uverbs method
 *   evfds              one process, two completion channels (one moved to
 *           another fd number) and the async fd; two looped-back QPs whose
 *           receive CQs use the channels; an unread event on one channel.
 *           The dump must identify every [infinibandevent] fd and every
 *           CQ's channel; after destroying everything and restoring into a
 *           new context, events arrive on the restored channels of the
 *           right CQs (the unread one queued again, the armed CQ re-armed).
 *   writes             the MR write log: RDMA WRITEs, an atomic, a SEND
 *           and an RDMA READ response into an MR are logged page by page
 *           (CPU writes are not), read, cleared, read in chunks; MRs
 *           deregistered with pages logged are counted per device.
 *
 * Output lines: "OK ..." on success, "FAIL ..." and exit 1 otherwise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "ibv_migr.h"
#include "migr_ioctl.h"

#define MAX_QPS 64
#define RQ_DEPTH 32
#define MSG_SIZE 64
#define MSG_MAGIC 0x6d696772u
#define GID_INDEX 1

struct msg {
	uint32_t magic;
	uint32_t qp;
	uint32_t seq;
};

struct opts {
	const char *mode, *host, *dump;
	int port, qps, srq, count, dump_after, window, expect_fail;
	uint32_t qpn;
};

struct ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[MAX_QPS];
	char *buf;
	size_t buf_len;
};

struct wire {
	uint32_t qpn[MAX_QPS];
	uint32_t psn[MAX_QPS];
	uint8_t gid[16];
};

struct state {
	int qps, srq;
	uint64_t buf_addr, buf_len;
	uint32_t expected[MAX_QPS];
	uint32_t qpn[MAX_QPS];
	long received;
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

static struct ibv_context *open_ctx(void)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx;

	if (!list || !n)
		die("no rdma device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

static void *map_buf(size_t len, void *at)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
		       (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	if (p == MAP_FAILED || (at && p != at))
		die("mmap %zu at %p: %s", len, at, strerror(errno));
	return p;
}

static void setup(struct ep *e, const struct opts *o, int recv_side)
{
	int depth = recv_side ? RQ_DEPTH : o->window;
	int i;

	e->ctx = open_ctx();
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf_len = (size_t)(o->qps ? o->qps : 1) * RQ_DEPTH * MSG_SIZE;
	e->buf = map_buf(e->buf_len, NULL);
	e->mr = ibv_reg_mr(e->pd, e->buf, e->buf_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	e->cq = ibv_create_cq(e->ctx, (o->qps ? o->qps : 1) * (depth + 1), NULL,
			      NULL, 0);
	if (!e->pd || !e->mr || !e->cq)
		die("setup: %s", strerror(errno));
	if (recv_side && o->srq) {
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = o->qps * RQ_DEPTH, .max_sge = 1 } };

		e->srq = ibv_create_srq(e->pd, &sa);
		if (!e->srq)
			die("create_srq: %s", strerror(errno));
	}
	for (i = 0; i < o->qps; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = e->cq, .recv_cq = e->cq, .srq = e->srq,
			.cap = { .max_send_wr = depth, .max_recv_wr = e->srq ? 0 : depth,
				 .max_send_sge = 1, .max_recv_sge = e->srq ? 0 : 1 },
			.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

		e->qp[i] = ibv_create_qp(e->pd, &ia);
		if (!e->qp[i] || ibv_modify_qp(e->qp[i], &a, IBV_QP_STATE |
				IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("create_qp %d: %s", i, strerror(errno));
	}
}

static void connect_qps(struct ep *e, const struct opts *o, const struct wire *peer)
{
	int i;

	for (i = 0; i < o->qps; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
			.dest_qp_num = peer->qpn[i], .rq_psn = peer->psn[i],
			.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1,
				     .grh = { .sgid_index = GID_INDEX, .hop_limit = 64 } },
		};

		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		if (ibv_modify_qp(e->qp[i], &a, IBV_QP_STATE | IBV_QP_AV |
				  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("rtr %d: %s", i, strerror(errno));
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1000 + i;
		a.timeout = 19;		/* ~2.1 s: TCG guests can be slow */
		a.retry_cnt = 3;	/* a counted pause > 8.4 s would exhaust this */
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(e->qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
			die("rts %d: %s", i, strerror(errno));
	}
}

static void local_wire(struct ep *e, const struct opts *o, struct wire *w)
{
	union ibv_gid gid;
	int i;

	memset(w, 0, sizeof(*w));
	if (ibv_query_gid(e->ctx, 1, GID_INDEX, &gid))
		die("query_gid");
	memcpy(w->gid, gid.raw, 16);
	for (i = 0; i < o->qps; i++) {
		w->qpn[i] = e->qp[i]->qp_num;
		w->psn[i] = 1000 + i;
	}
}

static void xfer(int fd, void *out, void *in, size_t len)
{
	if (write(fd, out, len) != (ssize_t)len)
		die("tcp write");
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)in + got, len - got);

		if (n <= 0)
			die("tcp read");
		got += n;
	}
}

static int tcp_listen_accept(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), c;

	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (void *)&a, sizeof(a)) || listen(s, 1))
		die("listen: %s", strerror(errno));
	c = accept(s, NULL, NULL);
	close(s);
	return c;
}

static int tcp_connect(const char *host, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s, tries;

	inet_pton(AF_INET, host, &a.sin_addr);
	for (tries = 0; tries < 600; tries++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (!connect(s, (void *)&a, sizeof(a)))
			return s;
		close(s);
		usleep(100000);
	}
	die("connect %s:%d", host, port);
	return -1;
}

static void post_recv(struct ep *e, struct ibv_qp *qp, uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + slot * MSG_SIZE,
			       .length = MSG_SIZE, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err = e->srq ? ibv_post_srq_recv(e->srq, &wr, &bad) :
			   ibv_post_recv(qp, &wr, &bad);

	if (err)
		die("post_recv: %s", strerror(err));
}

static int qp_index(struct state *s, uint32_t qpn)
{
	for (int i = 0; i < s->qps; i++)
		if (s->qpn[i] == qpn)
			return i;
	return -1;
}

#define STALL_SECONDS 300

static time_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* receive until every QP got `count` messages or `stop_after` total */
static void receive(struct ep *e, struct state *s, int count, long stop_after)
{
	long goal = (long)count * s->qps;
	time_t last = now();

	while (s->received < goal && (stop_after < 0 || s->received < stop_after)) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(e->cq, 16, wc);

		if (n < 0)
			die("poll_cq");
		if (n)
			last = now();
		else if (now() - last > STALL_SECONDS)
			die("no message for %d s after %ld of %ld", STALL_SECONDS,
			    s->received, goal);
		for (int i = 0; i < n; i++) {
			struct msg *m = (void *)(e->buf + wc[i].wr_id * MSG_SIZE);
			int qi = qp_index(s, wc[i].qp_num);

			if (wc[i].status != IBV_WC_SUCCESS)
				die("recv completion %s", ibv_wc_status_str(wc[i].status));
			if (qi < 0 || m->magic != MSG_MAGIC || m->qp != (uint32_t)qi)
				die("bad message on qpn %u", wc[i].qp_num);
			if (m->seq != s->expected[qi])
				die("qp %d: got seq %u, expected %u", qi, m->seq,
				    s->expected[qi]);
			s->expected[qi]++;
			s->received++;
			memset(m, 0, sizeof(*m));
			post_recv(e, e->srq ? NULL : e->qp[qi], wc[i].wr_id);
		}
	}
}

static void write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(p, 1, len, f) != len || fclose(f))
		die("write %s", path);
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *p;
	long n;

	if (!f)
		die("open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	p = malloc(n ? n : 1);
	if (fread(p, 1, n, f) != (size_t)n)
		die("read %s", path);
	fclose(f);
	*len = n;
	return p;
}

static int do_recv(const struct opts *o)
{
	struct ep e = {0};
	struct state s = {0};
	struct wire me, peer;
	char path[512];
	int fd, count, len, cap = 1 << 20;
	void *dump;

	setup(&e, o, 1);
	s.qps = o->qps;
	s.srq = o->srq;
	for (int i = 0; i < o->qps; i++) {
		s.qpn[i] = e.qp[i]->qp_num;
		for (int k = 0; k < RQ_DEPTH; k++)
			post_recv(&e, e.qp[i], i * RQ_DEPTH + k);
	}
	local_wire(&e, o, &me);
	fd = tcp_listen_accept(o->port);
	xfer(fd, &me, &peer, sizeof(me));
	connect_qps(&e, o, &peer);
	xfer(fd, &me, &peer, 1);	/* both sides ready */

	receive(&e, &s, o->count, o->dump_after);
	if (s.received >= (long)o->count * o->qps) {
		printf("OK received all without dump\n");
		return 0;
	}
	dump = malloc(cap);
	len = ibv_dump_context(e.ctx, &count, dump, cap);
	if (len < 0 || len > cap)
		die("ibv_dump_context: %d", len);
	if (ibv_migr_check_dump(dump, len))
		die("dump does not validate");
	s.buf_addr = (uintptr_t)e.buf;
	s.buf_len = e.buf_len;
	snprintf(path, sizeof(path), "%s", o->dump);
	write_file(path, dump, len);
	snprintf(path, sizeof(path), "%s.mem", o->dump);
	write_file(path, e.buf, e.buf_len);
	snprintf(path, sizeof(path), "%s.state", o->dump);
	write_file(path, &s, sizeof(s));
	printf("DUMPED %d objects, %d bytes, after %ld messages\n", count, len,
	       s.received);
	fflush(stdout);
	for (;;)
		pause();	/* the source stays until the test kills it */
}

static int do_send(const struct opts *o)
{
	struct ep e = {0};
	struct wire me, peer;
	uint32_t sent[MAX_QPS] = {0}, done[MAX_QPS] = {0};
	long total_done = 0, goal = (long)o->count * o->qps;
	time_t last;
	int fd;

	setup(&e, o, 0);
	local_wire(&e, o, &me);
	fd = tcp_connect(o->host, o->port);
	xfer(fd, &me, &peer, sizeof(me));
	connect_qps(&e, o, &peer);
	xfer(fd, &me, &peer, 1);

	last = now();
	while (total_done < goal) {
		struct ibv_wc wc[16];
		int n;

		for (int i = 0; i < o->qps; i++) {
			while (sent[i] < (uint32_t)o->count &&
			       sent[i] - done[i] < (uint32_t)o->window) {
				uint32_t slot = i * RQ_DEPTH + sent[i] % o->window;
				struct msg *m = (void *)(e.buf + slot * MSG_SIZE);
				struct ibv_sge sge = { .addr = (uintptr_t)m,
					.length = MSG_SIZE, .lkey = e.mr->lkey };
				struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge,
					.num_sge = 1, .opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED }, *bad;

				m->magic = MSG_MAGIC;
				m->qp = i;
				m->seq = sent[i];
				if (ibv_post_send(e.qp[i], &wr, &bad))
					die("post_send");
				sent[i]++;
			}
		}
		n = ibv_poll_cq(e.cq, 16, wc);
		if (n < 0)
			die("poll_cq");
		if (n)
			last = now();
		else if (now() - last > 2 * STALL_SECONDS)
			die("no completion for %d s after %ld of %ld", 2 * STALL_SECONDS,
			    total_done, goal);
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS)
				die("send completion on qp %lu: %s", wc[k].wr_id,
				    ibv_wc_status_str(wc[k].status));
			done[wc[k].wr_id]++;
			total_done++;
		}
	}
	for (int i = 0; i < o->qps; i++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (ibv_query_qp(e.qp[i], &a, IBV_QP_STATE, &ia) ||
		    a.qp_state != IBV_QPS_RTS)
			die("qp %d not in RTS at the end", i);
	}
	printf("OK sent %ld messages\n", goal);
	return 0;
}

struct restored {
	void *obj;
	int type;
	uint32_t handle;
};

static void *find(struct restored *r, int n, int type, uint32_t handle)
{
	for (int i = 0; i < n; i++)
		if (r[i].type == type && r[i].handle == handle)
			return r[i].obj;
	return NULL;
}

static void destroy_all(struct restored *r, int n)
{
	for (int i = n - 1; i >= 0; i--)
		switch (r[i].type) {
		case IBV_MIGR_OBJ_QP: ibv_destroy_qp(r[i].obj); break;
		case IBV_MIGR_OBJ_SRQ: ibv_destroy_srq(r[i].obj); break;
		case IBV_MIGR_OBJ_CQ: ibv_destroy_cq(r[i].obj); break;
		case IBV_MIGR_OBJ_MR: ibv_dereg_mr(r[i].obj); break;
		case IBV_MIGR_OBJ_PD: ibv_dealloc_pd(r[i].obj); break;
		case IBV_MIGR_OBJ_COMP_CHANNEL: ibv_destroy_comp_channel(r[i].obj); break;
		}
}

static int do_restore(const struct opts *o)
{
	struct restored objs[4 * MAX_QPS + 8];
	const struct rxe_migr_rec_hdr *rec = NULL;
	struct ep e = {0};
	struct state *s;
	size_t dlen, mlen, slen;
	char path[512];
	void *dump, *mem;
	int n = 0, err = 0;

	dump = read_file(o->dump, &dlen);
	snprintf(path, sizeof(path), "%s.mem", o->dump);
	mem = read_file(path, &mlen);
	snprintf(path, sizeof(path), "%s.state", o->dump);
	s = read_file(path, &slen);
	if (slen != sizeof(*s) || mlen != s->buf_len || ibv_migr_check_dump(dump, dlen))
		die("bad dump files");

	e.ctx = open_ctx();
	e.buf = map_buf(s->buf_len, (void *)(uintptr_t)s->buf_addr);
	e.buf_len = s->buf_len;
	memcpy(e.buf, mem, mlen);

	/* CREATE in dump order (dependencies come first), then REFILL */
	while (!err && (rec = ibv_migr_next_record(dump, dlen, rec, &err))) {
		struct ibv_restore_args a = { .record = rec };
		void *obj = NULL;
		const void *b = rec + 1;

		if (rec->type == IBV_MIGR_OBJ_MR) {
			a.pd = find(objs, n, IBV_MIGR_OBJ_PD,
				    ((const struct rxe_migr_mr *)b)->pd_handle);
		} else if (rec->type == IBV_MIGR_OBJ_SRQ) {
			a.pd = find(objs, n, IBV_MIGR_OBJ_PD,
				    ((const struct rxe_migr_srq *)b)->pd_handle);
		} else if (rec->type == IBV_MIGR_OBJ_QP) {
			const struct rxe_migr_qp *q = b;

			a.pd = find(objs, n, IBV_MIGR_OBJ_PD, q->pd_handle);
			a.send_cq = find(objs, n, IBV_MIGR_OBJ_CQ, q->send_cq_handle);
			a.recv_cq = find(objs, n, IBV_MIGR_OBJ_CQ, q->recv_cq_handle);
			a.srq = q->srq_handle == ~0u ? NULL :
				find(objs, n, IBV_MIGR_OBJ_SRQ, q->srq_handle);
		} else if (rec->type == IBV_MIGR_OBJ_CQ) {
			const struct rxe_migr_cq *q = b;

			a.channel = q->comp_channel == ~0u ? NULL :
				find(objs, n, IBV_MIGR_OBJ_COMP_CHANNEL, q->comp_channel);
		}
		err = ibv_restore_object(e.ctx, &obj, rec->type, IBV_RESTORE_CREATE,
					 &a, sizeof(a));
		if (err) {
			printf("restore of type %u handle %u: %s\n", rec->type,
			       rec->handle, strerror(-err));
			break;
		}
		objs[n].obj = obj;
		objs[n].type = rec->type;
		objs[n].handle = rec->handle;
		n++;
		if (rec->type == IBV_MIGR_OBJ_MR)
			e.mr = obj;
		else if (rec->type == IBV_MIGR_OBJ_CQ)
			e.cq = obj;
		else if (rec->type == IBV_MIGR_OBJ_SRQ)
			e.srq = obj;
	}
	for (rec = NULL; !err && (rec = ibv_migr_next_record(dump, dlen, rec, &err));) {
		struct ibv_restore_args a = { .record = rec };
		void *obj = find(objs, n, rec->type, rec->handle);

		err = ibv_restore_object(e.ctx, &obj, rec->type, IBV_RESTORE_REFILL,
					 &a, sizeof(a));
		if (err)
			printf("refill of type %u handle %u: %s\n", rec->type,
			       rec->handle, strerror(-err));
	}
	ibv_restore_object(e.ctx, NULL, 0, IBV_RESTORE_FINISH, NULL, 0);
	if (err) {
		destroy_all(objs, n);
		if (o->expect_fail) {
			printf("OK restore failed cleanly: %s\n", strerror(-err));
			return 0;
		}
		die("restore: %s", strerror(-err));
	}
	if (o->expect_fail)
		die("restore succeeded although it should not");
	for (int i = 0, k = 0; i < n; i++)
		if (objs[i].type == IBV_MIGR_OBJ_QP)
			e.qp[k++] = objs[i].obj;
	printf("RESTORED %d objects\n", n);
	fflush(stdout);
	receive(&e, s, o->count, -1);
	printf("OK received %ld messages, each once and in order\n", s->received);
	return 0;
}

static int do_take(const struct opts *o)
{
	struct ep e = {0};
	struct opts one = *o;
	int err;

	one.qps = 0;
	setup(&e, &one, 1);
	err = ibv_migr_set_next(e.ctx, IBV_MIGR_OBJ_QP, o->qpn, 0);
	if (err)
		die("set_next: %s", strerror(-err));
	{
		struct ibv_qp_init_attr ia = { .send_cq = e.cq, .recv_cq = e.cq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC };
		struct ibv_qp *qp = ibv_create_qp(e.pd, &ia);

		if (!qp || qp->qp_num != o->qpn)
			die("could not take qpn %u", o->qpn);
		/* a second one with the same number must fail with EBUSY */
		ibv_migr_set_next(e.ctx, IBV_MIGR_OBJ_QP, o->qpn, 0);
		if (ibv_create_qp(e.pd, &ia) || errno != EBUSY)
			die("duplicate qpn not refused with EBUSY (errno %d)", errno);
	}
	printf("TAKEN qpn %u\n", o->qpn);
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

/* --- hostile inputs ------------------------------------------------ */

static int raw(struct ibv_context *ctx, uint16_t method, const void *in,
	       size_t in_len, void *out, size_t out_len, int handle_attr,
	       uint32_t handle)
{
	struct migr_call c;
	uint32_t total;

	migr_call_init(&c, method);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, in, in_len);
	if (out) {
		migr_attr_out(&c, RXE_MIGR_ATTR_OUT, out, out_len);
		migr_attr_out(&c, RXE_MIGR_ATTR_OUT_LEN, &total, sizeof(total));
	}
	if (handle_attr)
		migr_attr_handle(&c, handle_attr, handle);
	return migr_call_run(ctx->cmd_fd, &c);
}

static int failures;

static void expect_err(const char *what, int err)
{
	if (err >= 0) {
		printf("hostile %s: accepted (%d)\n", what, err);
		failures++;
	} else {
		printf("hostile %s: %s\n", what, strerror(-err));
	}
}

static int do_hostile(const struct opts *o)
{
	struct ep e = {0}, other = {0};
	struct opts one = *o;
	char big[70000], out[4096];
	struct rxe_migr_dump_req dr = { .version = RXE_MIGR_ABI_VERSION };
	struct rxe_migr_set_next sn = { .version = RXE_MIGR_ABI_VERSION };
	struct rxe_migr_qp_ctl qc = { .version = RXE_MIGR_ABI_VERSION, .op = 1 };
	struct rxe_migr_restore_queue *rq = (void *)big;
	struct rxe_migr_restore_qp *rqp = (void *)big;
	int len, count;

	one.qps = 1;
	one.window = 4;
	setup(&e, &one, 1);
	setup(&other, &one, 1);
	memset(big, 0x5a, sizeof(big));

	/* ibv_dump_context_alloc: the same bytes as a buffer of the right
	 * size gets, in one snapshot of any size (a deep CQ makes this one
	 * span several of the library's chunks) */
	{
		struct ibv_cq *deep = ibv_create_cq(e.ctx, 4096, NULL, NULL, 0);
		void *a = NULL, *b;
		size_t alen = 0;
		int acount = 0, blen, bcount = 0, err;

		if (!deep)
			die("create a deep cq");
		err = ibv_dump_context_alloc(e.ctx, &acount, &a, &alen, IBV_MIGR_DUMP_NO_STOP);
		if (err)
			die("ibv_dump_context_alloc: %s", strerror(-err));
		if (alen <= 0xf000)
			die("a dump with a deep cq is only %zu bytes", alen);
		b = malloc(alen);
		if (!b)
			die("malloc");
		blen = ibv_dump_context_flags(e.ctx, &bcount, b, alen, IBV_MIGR_DUMP_NO_STOP);
		if (blen != (int)alen || bcount != acount || memcmp(a, b, alen))
			die("ibv_dump_context_alloc: %zu bytes, %d records; the buffer call: %d, %d",
			    alen, acount, blen, bcount);
		free(b);
		/* without the rings: the same records, every queue's
		 * data_len 0, the deep CQ's 4096 entries not carried */
		{
			const struct rxe_migr_rec_hdr *r = NULL;
			size_t slen = 0;
			int scount = 0, rings = 0;

			err = ibv_dump_context_alloc(e.ctx, &scount, &b, &slen,
						     IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_NO_RINGS);
			if (err || scount != acount || slen >= 0xf000 ||
			    ibv_migr_check_dump(b, slen))
				die("a dump without rings: %s, %zu bytes, %d records (with: %zu, %d)",
				    strerror(-err), slen, scount, alen, acount);
			while ((r = ibv_migr_next_record(b, slen, r, &err))) {
				const void *body = r + 1;

				if (r->type == RXE_MIGR_OBJ_CQ)
					rings += ((const struct rxe_migr_cq *)body)->queue.data_len != 0;
				if (r->type == RXE_MIGR_OBJ_QP)
					rings += ((const struct rxe_migr_qp *)body)->sq.data_len != 0 ||
						 ((const struct rxe_migr_qp *)body)->rq.data_len != 0;
			}
			if (err || rings)
				die("a dump without rings has %d queues with ring bytes", rings);
			free(b);
		}
		free(a);
		expect_err("dump_alloc flags", ibv_dump_context_alloc(e.ctx, NULL, &a, &alen, 1u << 7));
		expect_err("dump_alloc no out", ibv_dump_context_alloc(e.ctx, NULL, NULL, &alen, 0));
		if (ibv_destroy_cq(deep))
			die("destroy the deep cq");
		printf("OK ibv_dump_context_alloc: %zu bytes in one snapshot\n", alen);
	}

	/* wrong version everywhere */
	dr.version = 99;
	expect_err("dump version", raw(e.ctx, RXE_MIGR_METHOD_DUMP, &dr, sizeof(dr), out, sizeof(out), 0, 0));
	dr.version = RXE_MIGR_ABI_VERSION;
	dr.flags = 0x80;
	expect_err("dump flags", raw(e.ctx, RXE_MIGR_METHOD_DUMP, &dr, sizeof(dr), out, sizeof(out), 0, 0));
	dr.flags = 0;
	expect_err("dump truncated input", raw(e.ctx, RXE_MIGR_METHOD_DUMP, &dr, 6, out, sizeof(out), 0, 0));
	dr.offset = 1u << 30;
	expect_err("dump huge offset", raw(e.ctx, RXE_MIGR_METHOD_DUMP, &dr, sizeof(dr), out, sizeof(out), 0, 0));
	dr.offset = 0;
	dr.version = 1;		/* the format before event file records */
	expect_err("dump old version 1", raw(e.ctx, RXE_MIGR_METHOD_DUMP, &dr, sizeof(dr), out, sizeof(out), 0, 0));
	dr.version = RXE_MIGR_ABI_VERSION;
	sn.version = 1;
	expect_err("set_next old version 1", raw(e.ctx, RXE_MIGR_METHOD_SET_NEXT, &sn, sizeof(sn), NULL, 0, 0, 0));
	sn.version = RXE_MIGR_ABI_VERSION + 1;
	expect_err("set_next version", raw(e.ctx, RXE_MIGR_METHOD_SET_NEXT, &sn, sizeof(sn), NULL, 0, 0, 0));
	sn.version = RXE_MIGR_ABI_VERSION;
	sn.type = 77;
	expect_err("set_next type", raw(e.ctx, RXE_MIGR_METHOD_SET_NEXT, &sn, sizeof(sn), NULL, 0, 0, 0));
	sn.type = RXE_MIGR_OBJ_QP;
	sn.number = 0xffffffffu;
	expect_err("set_next huge qpn", raw(e.ctx, RXE_MIGR_METHOD_SET_NEXT, &sn, sizeof(sn), NULL, 0, 0, 0));
	sn.type = RXE_MIGR_OBJ_MR;
	sn.number = 5;
	sn.key = 0x1234;
	expect_err("set_next mr key", raw(e.ctx, RXE_MIGR_METHOD_SET_NEXT, &sn, sizeof(sn), NULL, 0, 0, 0));
	qc.op = 9;
	expect_err("qp_ctl op", raw(e.ctx, RXE_MIGR_METHOD_QP_CTL, &qc, sizeof(qc), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle));
	qc.op = RXE_MIGR_QP_STOP;
	expect_err("qp_ctl foreign handle", raw(e.ctx, RXE_MIGR_METHOD_QP_CTL, &qc, sizeof(qc), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, 4242));
	expect_err("qp_ctl cq handle as qp", raw(e.ctx, RXE_MIGR_METHOD_QP_CTL, &qc, sizeof(qc), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.cq->handle));

	/* restore_queue: geometry, offsets, huge lengths, wrong handles */
	memset(rq, 0, sizeof(*rq));
	rq->version = RXE_MIGR_ABI_VERSION;
	rq->which = RXE_MIGR_Q_CQ;
	rq->queue.num_elem = 1u << 30;
	rq->queue.elem_size = 32;
	rq->queue.data_len = 0xffffffffu;
	expect_err("restore_queue geometry", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QUEUE, rq, 60000, NULL, 0, RXE_MIGR_ATTR_CQ_HANDLE, e.cq->handle));
	rq->which = 99;
	expect_err("restore_queue which", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QUEUE, rq, sizeof(*rq), NULL, 0, RXE_MIGR_ATTR_CQ_HANDLE, e.cq->handle));
	rq->which = RXE_MIGR_Q_SQ;
	expect_err("restore_queue missing qp handle", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QUEUE, rq, sizeof(*rq), NULL, 0, RXE_MIGR_ATTR_CQ_HANDLE, e.cq->handle));
	expect_err("restore_queue truncated", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QUEUE, rq, 10, NULL, 0, RXE_MIGR_ATTR_CQ_HANDLE, e.cq->handle));

	/* identify_fd: version, negative, closed and huge fds, no output */
	{
		struct rxe_migr_identify_fd idf = { .version = 1, .fd = e.ctx->async_fd };
		struct rxe_migr_fd_ident ido;
		struct migr_call c;

		expect_err("identify_fd old version 1", raw(e.ctx, RXE_MIGR_METHOD_IDENTIFY_FD, &idf, sizeof(idf), NULL, 0, 0, 0));
		int err;

		idf.version = RXE_MIGR_ABI_VERSION;
		idf.fd = -5;
		migr_call_init(&c, RXE_MIGR_METHOD_IDENTIFY_FD);
		migr_attr_in(&c, RXE_MIGR_ATTR_IN, &idf, sizeof(idf));
		migr_attr_out(&c, RXE_MIGR_ATTR_OUT, &ido, sizeof(ido));
		expect_err("identify_fd negative fd", migr_call_run(e.ctx->cmd_fd, &c));
		idf.fd = 1000000;
		migr_call_init(&c, RXE_MIGR_METHOD_IDENTIFY_FD);
		migr_attr_in(&c, RXE_MIGR_ATTR_IN, &idf, sizeof(idf));
		migr_attr_out(&c, RXE_MIGR_ATTR_OUT, &ido, sizeof(ido));
		err = migr_call_run(e.ctx->cmd_fd, &c);
		expect_err("identify_fd fd not open", err);
		if (err != -EBADF) {
			printf("hostile identify_fd fd not open: not EBADF (%d)\n", err);
			failures++;
		}
		idf.fd = e.ctx->async_fd;
		expect_err("identify_fd without output", raw(e.ctx, RXE_MIGR_METHOD_IDENTIFY_FD, &idf, sizeof(idf), NULL, 0, 0, 0));
		expect_err("identify_fd truncated", raw(e.ctx, RXE_MIGR_METHOD_IDENTIFY_FD, &idf, 4, NULL, 0, 0, 0));
	}
	/* restore_queue: a CQ event for a send queue, and without indices */
	memset(rq, 0, sizeof(*rq));
	rq->version = RXE_MIGR_ABI_VERSION;
	rq->which = RXE_MIGR_Q_SQ;
	rq->flags = RXE_MIGR_RESTORE_SET_INDICES | RXE_MIGR_RESTORE_CQ_EVENT;
	expect_err("restore_queue cq event on sq", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QUEUE, rq, sizeof(*rq), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle));
	rq->which = RXE_MIGR_Q_CQ;
	rq->flags = RXE_MIGR_RESTORE_CQ_EVENT;
	expect_err("restore_queue cq event without indices", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QUEUE, rq, sizeof(*rq), NULL, 0, RXE_MIGR_ATTR_CQ_HANDLE, e.cq->handle));

	/* restore_qp with garbage and with a dumped record mangled */
	expect_err("restore_qp garbage", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QP, rqp, sizeof(*rqp), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle));
	expect_err("restore_qp truncated", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QP, rqp, 100, NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle));
	memset(rqp, 0, sizeof(*rqp));
	rqp->version = RXE_MIGR_ABI_VERSION;
	rqp->qp.qpn = e.qp[0]->qp_num;
	rqp->qp.qp_type = IBV_QPT_RC;
	rqp->qp.req_state = rqp->qp.comp_state = rqp->qp.resp_state = 2;
	rqp->qp.req_psn = 0xffffffffu;
	expect_err("restore_qp qp not in RTS / bad psn", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QP, rqp, sizeof(*rqp), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle));
	/* responder resources: counted but not there, more than a QP has */
	rqp->qp.req_psn = 0;
	rqp->qp.resp_res_count = 1;
	expect_err("restore_qp resources beyond the input", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QP, rqp, sizeof(*rqp), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle));
	rqp->qp.resp_res_count = 129;
	memset(rqp + 1, 0, 129 * sizeof(struct rxe_migr_resp_res));
	expect_err("restore_qp 129 resources", raw(e.ctx, RXE_MIGR_METHOD_RESTORE_QP, rqp, sizeof(*rqp) + 129 * sizeof(struct rxe_migr_resp_res), NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle));

	/* library-level: a truncated and a corrupted dump */
	len = ibv_dump_context_flags(e.ctx, &count, big, sizeof(big), IBV_MIGR_DUMP_NO_STOP);
	if (len <= 0)
		die("dump: %d", len);
	expect_err("check truncated dump", ibv_migr_check_dump(big, len - 8));
	((struct rxe_migr_rec_hdr *)(big + sizeof(struct rxe_migr_dump_hdr)))->len = 0xfffffff0u;
	expect_err("check corrupted dump", ibv_migr_check_dump(big, len));
	((struct rxe_migr_dump_hdr *)big)->version = 7;
	expect_err("check dump version", ibv_migr_check_dump(big, len));
	{
		struct ibv_restore_args a = { .record = (void *)(big + sizeof(struct rxe_migr_dump_hdr)) };
		void *obj = NULL;

		expect_err("restore_object bad record", ibv_restore_object(e.ctx, &obj, IBV_MIGR_OBJ_QP, IBV_RESTORE_CREATE, &a, sizeof(a)));
		expect_err("restore_object bad cmd", ibv_restore_object(e.ctx, &obj, IBV_MIGR_OBJ_QP, 42, &a, sizeof(a)));
	}
	/* random bytes into every method */
	srand(1);
	for (int round = 0; round < 200; round++) {
		uint16_t m = RXE_MIGR_METHOD_SET_NEXT +
			rand() % (RXE_MIGR_METHOD_IDENTIFY_FD - RXE_MIGR_METHOD_SET_NEXT + 1);
		size_t l = rand() % 2048;

		for (size_t i = 0; i < l; i++)
			big[i] = rand();
		((uint32_t *)big)[0] = RXE_MIGR_ABI_VERSION;
		if (m == RXE_MIGR_METHOD_DUMP)
			continue;	/* random flags could stop our QPs: fine, but skip */
		raw(e.ctx, m, big, l, NULL, 0, RXE_MIGR_ATTR_QP_HANDLE, e.qp[0]->handle);
	}
	printf(failures ? "FAIL %d hostile inputs accepted\n" : "OK hostile inputs refused\n",
	       failures);
	return failures ? 1 : 0;
}


/* --- event fds: async fd, completion channels ---------------------- */

struct evq {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch1, *ch2;
	struct ibv_cq *cq1, *cq2, *cq3;
	struct ibv_qp *a, *b;	/* a receives on cq1, b on cq2 */
};

#define EV_SLOTS 4	/* receive slots per QP; slot 2*EV_SLOTS sends */

static void ev_post_recv(struct ep *e, struct ibv_qp *qp, uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + slot * MSG_SIZE,
			       .length = MSG_SIZE, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("post_recv");
}

static void ev_send(struct ep *e, struct ibv_qp *qp, uint32_t seq)
{
	struct msg *m = (void *)(e->buf + 2 * EV_SLOTS * MSG_SIZE);
	struct ibv_sge sge = { .addr = (uintptr_t)m, .length = MSG_SIZE,
			       .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	m->magic = MSG_MAGIC;
	m->qp = qp->qp_num;
	m->seq = seq;
	if (ibv_post_send(qp, &wr, &bad))
		die("post_send");
}

/* wait for a completion event on ch; it must be for cq */
static void ev_expect_event(struct ibv_comp_channel *ch, struct ibv_cq *cq,
			    const char *what)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *got;
	void *cq_ctx;

	if (poll(&p, 1, 60000) != 1)
		die("%s: no completion event within 60 s", what);
	if (ibv_get_cq_event(ch, &got, &cq_ctx))
		die("%s: ibv_get_cq_event", what);
	if (got != cq)
		die("%s: event for the wrong CQ (handle %u, expected %u)", what,
		    got->handle, cq->handle);
	ibv_ack_cq_events(got, 1);
}

static void ev_expect_quiet(struct ibv_comp_channel *ch, const char *what)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	if (poll(&p, 1, 2000) != 0)
		die("%s: unexpected event on the other channel", what);
}

/* one receive completion on cq carrying seq from qpn */
static void ev_expect_recv(struct ep *e, struct ibv_cq *cq, uint32_t qpn,
			   uint32_t seq, const char *what)
{
	struct ibv_wc wc;
	time_t t0 = now();
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now() - t0 < 60)
		usleep(1000);
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
		die("%s: no good receive completion (%d, %s)", what, n,
		    n == 1 ? ibv_wc_status_str(wc.status) : "-");
	{
		struct msg *m = (void *)(e->buf + wc.wr_id * MSG_SIZE);

		if (m->magic != MSG_MAGIC || m->qp != qpn || m->seq != seq)
			die("%s: wrong message (qp %u seq %u)", what, m->qp, m->seq);
	}
}

static void ev_drain_sends(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc;
	time_t t0 = now();

	while (n > 0 && now() - t0 < 60) {
		int k = ibv_poll_cq(cq, 1, &wc);

		if (k < 0 || (k == 1 && wc.status != IBV_WC_SUCCESS))
			die("send completion: %s", k < 0 ? "poll" :
			    ibv_wc_status_str(wc.status));
		n -= k;
		if (!k)
			usleep(1000);
	}
	if (n > 0)
		die("send completions missing");
}

static void ev_connect(struct ibv_qp *qp, uint32_t dest, const uint8_t *gid)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("init");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 7;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = GID_INDEX;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("rtr");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 19;
	a.retry_cnt = 3;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("rts");
}

/* every [infinibandevent] fd of this process must be identified */
static void ev_check_fds(struct ibv_context *ctx, const struct evq *q,
			 uint32_t h1, uint32_t h2, uint32_t h_async)
{
	struct ibv_context *other = open_ctx();
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int seen = 0;

	if (!d)
		die("opendir /proc/self/fd");
	while ((de = readdir(d))) {
		char path[64], link[128];
		struct ibv_migr_fd_info info;
		ssize_t n;
		int fd = atoi(de->d_name), err;

		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		err = ibv_migr_identify_fd(ctx, fd, &info);
		if (err)
			die("identify fd %d (%s): %s", fd, link, strerror(-err));
		if (strcmp(link, "anon_inode:[infinibandevent]")) {
			if (info.type)
				die("fd %d (%s) identified as type %u", fd, link, info.type);
			continue;
		}
		if (fd == other->async_fd) {
			if (info.type)
				die("another context's async fd %d identified", fd);
			continue;
		}
		seen++;
		if (fd == ctx->async_fd) {
			if (info.type != IBV_MIGR_OBJ_ASYNC_EVENT || info.handle != h_async ||
			    !(info.flags & RXE_MIGR_EVF_DEFAULT_ASYNC))
				die("async fd %d: type %u handle %u flags %u", fd,
				    info.type, info.handle, info.flags);
		} else if (fd == q->ch1->fd || fd == q->ch2->fd) {
			uint32_t want = fd == q->ch1->fd ? h1 : h2;

			if (info.type != IBV_MIGR_OBJ_COMP_CHANNEL || info.handle != want)
				die("channel fd %d: type %u handle %u, expected handle %u",
				    fd, info.type, info.handle, want);
		} else {
			die("unknown event fd %d", fd);
		}
		printf("fd %d: %s handle %u%s\n", fd,
		       info.type == IBV_MIGR_OBJ_ASYNC_EVENT ? "async event fd" :
		       "completion channel", info.handle,
		       info.flags & RXE_MIGR_EVF_DEFAULT_ASYNC ? " (the context's)" : "");
	}
	closedir(d);
	ibv_close_device(other);
	if (seen != 3)
		die("saw %d event fds of the context, expected 3", seen);
}

static uint32_t ev_identify(struct ibv_context *ctx, int fd, uint32_t type)
{
	struct ibv_migr_fd_info info;
	int err = ibv_migr_identify_fd(ctx, fd, &info);

	if (err || info.type != type)
		die("identify fd %d: %s, type %u", fd, strerror(-err), info.type);
	return info.handle;
}

static const struct rxe_migr_cq *ev_cq_rec(const void *dump, size_t len,
					   uint32_t handle)
{
	const struct rxe_migr_rec_hdr *r = NULL;
	int err;

	while ((r = ibv_migr_next_record(dump, len, r, &err)))
		if (r->type == IBV_MIGR_OBJ_CQ && r->handle == handle)
			return (const void *)(r + 1);
	die("no record of CQ %u", handle);
	return NULL;
}

/* A dump with IBV_MIGR_DUMP_CQ_WINDOWS against the whole one taken just
 * before (nothing ran between): the same records, every CQ's ring cut to
 * the entries from its consumer to its producer, the other records byte
 * for byte; CQ busy must hold at least one entry.  Returns the cut dump
 * (the caller's to free) and its length in *cut_len. */
static void *check_cq_windows(struct ibv_context *ctx, const char *whole, int wlen,
			      int wcount, uint32_t busy, size_t *cut_len)
{
	const struct rxe_migr_rec_hdr *w = NULL, *c = NULL;
	size_t clen = 0;
	void *cut = NULL;
	int ccount = 0, err, cerr = 0, live_busy = -1;

	err = ibv_dump_context_alloc(ctx, &ccount, &cut, &clen,
				     IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_CQ_WINDOWS);
	if (err || ccount != wcount || ibv_migr_check_dump(cut, clen))
		die("a dump with CQ windows: %s, %d records (whole: %d)", strerror(-err),
		    ccount, wcount);
	while ((w = ibv_migr_next_record(whole, wlen, w, &err))) {
		const struct rxe_migr_cq *wc = (const void *)(w + 1), *cc;
		uint32_t n, i, k = 0;

		c = ibv_migr_next_record(cut, clen, c, &cerr);
		if (!c || c->type != w->type || c->handle != w->handle)
			die("CQ windows: record %u of type %u has no twin", w->handle, w->type);
		if (w->type != IBV_MIGR_OBJ_CQ) {
			if (c->len != w->len || memcmp(c, w, w->len))
				die("CQ windows: record %u of type %u differs", w->handle, w->type);
			continue;
		}
		cc = (const void *)(c + 1);
		n = (wc->queue.producer - wc->queue.consumer) & (wc->queue.num_elem - 1);
		if (cc->queue.producer != wc->queue.producer ||
		    cc->queue.consumer != wc->queue.consumer ||
		    cc->queue.data_len != n * wc->queue.elem_size)
			die("CQ %u: window of %u bytes for %u entries", w->handle,
			    cc->queue.data_len, n);
		for (i = wc->queue.consumer; k < n; i = (i + 1) & (wc->queue.num_elem - 1), k++)
			if (memcmp((const char *)(cc + 1) + (size_t)k * wc->queue.elem_size,
				   (const char *)(wc + 1) + (size_t)i * wc->queue.elem_size,
				   wc->queue.elem_size))
				die("CQ %u: entry %u of its window is not slot %u", w->handle, k, i);
		if (w->handle == busy)
			live_busy = (int)n;
	}
	if (err || cerr || ibv_migr_next_record(cut, clen, c, &cerr))
		die("CQ windows: the dumps do not walk alike");
	if (live_busy < 1)
		die("CQ %u should hold a completion: %d", busy, live_busy);
	printf("OK CQ windows: %zu bytes against %d whole, CQ %u carries %d entries\n",
	       clen, wlen, busy, live_busy);
	*cut_len = clen;
	return cut;
}

static int do_evfds(void)
{
	struct ep e = {0};
	struct evq q = {0}, n = {0};
	struct restored objs[32];
	const struct rxe_migr_rec_hdr *rec;
	const struct rxe_migr_cq *c1, *c2, *c3;
	uint32_t h1, h2, h_async, qpn_a, qpn_b, seen_async = 0, seen_ch = 0;
	int count, len, err = 0, k = 0, moved;
	static char dump[1 << 20];
	size_t cut_len = 0;
	void *cut;
	union ibv_gid gid;

	e.ctx = q.ctx = open_ctx();
	q.ch1 = ibv_create_comp_channel(e.ctx);
	q.ch2 = ibv_create_comp_channel(e.ctx);
	if (!q.ch1 || !q.ch2)
		die("create_comp_channel");
	/* move channel 2 to another fd number */
	moved = fcntl(q.ch2->fd, F_DUPFD_CLOEXEC, 200);
	if (moved < 0)
		die("dup");
	close(q.ch2->fd);
	q.ch2->fd = moved;

	e.pd = ibv_alloc_pd(e.ctx);
	e.buf_len = 4096;
	e.buf = map_buf(e.buf_len, NULL);
	e.mr = ibv_reg_mr(e.pd, e.buf, e.buf_len, IBV_ACCESS_LOCAL_WRITE);
	q.cq1 = ibv_create_cq(e.ctx, 8, NULL, q.ch1, 0);
	q.cq2 = ibv_create_cq(e.ctx, 8, NULL, q.ch2, 0);
	q.cq3 = ibv_create_cq(e.ctx, 8, NULL, NULL, 0);
	if (!e.pd || !e.mr || !q.cq1 || !q.cq2 || !q.cq3)
		die("setup: %s", strerror(errno));
	{
		struct ibv_qp_init_attr ia = { .send_cq = q.cq3, .recv_cq = q.cq1,
			.cap = { .max_send_wr = 4, .max_recv_wr = EV_SLOTS,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC };

		q.a = ibv_create_qp(e.pd, &ia);
		ia.recv_cq = q.cq2;
		q.b = ibv_create_qp(e.pd, &ia);
		if (!q.a || !q.b)
			die("create_qp: %s", strerror(errno));
	}
	if (ibv_query_gid(e.ctx, 1, GID_INDEX, &gid))
		die("query_gid");
	ev_connect(q.a, q.b->qp_num, gid.raw);
	ev_connect(q.b, q.a->qp_num, gid.raw);
	qpn_a = q.a->qp_num;
	qpn_b = q.b->qp_num;
	for (int i = 0; i < EV_SLOTS; i++) {
		ev_post_recv(&e, q.a, i);
		ev_post_recv(&e, q.b, EV_SLOTS + i);
	}
	/* cq1 delivered one event, read and acked, before the dump: ib_uverbs'
	 * count of it must survive, libibverbs compares it at destroy */
	if (ibv_req_notify_cq(q.cq1, 0))
		die("req_notify_cq");
	ev_send(&e, q.b, 9);
	ev_drain_sends(q.cq3, 1);
	ev_expect_event(q.ch1, q.cq1, "b -> a before the dump");
	ev_expect_recv(&e, q.cq1, qpn_b, 9, "message b -> a before the dump");
	/* both receive CQs armed; a -> b fires cq2's event, left unread */
	if (ibv_req_notify_cq(q.cq1, 0) || ibv_req_notify_cq(q.cq2, 0))
		die("req_notify_cq");
	ev_send(&e, q.a, 1);
	ev_drain_sends(q.cq3, 1);
	{
		struct pollfd p = { .fd = q.ch2->fd, .events = POLLIN };

		if (poll(&p, 1, 60000) != 1)
			die("no event on channel 2 before the dump");
	}

	len = ibv_dump_context(e.ctx, &count, dump, sizeof(dump));
	if (len < 0 || len > (int)sizeof(dump) || ibv_migr_check_dump(dump, len))
		die("ibv_dump_context: %d", len);
	/* restored from the dump with CQ windows, as the CRIU plugin does */
	cut = check_cq_windows(e.ctx, dump, len, count, q.cq2->handle, &cut_len);
	/* the dumper's view: which record is which of our fds */
	h1 = ev_identify(e.ctx, q.ch1->fd, IBV_MIGR_OBJ_COMP_CHANNEL);
	h2 = ev_identify(e.ctx, q.ch2->fd, IBV_MIGR_OBJ_COMP_CHANNEL);
	h_async = ev_identify(e.ctx, e.ctx->async_fd, IBV_MIGR_OBJ_ASYNC_EVENT);
	if (h1 == h2 || h1 == h_async || h2 == h_async)
		die("event fds share a handle: %u %u %u", h1, h2, h_async);
	for (rec = NULL; (rec = ibv_migr_next_record(dump, len, rec, &err));) {
		const struct rxe_migr_event_file *ef = (const void *)(rec + 1);

		if (rec->type == IBV_MIGR_OBJ_ASYNC_EVENT) {
			if (!(ef->flags & RXE_MIGR_EVF_DEFAULT_ASYNC) ||
			    rec->handle != h_async)
				die("async event record %u flags %u", rec->handle, ef->flags);
			seen_async++;
		} else if (rec->type == IBV_MIGR_OBJ_COMP_CHANNEL) {
			uint32_t want = rec->handle == h1 ? 0 : 1;

			if ((rec->handle != h1 && rec->handle != h2) ||
			    ef->events_pending != want)
				die("channel record %u: %u events pending", rec->handle,
				    ef->events_pending);
			seen_ch++;
		}
	}
	if (seen_async != 1 || seen_ch != 2)
		die("%u async and %u channel records", seen_async, seen_ch);
	c1 = ev_cq_rec(dump, len, q.cq1->handle);
	c2 = ev_cq_rec(dump, len, q.cq2->handle);
	c3 = ev_cq_rec(dump, len, q.cq3->handle);
	if (c1->comp_channel != h1 || c2->comp_channel != h2 || c3->comp_channel != ~0u)
		die("CQ channels %u %u %u, expected %u %u none", c1->comp_channel,
		    c2->comp_channel, c3->comp_channel, h1, h2);
	if (c1->notify != RXE_MIGR_CQ_NOTIFY_NEXT || c2->notify != RXE_MIGR_CQ_NOTIFY_NONE ||
	    c1->comp_events_pending != 0 || c2->comp_events_pending != 1 ||
	    c1->comp_events_reported != 1 || c2->comp_events_reported != 0)
		die("CQ notify %u/%u pending %u/%u read %u/%u", c1->notify,
		    c2->notify, c1->comp_events_pending, c2->comp_events_pending,
		    c1->comp_events_reported, c2->comp_events_reported);
	ev_check_fds(e.ctx, &q, h1, h2, h_async);
	printf("DUMPED %d records; channel handles %u (fd %d) and %u (fd %d), "
	       "async %u (fd %d)\n", count, h1, q.ch1->fd, h2, q.ch2->fd, h_async,
	       e.ctx->async_fd);

	/* the source goes away: numbers and memory stay for the restore */
	ibv_destroy_qp(q.a);
	ibv_destroy_qp(q.b);
	ibv_destroy_cq(q.cq1);
	ibv_destroy_cq(q.cq2);
	ibv_destroy_cq(q.cq3);
	ibv_destroy_comp_channel(q.ch1);
	ibv_destroy_comp_channel(q.ch2);
	ibv_dereg_mr(e.mr);
	ibv_dealloc_pd(e.pd);
	ibv_close_device(e.ctx);

	n.ctx = open_ctx();
	for (rec = NULL; !err && (rec = ibv_migr_next_record(cut, cut_len, rec, &err));) {
		struct ibv_restore_args a = { .record = rec };
		const void *b = rec + 1;
		void *obj = NULL;

		if (rec->type == IBV_MIGR_OBJ_MR) {
			a.pd = find(objs, k, IBV_MIGR_OBJ_PD,
				    ((const struct rxe_migr_mr *)b)->pd_handle);
		} else if (rec->type == IBV_MIGR_OBJ_CQ) {
			const struct rxe_migr_cq *cr = b;

			a.channel = cr->comp_channel == ~0u ? NULL :
				find(objs, k, IBV_MIGR_OBJ_COMP_CHANNEL, cr->comp_channel);
		} else if (rec->type == IBV_MIGR_OBJ_QP) {
			const struct rxe_migr_qp *qr = b;

			a.pd = find(objs, k, IBV_MIGR_OBJ_PD, qr->pd_handle);
			a.send_cq = find(objs, k, IBV_MIGR_OBJ_CQ, qr->send_cq_handle);
			a.recv_cq = find(objs, k, IBV_MIGR_OBJ_CQ, qr->recv_cq_handle);
		}
		err = ibv_restore_object(n.ctx, &obj, rec->type, IBV_RESTORE_CREATE,
					 &a, sizeof(a));
		if (err)
			die("restore of type %u handle %u: %s", rec->type, rec->handle,
			    strerror(-err));
		objs[k].obj = obj;
		objs[k].type = rec->type;
		objs[k].handle = rec->handle;
		k++;
	}
	for (rec = NULL; !err && (rec = ibv_migr_next_record(cut, cut_len, rec, &err));) {
		struct ibv_restore_args a = { .record = rec,
			.flags = IBV_MIGR_RESTORE_EVENT_COUNTS };
		void *obj = find(objs, k, rec->type, rec->handle);

		/* the entry cq2 held goes back to its slot (polled below) */
		if (rec->type == IBV_MIGR_OBJ_CQ)
			a.flags |= IBV_MIGR_RESTORE_CQ_WINDOW;

		err = ibv_restore_object(n.ctx, &obj, rec->type, IBV_RESTORE_REFILL,
					 &a, sizeof(a));
		if (err)
			die("refill of type %u handle %u: %s", rec->type, rec->handle,
			    strerror(-err));
	}
	ibv_restore_object(n.ctx, NULL, 0, IBV_RESTORE_FINISH, NULL, 0);
	free(cut);
	n.ch1 = find(objs, k, IBV_MIGR_OBJ_COMP_CHANNEL, h1);
	n.ch2 = find(objs, k, IBV_MIGR_OBJ_COMP_CHANNEL, h2);
	for (int i = 0; i < k; i++) {
		if (objs[i].type == IBV_MIGR_OBJ_CQ) {
			struct ibv_cq *cq = objs[i].obj;

			if (cq->channel == n.ch1)
				n.cq1 = cq;
			else if (cq->channel == n.ch2)
				n.cq2 = cq;
			else
				n.cq3 = cq;
		} else if (objs[i].type == IBV_MIGR_OBJ_QP) {
			struct ibv_qp *qp = objs[i].obj;

			if (qp->qp_num == qpn_a)
				n.a = qp;
			else if (qp->qp_num == qpn_b)
				n.b = qp;
		} else if (objs[i].type == IBV_MIGR_OBJ_MR) {
			e.mr = objs[i].obj;
		}
	}
	if (!n.ch1 || !n.ch2 || !n.cq1 || !n.cq2 || !n.cq3 || !n.a || !n.b || !e.mr)
		die("restored objects incomplete");
	printf("RESTORED %d objects\n", k);

	/* the event that was unread at dump time is queued again */
	ev_expect_event(n.ch2, n.cq2, "unread event of cq2");
	ev_expect_recv(&e, n.cq2, qpn_a, 1, "message a -> b");
	ev_expect_quiet(n.ch1, "after the unread event");
	/* cq1 was armed at dump time: b -> a fires its restored channel */
	ev_send(&e, n.b, 2);
	ev_expect_event(n.ch1, n.cq1, "b -> a on cq1");
	ev_expect_recv(&e, n.cq1, qpn_b, 2, "message b -> a");
	ev_expect_quiet(n.ch2, "b -> a");
	/* re-armed by the application, cq2 fires channel 2 again */
	if (ibv_req_notify_cq(n.cq2, 0))
		die("req_notify_cq");
	ev_send(&e, n.a, 3);
	ev_expect_event(n.ch2, n.cq2, "a -> b on cq2");
	ev_expect_recv(&e, n.cq2, qpn_a, 3, "message a -> b after restore");
	ev_expect_quiet(n.ch1, "a -> b");
	ev_drain_sends(n.cq3, 2);
	/* the kernel's counts of events read went on from the dumped ones:
	 * a destroy returns (libibverbs waits until its acked counts match) */
	if (ibv_destroy_qp(n.a) || ibv_destroy_qp(n.b) || ibv_destroy_cq(n.cq1) ||
	    ibv_destroy_cq(n.cq2) || ibv_destroy_cq(n.cq3))
		die("destroying the restored QPs and CQs");
	printf("OK event fds identified; events arrive on the restored channels of the right CQs\n");
	return 0;
}

/* --- the MR write log (MR_WRITES) ---------------------------------- */

#define WR_PAGES 130	/* two whole bitmap words and two pages */
#define PG 4096

/* one work request from qp, waited for on cq */
static void wr_post_wait(struct ibv_qp *qp, struct ibv_cq *cq,
			 struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	time_t t0 = now();
	int n;

	wr->send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad))
		die("%s: post_send: %s", what, strerror(errno));
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now() - t0 < 60)
		usleep(1000);
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		die("%s: no good completion (%d, %s)", what, n,
		    n == 1 ? ibv_wc_status_str(wc.status) : "-");
}

static void wr_remote(struct ibv_qp *qp, struct ibv_cq *cq,
		      enum ibv_wr_opcode op, struct ibv_mr *local, void *laddr,
		      uint32_t len, struct ibv_mr *remote, void *raddr,
		      const char *what)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len,
			       .lkey = local->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op };

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)raddr;
		wr.wr.atomic.rkey = remote->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)raddr;
		wr.wr.rdma.rkey = remote->rkey;
	}
	wr_post_wait(qp, cq, &wr, what);
}

/* the log of mr as a list "3 10 11", and its header */
static void wr_read(struct ibv_context *ctx, struct ibv_mr *mr,
		    unsigned int flags, struct ibv_migr_mr_writes *w,
		    char *list, size_t size)
{
	int err = ibv_migr_mr_writes(ctx, mr->handle, flags, w);
	size_t at = 0;

	if (err)
		die("ibv_migr_mr_writes: %s", strerror(-err));
	list[0] = 0;
	for (uint64_t p = 0; p < w->pages; p++)
		if (w->bits[p / 64] >> (p % 64) & 1)
			at += snprintf(list + at, size - at, "%s%llu",
				       at ? " " : "", (unsigned long long)p);
	free(w->bits);
}

static void wr_expect(struct ibv_context *ctx, struct ibv_mr *mr,
		      unsigned int flags, const char *want, const char *what)
{
	struct ibv_migr_mr_writes w;
	char got[1024];

	wr_read(ctx, mr, flags, &w, got, sizeof(got));
	if (strcmp(got, want))
		die("%s: pages logged \"%s\", expected \"%s\"", what, got, want);
	printf("OK %s: \"%s\"\n", what, got);
}

static int do_writes(void)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_context *ctx = open_ctx(), *other = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *opd = ibv_alloc_pd(other);
	char *x = map_buf(WR_PAGES * PG, NULL), *src = map_buf(4 * PG, NULL);
	char *y = map_buf(4 * PG, NULL);
	struct ibv_mr *mx, *ms, *my, *mz, *mo;
	/* sends and receives complete on CQs of their own: a receive must
	 * not be taken for the completion of the send waited for */
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a, *b;
	struct ibv_migr_mr_writes w, w2;
	union ibv_gid gid;
	uint64_t lost0;
	char list[1024];
	struct {
		struct rxe_migr_mr_writes h;
		uint64_t word;
	} one;
	struct rxe_migr_mr_writes_req req = { .version = RXE_MIGR_ABI_VERSION };
	struct migr_call c;
	int err;

	if (!pd || !opd || !cq || !rcq)
		die("setup: %s", strerror(errno));
	mx = ibv_reg_mr(pd, x, WR_PAGES * PG, acc);
	ms = ibv_reg_mr(pd, src, 4 * PG, acc);
	mo = ibv_reg_mr(opd, src, 4 * PG, acc);
	if (!mx || !ms || !mo)
		die("reg_mr: %s", strerror(errno));
	{
		struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = rcq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC };
		struct ibv_qp_attr at = { .qp_access_flags = acc };

		a = ibv_create_qp(pd, &ia);
		b = ibv_create_qp(pd, &ia);
		if (!a || !b || ibv_query_gid(ctx, 1, GID_INDEX, &gid))
			die("create_qp: %s", strerror(errno));
		ev_connect(a, b->qp_num, gid.raw);
		ev_connect(b, a->qp_num, gid.raw);
		if (ibv_modify_qp(a, &at, IBV_QP_ACCESS_FLAGS) ||
		    ibv_modify_qp(b, &at, IBV_QP_ACCESS_FLAGS))
			die("access flags: %s", strerror(errno));
	}
	memset(x, 1, WR_PAGES * PG);	/* the CPU's writes are not logged */
	memset(src, 7, 4 * PG);
	wr_expect(ctx, mx, 0, "", "registered, nothing written");

	/* b writes into a's MR: one page, three pages, across a boundary,
	 * the last page; an atomic; a SEND into a receive buffer in it; and
	 * a's RDMA READ places its response in it */
	wr_remote(b, cq, IBV_WR_RDMA_WRITE, ms, src, 100, mx, x + 3 * PG,
		  "write page 3");
	wr_remote(b, cq, IBV_WR_RDMA_WRITE, ms, src, 3 * PG, mx, x + 10 * PG,
		  "write pages 10-12");
	wr_remote(b, cq, IBV_WR_RDMA_WRITE, ms, src, 16, mx, x + 20 * PG - 8,
		  "write across 19/20");
	wr_remote(b, cq, IBV_WR_RDMA_WRITE, ms, src, 8, mx,
		  x + (WR_PAGES - 1) * PG, "write the last page");
	/* the old value lands in the source MR's last page */
	wr_remote(b, cq, IBV_WR_ATOMIC_FETCH_AND_ADD, ms, src + 3 * PG, 8, mx,
		  x + 40 * PG, "atomic on page 40");
	{
		struct ibv_sge sge = { .addr = (uintptr_t)x + 50 * PG,
				       .length = 64, .lkey = mx->lkey };
		struct ibv_recv_wr rw = { .sg_list = &sge, .num_sge = 1 }, *bad;
		struct ibv_sge ss = { .addr = (uintptr_t)src, .length = 64,
				      .lkey = ms->lkey };
		struct ibv_send_wr sw = { .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND };
		struct ibv_wc wc;
		time_t t0 = now();
		int n;

		if (ibv_post_recv(a, &rw, &bad))
			die("post_recv");
		wr_post_wait(b, cq, &sw, "send into page 50");
		while ((n = ibv_poll_cq(rcq, 1, &wc)) == 0 && now() - t0 < 60)
			usleep(1000);
		if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
			die("receive into page 50");
	}
	wr_remote(a, cq, IBV_WR_RDMA_READ, mx, x + 55 * PG, 32, ms, src,
		  "read response into page 55");
	if (x[3 * PG] != 7 || x[12 * PG + 5] != 7 || x[50 * PG] != 7 ||
	    x[55 * PG] != 7 || *(uint64_t *)(x + 40 * PG) != 0x0101010101010102ull)
		die("the device's writes did not land: %d %d %d %d %llx", x[3 * PG],
		    x[12 * PG + 5], x[50 * PG], x[55 * PG],
		    (unsigned long long)*(uint64_t *)(x + 40 * PG));
	x[5 * PG] = 2;
	{
		const char *all = "3 10 11 12 19 20 40 50 55 129";

		wr_expect(ctx, mx, 0, all, "read");
		wr_expect(ctx, mx, IBV_MIGR_WRITES_CLEAR, all, "read and cleared");
		wr_expect(ctx, mx, 0, "", "after the clear");
	}
	wr_expect(ctx, ms, 0, "3", "the source MR (the atomic's old value)");

	/* chunks: a bitmap word per call, the next at page 64 */
	wr_remote(b, cq, IBV_WR_RDMA_WRITE, ms, src, 8, mx, x + 70 * PG,
		  "write page 70");
	migr_call_init(&c, RXE_MIGR_METHOD_MR_WRITES);
	c.object = UVERBS_OBJECT_MR;
	req.first_page = 64;
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	migr_attr_out(&c, RXE_MIGR_ATTR_OUT, &one, sizeof(one));
	migr_attr_handle(&c, RXE_MIGR_ATTR_MR_HANDLE, mx->handle);
	memset(&one, 0, sizeof(one));
	err = migr_call_run(ctx->cmd_fd, &c);
	if (err || one.h.first_page != 64 || one.h.count != 64 ||
	    one.h.pages != WR_PAGES || one.h.addr != (uintptr_t)x ||
	    one.word != 1ull << 6)
		die("one word at page 64: err %d count %llu word %llx", err,
		    (unsigned long long)one.h.count,
		    (unsigned long long)one.word);
	req.first_page = 1;
	migr_call_init(&c, RXE_MIGR_METHOD_MR_WRITES);
	c.object = UVERBS_OBJECT_MR;
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	migr_attr_out(&c, RXE_MIGR_ATTR_OUT, &one, sizeof(one));
	migr_attr_handle(&c, RXE_MIGR_ATTR_MR_HANDLE, mx->handle);
	err = migr_call_run(ctx->cmd_fd, &c);
	if (err != -EINVAL)
		die("first_page 1 accepted (%d)", err);
	req.first_page = 0;
	req.flags = 2;
	err = migr_call_run(ctx->cmd_fd, &c);
	req.flags = 0;
	req.version = 5;
	if (err != -EINVAL || migr_call_run(ctx->cmd_fd, &c) != -EINVAL)
		die("unknown flags or an old version accepted");
	req.version = RXE_MIGR_ABI_VERSION;
	printf("OK chunks of one word, an unaligned first page refused\n");

	/* an MR deregistered with pages logged counts as lost; one without
	 * does not; the other context counts on its own */
	wr_read(ctx, mx, 0, &w, list, sizeof(list));
	lost0 = w.lost;
	my = ibv_reg_mr(pd, y, 4 * PG, acc);
	mz = ibv_reg_mr(pd, y, 4 * PG, acc);
	if (!my || !mz)
		die("reg_mr: %s", strerror(errno));
	wr_remote(b, cq, IBV_WR_RDMA_WRITE, ms, src, 8, my, y + PG,
		  "write into MR y");
	/* the log is the MR's the device wrote through, not the pages' */
	wr_expect(ctx, mz, 0, "", "another MR over the same pages");
	if (ibv_dereg_mr(mz))
		die("dereg mz");
	wr_read(ctx, mx, 0, &w, list, sizeof(list));
	if (w.lost != lost0)
		die("an MR deregistered with nothing logged counted as lost");
	wr_expect(ctx, my, 0, "1", "MR y");
	if (ibv_dereg_mr(my))
		die("dereg my");
	wr_read(ctx, mx, 0, &w, list, sizeof(list));
	if (w.lost != lost0 + 1)
		die("an MR deregistered with pages logged: lost %llu, was %llu",
		    (unsigned long long)w.lost, (unsigned long long)lost0);
	/* the count is the device's: a context that goes takes its MRs
	 * along, and their writes must not vanish without a trace */
	wr_read(other, mo, 0, &w2, list, sizeof(list));
	if (w2.context == w.context || w2.lost != w.lost)
		die("the other context: serial %llu (this %llu), lost %llu (%llu)",
		    (unsigned long long)w2.context,
		    (unsigned long long)w.context,
		    (unsigned long long)w2.lost, (unsigned long long)w.lost);
	printf("OK lost MRs counted per device (%llu), contexts told apart\n",
	       (unsigned long long)w.lost);
	printf("OK MR write log\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "host", 1, 0, 'h' }, { "port", 1, 0, 'p' }, { "qps", 1, 0, 'q' },
		{ "srq", 0, 0, 's' }, { "count", 1, 0, 'c' }, { "dump-after", 1, 0, 'a' },
		{ "dump", 1, 0, 'd' }, { "window", 1, 0, 'w' }, { "qpn", 1, 0, 'n' },
		{ "expect-fail", 0, 0, 'f' }, { 0 } };
	struct opts o = { .port = 18515, .qps = 1, .count = 1000, .dump_after = -1,
			  .window = 8 };
	int c;

	if (argc < 2)
		die("usage: rxe_migr_test recv|send|restore|take|hostile [options]");
	o.mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'h': o.host = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'q': o.qps = atoi(optarg); break;
		case 's': o.srq = 1; break;
		case 'c': o.count = atoi(optarg); break;
		case 'a': o.dump_after = atoi(optarg); break;
		case 'd': o.dump = optarg; break;
		case 'w': o.window = atoi(optarg); break;
		case 'n': o.qpn = strtoul(optarg, NULL, 0); break;
		case 'f': o.expect_fail = 1; break;
		default: die("bad option");
		}
	}
	if (o.qps < 0 || o.qps > MAX_QPS || o.window < 1 || o.window > RQ_DEPTH)
		die("bad --qps/--window");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(o.mode, "recv"))
		return do_recv(&o);
	if (!strcmp(o.mode, "send"))
		return do_send(&o);
	if (!strcmp(o.mode, "restore"))
		return do_restore(&o);
	if (!strcmp(o.mode, "take"))
		return do_take(&o);
	if (!strcmp(o.mode, "hostile"))
		return do_hostile(&o);
	if (!strcmp(o.mode, "evfds"))
		return do_evfds();
	if (!strcmp(o.mode, "writes"))
		return do_writes();
	die("unknown mode %s", o.mode);
}
