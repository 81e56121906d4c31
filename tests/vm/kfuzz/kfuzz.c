/*
 * kfuzz - mutation fuzzer for the uverbs methods of the patched rdma_rxe
 * (rxe-patches/), run inside a test bed guest as root.
 *
 *   kfuzz fuzz [--iters N] [--seed S] [--lib-every K] [--crash-dir DIR]
 *   kfuzz replay FILE...
 *   kfuzz perm --expect eperm|ok
 *   kfuzz mkcase NAME DIR
 *
 * fuzz: builds a world of real objects on rxe0 (context, completion
 *   channel, PD, a pinned and an unpinned MR, two CQs, an SRQ, an RC pair
 *   looped back to each other (one QP with its own RQ, one on the SRQ), a
 *   UD QP and an AH), runs traffic so that rings and transport state are
 *   not trivial, and takes a valid dump through verbs-ext
 *   (ibv_dump_context_flags).  Valid inputs of every method are built
 *   from that dump.  Each iteration picks one method, mutates its valid
 *   input (bit flips, interesting bytes, 8/16/32/64-bit fields set to
 *   edges, truncation, extension, splices from another input, a wrong
 *   handle or attribute) and issues it.  Every --lib-every iterations the
 *   whole dump is mutated at the record level too (record swaps, drops,
 *   duplicates, header and length fields to edges, plus the byte
 *   mutations) and restored with ibv_restore_object into a fresh context,
 *   the way a migration restores it.  The world is rebuilt every
 *   REBUILD_EVERY iterations and whenever a QP left the state the methods
 *   act on.  The seed is printed first; the same seed replays the same
 *   inputs (the kernel's answers may differ with timing).
 *
 *   After every operation the kernel's taint mask is read: a new W (warn)
 *   or D (die) bit stops the run and the operation is written to
 *   --crash-dir as a replayable file.  The operation in flight is also
 *   kept in a shared mapping of /dev/shm/kfuzz-current.kfz, so that an
 *   operation that kills the process is not lost.  A watchdog thread
 *   ends the run (exit 3) if no operation completes for WATCHDOG_S
 *   seconds, after saving the operation that hangs.
 *
 * replay: builds the world and issues each saved operation once
 *   (regression cases; the files NAME-K.kfz of one case share a world,
 *   each case gets a fresh one).  Exit 0 if the kernel stayed untainted.
 *
 * mkcase: writes the files of a hand-made regression case (see
 *   do_mkcase()): findings that took a sequence of operations, as edits
 *   of the world's valid inputs, which depend on the world's QPNs.
 *
 * perm: creates a world like fuzz does and calls every method, with its
 *   valid input and with a garbage one.  --expect eperm: every call must
 *   fail with EPERM (run it without CAP_CHECKPOINT_RESTORE and
 *   CAP_SYS_ADMIN in the initial user namespace), and afterwards the
 *   objects must be as before: the looped-back QPs still carry messages
 *   (no QP was stopped, no index or state was changed), a QP created
 *   after a refused SET_NEXT does not get the asked-for number, the
 *   uverbs file still accepts write() commands (ADOPT_CRED changed
 *   nothing) and a refused MMAP_AGAIN left nothing to mmap.  --expect ok:
 *   DUMP and IDENTIFY_FD succeed (the control: the caller's capabilities
 *   are what makes the difference).
 *
 * Output: "OK ..." lines, "FAIL ..." and a non-zero exit otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "ibv_migr.h"
#include "migr_ioctl.h"

#define GID_INDEX 1
#define BUF_LEN (64 * 1024)
#define DUMP_MAX (1 << 20)
#define MAX_IN 0xffff
#define REBUILD_EVERY 500
#define WATCHDOG_S 120
#define TAINT_DIE (1u << 7)
#define TAINT_WARN (1u << 9)
#define KFZ_MAGIC 0x315a464bu	/* "KFZ1" */
#define NO_HANDLE 0xffffffffu

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
	exit(1);
}

/* --- deterministic PRNG (xorshift64*) ------------------------------ */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* --- the world: real objects and their valid inputs ---------------- */

enum target {
	T_NONE, T_QP_A, T_QP_B, T_QP_UD, T_CQ, T_CQ_UD, T_SRQ, T_MR,
	T_MR_UNPINNED, T_NUM
};

struct world {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_mr *mr, *mr_unpinned;
	struct ibv_cq *cq, *cq_ud;
	struct ibv_srq *srq;
	struct ibv_qp *qa, *qb, *qu;
	struct ibv_ah *ah;
	char *buf, *buf2;
	union ibv_gid gid;
	uint8_t *dump;
	int dump_len, dump_count;
};

static struct world w;

static uint32_t target_handle(enum target t)
{
	switch (t) {
	case T_QP_A: return w.qa->handle;
	case T_QP_B: return w.qb->handle;
	case T_QP_UD: return w.qu->handle;
	case T_CQ: return w.cq->handle;
	case T_CQ_UD: return w.cq_ud->handle;
	case T_SRQ: return w.srq->handle;
	case T_MR: return w.mr->handle;
	case T_MR_UNPINNED: return w.mr_unpinned->handle;
	default: return NO_HANDLE;
	}
}

static struct ibv_context *open_ctx(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || !n)
		die("no rdma device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(p, 0x33, len);
	return p;
}

static int rc_connect(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = GID_INDEX;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 10;		/* about 4 ms */
	a.retry_cnt = 2;
	a.rnr_retry = 2;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = 0x11111111 };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int post_recv(struct ibv_qp *qp, struct ibv_srq *srq, uint32_t off,
		     uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)w.buf + off, .length = len,
			       .lkey = w.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t off,
		     uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)w.buf + off, .length = len,
			       .lkey = w.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr & ~7ull;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (op == IBV_WR_SEND_WITH_IMM)
		wr.imm_data = 0x12345678;
	if (qp == w.qu) {
		wr.wr.ud.ah = w.ah;
		wr.wr.ud.remote_qpn = w.qu->qp_num;
		wr.wr.ud.remote_qkey = 0x11111111;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static int poll_n(struct ibv_cq *cq, int n, int ms)
{
	struct ibv_wc wc[16];
	int got = 0;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		int k = ibv_poll_cq(cq, n - got < 16 ? n - got : 16, wc);

		if (k < 0)
			return -1;
		got += k;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			break;
		if (!k)
			usleep(1000);
	}
	return got;
}

/* ib_uverbs counts the events it handed out; libibverbs waits at destroy
 * until its own count matches.  A fuzzed RESTORE_QUEUE may have set the
 * kernel's counts to anything.
 *
 * Destroyable again: every CQ/SRQ/QP record of a fresh dump of ctx gets
 * its event counts set back to what the library has acknowledged. */
struct owned {
	int type;
	void *obj;
	uint32_t handle;
};

static void reset_counts(struct ibv_context *ctx, struct owned *objs, int n)
{
	static uint8_t d[DUMP_MAX];
	const struct rxe_migr_rec_hdr *rec = NULL;
	int count, len, err = 0;

	len = ibv_dump_context_flags(ctx, &count, d, sizeof(d),
				     IBV_MIGR_DUMP_NO_STOP);
	if (len < 0 || len > (int)sizeof(d))
		return;
	while ((rec = ibv_migr_next_record(d, len, rec, &err))) {
		struct rxe_migr_restore_queue rq;
		const struct rxe_migr_queue *q = NULL;
		uint32_t events = 0, comp = 0, which = 0;
		uint16_t attr = 0;
		struct migr_call c;
		int i;

		for (i = 0; i < n; i++)
			if (objs[i].type == (int)rec->type &&
			    objs[i].handle == rec->handle)
				break;
		if (i == n)
			continue;
		switch (rec->type) {
		case RXE_MIGR_OBJ_CQ: {
			struct ibv_cq *cq = objs[i].obj;

			q = &((const struct rxe_migr_cq *)(rec + 1))->queue;
			which = RXE_MIGR_Q_CQ;
			attr = RXE_MIGR_ATTR_CQ_HANDLE;
			events = cq->async_events_completed;
			comp = cq->comp_events_completed;
			break;
		}
		case RXE_MIGR_OBJ_SRQ:
			q = &((const struct rxe_migr_srq *)(rec + 1))->queue;
			which = RXE_MIGR_Q_SRQ;
			attr = RXE_MIGR_ATTR_SRQ_HANDLE;
			events = ((struct ibv_srq *)objs[i].obj)->events_completed;
			break;
		case RXE_MIGR_OBJ_QP:
			q = &((const struct rxe_migr_qp *)(rec + 1))->sq;
			which = RXE_MIGR_Q_SQ;
			attr = RXE_MIGR_ATTR_QP_HANDLE;
			events = ((struct ibv_qp *)objs[i].obj)->events_completed;
			break;
		default:
			continue;
		}
		memset(&rq, 0, sizeof(rq));
		rq.version = RXE_MIGR_ABI_VERSION;
		rq.which = which;
		rq.flags = RXE_MIGR_RESTORE_EVENT_COUNTS;
		rq.offset = 0;
		rq.queue = *q;
		rq.events_reported = events;
		rq.comp_events_reported = comp;
		migr_call_init(&c, RXE_MIGR_METHOD_RESTORE_QUEUE);
		migr_attr_in(&c, RXE_MIGR_ATTR_IN, &rq, sizeof(rq));
		migr_attr_handle(&c, attr, rec->handle);
		(void)migr_call_run(ctx->cmd_fd, &c);
	}
}

static void world_destroy(void)
{
	struct owned objs[] = {
		{ RXE_MIGR_OBJ_CQ, w.cq, w.cq ? w.cq->handle : 0 },
		{ RXE_MIGR_OBJ_CQ, w.cq_ud, w.cq_ud ? w.cq_ud->handle : 0 },
		{ RXE_MIGR_OBJ_SRQ, w.srq, w.srq ? w.srq->handle : 0 },
		{ RXE_MIGR_OBJ_QP, w.qa, w.qa ? w.qa->handle : 0 },
		{ RXE_MIGR_OBJ_QP, w.qb, w.qb ? w.qb->handle : 0 },
		{ RXE_MIGR_OBJ_QP, w.qu, w.qu ? w.qu->handle : 0 },
	};

	if (!w.ctx)
		return;
	/* adopt our own credentials again (a fuzzed ADOPT_CRED may have
	 * given the file someone else's): destroy uses write() commands */
	(void)ibv_migr_adopt_cred(w.ctx, getpid(), 0);
	reset_counts(w.ctx, objs, 6);
	if (w.qa && ibv_destroy_qp(w.qa))
		die("destroy qp a: %s", strerror(errno));
	if (w.qb && ibv_destroy_qp(w.qb))
		die("destroy qp b: %s", strerror(errno));
	if (w.qu && ibv_destroy_qp(w.qu))
		die("destroy qp ud: %s", strerror(errno));
	if (w.ah && ibv_destroy_ah(w.ah))
		die("destroy ah: %s", strerror(errno));
	if (w.srq && ibv_destroy_srq(w.srq))
		die("destroy srq: %s", strerror(errno));
	if (w.cq && ibv_destroy_cq(w.cq))
		die("destroy cq: %s", strerror(errno));
	if (w.cq_ud && ibv_destroy_cq(w.cq_ud))
		die("destroy cq ud: %s", strerror(errno));
	if (w.mr && ibv_dereg_mr(w.mr))
		die("dereg mr: %s", strerror(errno));
	if (w.mr_unpinned && ibv_dereg_mr(w.mr_unpinned))
		die("dereg unpinned mr: %s", strerror(errno));
	if (w.pd && ibv_dealloc_pd(w.pd))
		die("dealloc pd: %s", strerror(errno));
	if (w.ch && ibv_destroy_comp_channel(w.ch))
		die("destroy channel: %s", strerror(errno));
	if (ibv_close_device(w.ctx))
		die("close device: %s", strerror(errno));
	munmap(w.buf, BUF_LEN);
	munmap(w.buf2, BUF_LEN);
	free(w.dump);
	memset(&w, 0, sizeof(w));
}

/* objects, traffic, a valid dump; privileged: also the unpinned MR */
static void world_build(int privileged)
{
	struct ibv_qp_init_attr ia;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 32, .max_sge = 2 } };
	struct ibv_ah_attr aa;
	int i;

	memset(&w, 0, sizeof(w));
	w.ctx = open_ctx();
	w.ch = ibv_create_comp_channel(w.ctx);
	w.pd = ibv_alloc_pd(w.ctx);
	w.buf = map_anon(BUF_LEN);
	w.buf2 = map_anon(BUF_LEN);
	if (!w.ch || !w.pd)
		die("channel/pd: %s", strerror(errno));
	fcntl(w.ch->fd, F_SETFL, O_NONBLOCK);
	w.mr = ibv_reg_mr(w.pd, w.buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC);
	if (!w.mr)
		die("reg_mr: %s", strerror(errno));
	if (privileged) {
		if (ibv_migr_set_next(w.ctx, IBV_MIGR_OBJ_MR, 0,
				      RXE_MIGR_NEXT_MR_UNPINNED))
			die("set_next unpinned");
		w.mr_unpinned = ibv_reg_mr(w.pd, w.buf2, BUF_LEN,
					   IBV_ACCESS_LOCAL_WRITE);
		if (!w.mr_unpinned)
			die("reg unpinned mr: %s", strerror(errno));
	}
	w.cq = ibv_create_cq(w.ctx, 64, NULL, w.ch, 0);
	w.cq_ud = ibv_create_cq(w.ctx, 16, NULL, NULL, 0);
	w.srq = ibv_create_srq(w.pd, &sa);
	if (!w.cq || !w.cq_ud || !w.srq)
		die("cq/srq: %s", strerror(errno));

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = w.cq;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 64;
	ia.qp_type = IBV_QPT_RC;
	w.qa = ibv_create_qp(w.pd, &ia);
	ia.srq = w.srq;
	ia.cap.max_recv_wr = ia.cap.max_recv_sge = 0;
	w.qb = ibv_create_qp(w.pd, &ia);
	ia.srq = NULL;
	ia.send_cq = ia.recv_cq = w.cq_ud;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_UD;
	w.qu = ibv_create_qp(w.pd, &ia);
	if (!w.qa || !w.qb || !w.qu)
		die("create_qp: %s", strerror(errno));
	if (ibv_query_gid(w.ctx, 1, GID_INDEX, &w.gid))
		die("query_gid");
	if (rc_connect(w.qa, w.qb->qp_num, &w.gid) ||
	    rc_connect(w.qb, w.qa->qp_num, &w.gid) || ud_ready(w.qu))
		die("connect: %s", strerror(errno));
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = w.gid;
	aa.grh.sgid_index = GID_INDEX;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	w.ah = ibv_create_ah(w.pd, &aa);
	if (!w.ah)
		die("create_ah: %s", strerror(errno));

	/* traffic: rings with used and free slots, PSNs moved on, unread
	 * completions left in the CQs, an armed CQ */
	for (i = 0; i < 8; i++)
		if (post_recv(w.qa, NULL, 4096 + i * 256, 256) ||
		    post_recv(NULL, w.srq, 8192 + i * 256, 256))
			die("post_recv: %s", strerror(errno));
	for (i = 0; i < 4; i++)
		if (post_recv(w.qu, NULL, 12288 + i * 256, 256))
			die("post_recv ud: %s", strerror(errno));
	for (i = 0; i < 3; i++)
		if (post_send(w.qa, IBV_WR_SEND, i * 64, 64, 0, 0) ||
		    post_send(w.qb, IBV_WR_SEND, 1024 + i * 64, 64, 0, 0))
			die("post_send: %s", strerror(errno));
	if (post_send(w.qa, IBV_WR_RDMA_WRITE, 0, 512,
		      (uintptr_t)w.buf + 16384, w.mr->rkey) ||
	    post_send(w.qb, IBV_WR_RDMA_READ, 20480, 128,
		      (uintptr_t)w.buf + 24576, w.mr->rkey) ||
	    post_send(w.qu, IBV_WR_SEND, 0, 32, 0, 0))
		die("post_send: %s", strerror(errno));
	/* 3 + 3 sends and their receives, a write and a read: 14 on cq */
	poll_n(w.cq, 5, 3000);
	poll_n(w.cq_ud, 1, 3000);
	if (ibv_req_notify_cq(w.cq, 0))
		die("req_notify_cq");

	w.dump = malloc(DUMP_MAX);
	if (!w.dump)
		die("malloc");
	if (privileged) {
		w.dump_len = ibv_dump_context_flags(w.ctx, &w.dump_count,
						    w.dump, DUMP_MAX, 0);
		if (w.dump_len < 0 || w.dump_len > DUMP_MAX)
			die("dump: %d", w.dump_len);
	}
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

/* --- operations: one method call with one (mutated) input ---------- */

enum op {
	OP_DUMP, OP_SET_NEXT, OP_RESTORE_QUEUE, OP_RESTORE_QP, OP_QP_CTL,
	OP_IDENTIFY_FD, OP_QUEUE_MMAP, OP_ADOPT_CRED, OP_MR_PIN, OP_RAW,
	OP_LIB_RESTORE, OP_TRAFFIC, OP_MR_WRITES, OP_NUM
};

static const char *const op_name[OP_NUM] = {
	"dump", "set_next", "restore_queue", "restore_qp", "qp_ctl",
	"identify_fd", "queue_mmap", "adopt_cred", "mr_pin", "raw",
	"lib_restore", "traffic", "mr_writes",
};

/* a replayable operation: header then in_len + aux_len bytes */
struct kfz_op {
	uint32_t magic;
	uint32_t op;
	uint32_t method;	/* OP_RAW: the method id sent */
	uint32_t object;	/* OP_RAW: the object id sent */
	uint32_t attr;		/* handle attribute id, 0: none */
	uint32_t target;	/* enum target of the handle */
	uint32_t handle;	/* NO_HANDLE: the target's handle */
	uint32_t out_len;	/* output buffer size (DUMP, ...) */
	uint32_t in_len;
	uint32_t aux_len;	/* SET_NEXT: struct create_params;
				 * ADOPT_CRED / IDENTIFY_FD: fd selector */
	uint32_t seq;		/* iteration */
	uint32_t edit;		/* KFZ_EDIT: data holds {u32 offset, u32 value}
				 * pairs applied to the world's valid input of
				 * op and target, which depends on the world
				 * (QPNs, states): for hand-made cases */
};

#define KFZ_EDIT 1
#define KFZ_EDIT_EACH_SLOT (1u << 31)	/* offset inside every ring element */
#define KFZ_EDIT_ADD (1u << 30)		/* add the value, do not set it */

struct create_params {
	uint64_t addr_off;	/* offset from w.buf2 (may be far off) */
	uint64_t length;
	uint32_t access;
	uint32_t count;		/* QP/SRQ/CQ size */
};

struct opbuf {
	struct kfz_op h;
	uint8_t data[DUMP_MAX];	/* a method's input, or a whole dump */
};

static struct opbuf *cur;	/* in flight; a shared file mapping if any */
static uint64_t stats[OP_NUM][3];	/* calls, accepted, refused */
static uint64_t errnos[OP_NUM][140];

/* the fd an IDENTIFY_FD / ADOPT_CRED input names: a selector in aux
 * resolves to one of this process's fds at run time, so a saved input
 * means the same thing when replayed */
static int resolve_fd(int32_t v)
{
	switch (v) {
	case -1000: return w.ctx->cmd_fd;
	case -1001: return w.ctx->async_fd;
	case -1002: return w.ch->fd;
	default: return v;
	}
}

static int op_call(struct opbuf *o)
{
	struct kfz_op *h = &o->h;
	uint8_t out[MAX_IN];
	uint32_t total;
	struct migr_call c;
	uint8_t *in = o->data;
	uint32_t handle;
	int err;

	migr_call_init(&c, (uint16_t)h->method);
	c.object = (uint16_t)h->object;
	handle = h->handle != NO_HANDLE ? h->handle : target_handle(h->target);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, in, h->in_len);
	switch (h->op) {
	case OP_DUMP:
		migr_attr_out(&c, RXE_MIGR_ATTR_OUT, out,
			      h->out_len > sizeof(out) ? sizeof(out) : h->out_len);
		migr_attr_out(&c, RXE_MIGR_ATTR_OUT_LEN, &total, sizeof(total));
		break;
	case OP_IDENTIFY_FD:
	case OP_QUEUE_MMAP:
	case OP_MR_WRITES:
	case OP_RAW:
		if (h->out_len)
			migr_attr_out(&c, RXE_MIGR_ATTR_OUT, out,
				      h->out_len > sizeof(out) ?
				      sizeof(out) : h->out_len);
		break;
	default:
		break;
	}
	if (h->attr)
		migr_attr_handle(&c, (uint16_t)h->attr, handle);
	err = migr_call_run(w.ctx->cmd_fd, &c);
	return err;
}

static int create_after_set_next(const struct rxe_migr_set_next *sn,
				  const struct create_params *p)
{
	int err = 0;

	switch (sn->type) {
	case RXE_MIGR_OBJ_MR: {
		uint8_t *addr = (uint8_t *)w.buf2 + p->addr_off;
		struct ibv_mr *mr = ibv_reg_mr(w.pd, addr, p->length,
					       (int)p->access);

		if (!mr)
			return -errno;
		if (sn->key & RXE_MIGR_NEXT_MR_UNPINNED)
			err = ibv_migr_mr_pin(w.ctx, mr->handle);
		ibv_dereg_mr(mr);
		return err;
	}
	case RXE_MIGR_OBJ_QP: {
		struct ibv_qp_init_attr ia = { .send_cq = w.cq_ud,
			.recv_cq = w.cq_ud, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = p->count & 0xff,
				 .max_recv_wr = (p->count >> 8) & 0xff,
				 .max_send_sge = 1, .max_recv_sge = 1 } };
		struct ibv_qp *qp = ibv_create_qp(w.pd, &ia);

		if (!qp)
			return -errno;
		ibv_destroy_qp(qp);
		return 0;
	}
	case RXE_MIGR_OBJ_SRQ: {
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = p->count & 0xff, .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(w.pd, &sa);

		if (!srq)
			return -errno;
		ibv_destroy_srq(srq);
		return 0;
	}
	case RXE_MIGR_OBJ_AH: {
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
			.grh = { .dgid = w.gid, .sgid_index = GID_INDEX,
				 .hop_limit = 1 } };
		struct ibv_ah *ah = ibv_create_ah(w.pd, &aa);

		if (!ah)
			return -errno;
		ibv_destroy_ah(ah);
		return 0;
	}
	default:
		return 0;
	}
}

static void clear_next(void)
{
	static const int types[] = { IBV_MIGR_OBJ_QP, IBV_MIGR_OBJ_SRQ,
				     IBV_MIGR_OBJ_MR, IBV_MIGR_OBJ_AH };

	for (unsigned int i = 0; i < 4; i++)
		(void)ibv_migr_set_next(w.ctx, types[i], 0, 0);
}

/* --- restore of a whole (mutated) dump through the library --------- */

#define LIB_MAX_OBJS 256

/* memory for restored MRs: the world's buffers are gone by then */
static uint8_t *lib_buf;

static int lib_restore(const uint8_t *dump, uint32_t len, uint32_t flags)
{
	struct owned objs[LIB_MAX_OBJS];
	const struct rxe_migr_rec_hdr *rec = NULL;
	struct ibv_context *ctx;
	int n = 0, err = 0, first_err = 0, i;

	if (ibv_migr_check_dump(dump, len))
		return -EINVAL;	/* the library refuses it as a whole */
	ctx = open_ctx();
	while ((rec = ibv_migr_next_record(dump, len, rec, &err)) &&
	       n < LIB_MAX_OBJS) {
		struct ibv_restore_args a = { .record = rec,
					      .flags = flags };
		void *obj = NULL;

		/* the objects it depends on, by handle */
		for (i = 0; i < n; i++) {
			uint32_t hd = objs[i].handle;
			const uint32_t *b = (const uint32_t *)(rec + 1);

			switch (objs[i].type) {
			case RXE_MIGR_OBJ_PD:
				if ((rec->type == RXE_MIGR_OBJ_QP && b[2] == hd) ||
				    (rec->type != RXE_MIGR_OBJ_QP && b[0] == hd))
					a.pd = objs[i].obj;
				break;
			case RXE_MIGR_OBJ_CQ:
				if (rec->type == RXE_MIGR_OBJ_QP && b[3] == hd)
					a.send_cq = objs[i].obj;
				if (rec->type == RXE_MIGR_OBJ_QP && b[4] == hd)
					a.recv_cq = objs[i].obj;
				break;
			case RXE_MIGR_OBJ_SRQ:
				if (rec->type == RXE_MIGR_OBJ_QP && b[5] == hd)
					a.srq = objs[i].obj;
				break;
			case RXE_MIGR_OBJ_COMP_CHANNEL:
				if (rec->type == RXE_MIGR_OBJ_CQ && b[1] == hd)
					a.channel = objs[i].obj;
				break;
			}
		}
		if (rec->type == RXE_MIGR_OBJ_MR)
			a.addr = lib_buf;
		err = ibv_restore_object(ctx, &obj, (int)rec->type,
					 IBV_RESTORE_CREATE, &a, sizeof(a));
		if (!err && obj) {
			objs[n].type = (int)rec->type;
			objs[n].obj = obj;
			objs[n].handle = rec->handle;
			n++;
			if (rec->type == RXE_MIGR_OBJ_MR &&
			    flags & IBV_MIGR_RESTORE_UNPINNED)
				(void)ibv_migr_mr_pin(ctx,
					((struct ibv_mr *)obj)->handle);
			err = ibv_restore_object(ctx, &obj, (int)rec->type,
						 IBV_RESTORE_REFILL, &a,
						 sizeof(a));
		}
		if (err && !first_err)
			first_err = err;
	}
	(void)ibv_restore_object(ctx, NULL, 0, IBV_RESTORE_FINISH, NULL, 0);
	reset_counts(ctx, objs, n);
	for (i = n - 1; i >= 0; i--)
		ibv_migr_destroy_object(objs[i].obj, objs[i].type);
	if (ibv_close_device(ctx))
		die("close restored context: %s", strerror(errno));
	return first_err;
}

/* --- mutation ------------------------------------------------------ */

static const uint32_t edges32[] = {
	0, 1, 2, 7, 8, 0x7f, 0x80, 0xff, 0x100, 0xfff, 0x1000, 0xffff,
	0x10000, 0xffffff, 0x7fffffff, 0x80000000u, 0xfffffffeu, 0xffffffffu,
	RXE_MIGR_ABI_VERSION, RXE_MIGR_MAGIC, 0x20001, 0x40000, 16, 17,
};

static const uint64_t edges64[] = {
	0, 1, 0xfff, 0x1000, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0xffffffffffffffffull, 1ull << 32, 1ull << 40, 1ull << 46, 1ull << 47,
	(1ull << 47) - 4096,
};

/* one mutation of buf (len bytes, at most cap): returns the new length */
static uint32_t mutate_once(uint8_t *buf, uint32_t len, uint32_t cap,
			    const uint8_t *other, uint32_t other_len)
{
	uint32_t pos, n;

	if (!len) {
		n = below(64) + 1;
		for (uint32_t i = 0; i < n && i < cap; i++)
			buf[i] = (uint8_t)rnd();
		return n < cap ? n : cap;
	}
	switch (below(11)) {
	case 0: case 1:		/* flip bits */
		n = below(4) + 1;
		while (n--) {
			pos = below(len * 8);
			buf[pos / 8] ^= (uint8_t)(1u << (pos % 8));
		}
		return len;
	case 2:			/* interesting byte */
		buf[below(len)] = (uint8_t[]){ 0, 1, 0x7f, 0x80, 0xff,
					       0x20, 0x40 }[below(7)];
		return len;
	case 3: case 4:		/* aligned 32-bit field to an edge */
		if (len < 4)
			return len;
		pos = below(len / 4) * 4;
		{
			uint32_t v = edges32[below(sizeof(edges32) / 4)];

			if (below(4) == 0) {	/* off by a little */
				memcpy(&v, buf + pos, 4);
				v += (uint32_t)below(5) - 2;
			}
			memcpy(buf + pos, &v, 4);
		}
		return len;
	case 5:			/* aligned 64-bit field to an edge */
		if (len < 8)
			return len;
		pos = below(len / 8) * 8;
		memcpy(buf + pos, &edges64[below(sizeof(edges64) / 8)], 8);
		return len;
	case 6:			/* 16-bit field */
		if (len < 2)
			return len;
		pos = below(len / 2) * 2;
		{
			uint16_t v = (uint16_t[]){ 0, 1, 0x7fff, 0x8000,
						   0xffff, 0x100 }[below(6)];

			memcpy(buf + pos, &v, 2);
		}
		return len;
	case 7:			/* truncate */
		return below(len);
	case 8:			/* extend with junk */
		n = below(64) + 1;
		if (len + n > cap)
			n = cap - len;
		for (uint32_t i = 0; i < n; i++)
			buf[len + i] = (uint8_t)rnd();
		return len + n;
	case 9:			/* splice from another valid input */
		if (!other || !other_len)
			return len;
		pos = below(len);
		n = below(other_len);
		{
			uint32_t k = below(64) + 1;

			if (pos + k > len)
				k = len - pos;
			if (n + k > other_len)
				k = other_len - n;
			memmove(buf + pos, other + n, k);
		}
		return len;
	default:		/* random bytes over a run */
		pos = below(len);
		n = below(16) + 1;
		for (uint32_t i = 0; i < n && pos + i < len; i++)
			buf[pos + i] = (uint8_t)rnd();
		return len;
	}
}

/* 1..8 stacked mutations, 1 in 16 inputs unchanged */
static uint32_t mutate(uint8_t *buf, uint32_t len, uint32_t cap,
		       const uint8_t *other, uint32_t other_len)
{
	uint32_t n;

	if (below(16) == 0)
		return len;
	n = 1u << below(4);
	n = below(n) + 1;
	while (n--)
		len = mutate_once(buf, len, cap, other, other_len);
	return len;
}

/* record-level mutation of a whole dump (then byte mutations) */
static uint32_t mutate_dump(uint8_t *d, uint32_t len, uint32_t cap)
{
	uint32_t offs[512], lens[512], n = 0, off = sizeof(struct rxe_migr_dump_hdr);
	struct rxe_migr_dump_hdr *h = (void *)d;
	static uint8_t tmp[DUMP_MAX];

	while (off + sizeof(struct rxe_migr_rec_hdr) <= len && n < 512) {
		const struct rxe_migr_rec_hdr *r = (const void *)(d + off);

		if (r->len < sizeof(*r) || off + r->len > len)
			break;
		offs[n] = off;
		lens[n] = r->len;
		n++;
		off += r->len;
	}
	switch (below(8)) {
	case 0:			/* swap two records */
		if (n >= 2) {
			uint32_t a = below(n), b = below(n), o = sizeof(*h);

			for (uint32_t i = 0; i < n; i++) {
				uint32_t k = i == a ? b : i == b ? a : i;

				memcpy(tmp + o, d + offs[k], lens[k]);
				o += lens[k];
			}
			memcpy(d + sizeof(*h), tmp + sizeof(*h), o - sizeof(*h));
		}
		break;
	case 1:			/* drop a record */
		if (n >= 1) {
			uint32_t a = below(n);

			memmove(d + offs[a], d + offs[a] + lens[a],
				len - offs[a] - lens[a]);
			len -= lens[a];
			if (below(2)) {
				h->count--;
				h->total_len = len;
			}
		}
		break;
	case 2:			/* duplicate a record */
		if (n >= 1) {
			uint32_t a = below(n);

			if (len + lens[a] <= cap) {
				memmove(d + offs[a] + lens[a], d + offs[a],
					len - offs[a]);
				len += lens[a];
				if (below(2)) {
					h->count++;
					h->total_len = len;
				}
			}
		}
		break;
	case 3:			/* header fields to edges */
		((uint32_t *)d)[below(4)] = edges32[below(sizeof(edges32) / 4)];
		break;
	case 4:			/* a record's len or type to an edge */
		if (n >= 1) {
			uint32_t *f = (uint32_t *)(d + offs[below(n)]);

			f[below(2)] = below(2) ? edges32[below(sizeof(edges32) / 4)] :
				      (uint32_t)below(10);
		}
		break;
	default:		/* bytes inside one record */
		if (n >= 1) {
			uint32_t a = below(n);
			uint32_t l = mutate(d + offs[a], lens[a], lens[a], NULL, 0);

			(void)l;	/* a record keeps its size here */
		}
		break;
	}
	if (below(4) == 0)
		len = mutate(d, len, cap, NULL, 0);
	return len;
}

/* --- building one operation ---------------------------------------- */

/* Every input starts with the ABI version, and a wrong one is refused
 * before anything else is looked at: keep it right in 3 of 4 mutated
 * inputs, so that the mutations reach the fields behind it. */
static void keep_version(uint8_t *in, uint32_t len)
{
	uint32_t v = RXE_MIGR_ABI_VERSION;

	if (len >= 4 && below(4))
		memcpy(in, &v, 4);
}

static const struct rxe_migr_rec_hdr *find_rec(uint32_t type, uint32_t handle)
{
	const struct rxe_migr_rec_hdr *rec = NULL;
	int err;

	while ((rec = ibv_migr_next_record(w.dump, w.dump_len, rec, &err)))
		if (rec->type == type && (handle == NO_HANDLE ||
					  rec->handle == handle))
			return rec;
	return NULL;
}

/* the valid restore_queue input of target t (ring bytes up to a chunk) */
static uint32_t valid_restore_queue(uint8_t *buf, enum target t, uint32_t *attr,
				    uint32_t which)
{
	struct rxe_migr_restore_queue *rq = (void *)buf;
	const struct rxe_migr_rec_hdr *rec;
	const struct rxe_migr_queue *q;
	const uint8_t *data;
	uint32_t n;

	memset(rq, 0, sizeof(*rq));
	rq->version = RXE_MIGR_ABI_VERSION;
	switch (t) {
	case T_CQ:
	case T_CQ_UD: {
		const struct rxe_migr_cq *c;

		rec = find_rec(RXE_MIGR_OBJ_CQ, target_handle(t));
		c = (const void *)(rec + 1);
		q = &c->queue;
		data = (const uint8_t *)(c + 1);
		rq->which = RXE_MIGR_Q_CQ;
		*attr = RXE_MIGR_ATTR_CQ_HANDLE;
		rq->comp_events_reported = c->comp_events_reported;
		if (t == T_CQ && below(4) == 0)
			rq->flags |= RXE_MIGR_RESTORE_CQ_EVENT;
		break;
	}
	case T_SRQ: {
		const struct rxe_migr_srq *s;

		rec = find_rec(RXE_MIGR_OBJ_SRQ, target_handle(t));
		s = (const void *)(rec + 1);
		q = &s->queue;
		data = (const uint8_t *)(s + 1);
		rq->which = RXE_MIGR_Q_SRQ;
		*attr = RXE_MIGR_ATTR_SRQ_HANDLE;
		break;
	}
	default: {
		const struct rxe_migr_qp *p;
		int rq_side;

		if (t != T_QP_A && t != T_QP_B && t != T_QP_UD)
			t = T_QP_A;
		rec = find_rec(RXE_MIGR_OBJ_QP, target_handle(t));
		p = (const void *)(rec + 1);
		rq_side = which ? which == RXE_MIGR_Q_RQ : t != T_QP_B && below(2);
		q = rq_side ? &p->rq : &p->sq;
		data = (const uint8_t *)(p + 1) + (rq_side ? p->sq.data_len : 0);
		rq->which = rq_side ? RXE_MIGR_Q_RQ : RXE_MIGR_Q_SQ;
		*attr = RXE_MIGR_ATTR_QP_HANDLE;
		break;
	}
	}
	rq->queue = *q;
	rq->user_handle = rec->user_handle;
	rq->events_reported = rec->events_reported;
	rq->flags |= RXE_MIGR_RESTORE_SET_INDICES;
	if (below(2))
		rq->flags |= RXE_MIGR_RESTORE_USER_HANDLE;
	if (below(2))
		rq->flags |= RXE_MIGR_RESTORE_EVENT_COUNTS;
	n = q->data_len;
	if (n > MAX_IN - sizeof(*rq)) {
		n = MAX_IN - sizeof(*rq);
		rq->flags &= ~(RXE_MIGR_RESTORE_SET_INDICES |
			       RXE_MIGR_RESTORE_CQ_EVENT);
	}
	memcpy(rq + 1, data, n);
	return sizeof(*rq) + n;
}

/* The input of RESTORE_QP for QP record rec: the record's body, then its
 * responder resources; with fake, one to three READ or atomic resources
 * made up around the responder's PSN in place of the record's (a world
 * QP seldom has any: mutations of these exercise the resources' checks).
 * Returns the input's length. */
static uint32_t valid_restore_qp(struct rxe_migr_restore_qp *rq,
				 const struct rxe_migr_rec_hdr *rec, int fake)
{
	struct rxe_migr_resp_res *res = (void *)(rq + 1);
	const struct rxe_migr_qp *q = (const void *)(rec + 1);
	uint32_t slots = q->max_dest_rd_atomic ? q->max_dest_rd_atomic : 1;

	memset(rq, 0, sizeof(*rq));
	rq->version = RXE_MIGR_ABI_VERSION;
	rq->qp = *q;
	memcpy(res, ibv_migr_qp_resp_res(q),
	       q->resp_res_count * sizeof(*res));
	if (fake) {
		uint32_t n = 1 + below(3);

		rq->qp.resp_res_count = n;
		rq->qp.resp_res_cur = -1;
		memset(res, 0, n * sizeof(*res));
		for (uint32_t i = 0; i < n; i++) {
			res[i].slot = (i + below(slots)) % slots;
			res[i].type = below(2) ? RXE_MIGR_RES_READ :
						 RXE_MIGR_RES_ATOMIC;
			res[i].state = below(3);
			res[i].first_psn = (q->resp_psn - 4 + i) & 0xffffff;
			res[i].last_psn = res[i].first_psn + below(4);
			res[i].cur_psn = res[i].first_psn;
			res[i].rkey = w.mr ? w.mr->rkey : 0;
			res[i].va_org = res[i].va = (uintptr_t)w.buf;
			res[i].length = res[i].resid = 64 << below(6);
		}
		if (res[0].type == RXE_MIGR_RES_READ && below(2))
			rq->qp.resp_res_cur = (int32_t)res[0].slot;
	}
	return sizeof(*rq) + rq->qp.resp_res_count * sizeof(*res);
}

static enum target qp_target(void)
{
	return (enum target[]){ T_QP_A, T_QP_B, T_QP_UD }[below(3)];
}

/* Builds the next operation into o: a method, a valid input from the
 * world's dump, then mutations. */
/* an operation on a method of UVERBS_OBJECT_MR, named by its handle */
static void mr_method(struct kfz_op *h, enum op op, uint32_t method,
		      enum target t)
{
	h->op = op;
	h->method = method;
	h->object = UVERBS_OBJECT_MR;
	h->attr = RXE_MIGR_ATTR_MR_HANDLE;
	h->target = t;
}

static void make_op(struct opbuf *o, uint32_t seq)
{
	struct kfz_op *h = &o->h;
	uint8_t other[MAX_IN];
	uint32_t other_len = 0, r = below(100);
	uint8_t *in = o->data;

	memset(h, 0, sizeof(*h));
	h->magic = KFZ_MAGIC;
	h->seq = seq;
	h->handle = NO_HANDLE;
	h->object = UVERBS_OBJECT_DEVICE;
	if (r < 8) {
		struct rxe_migr_dump_req *d = (void *)in;

		h->op = OP_DUMP;
		h->method = RXE_MIGR_METHOD_DUMP;
		memset(d, 0, sizeof(*d));
		d->version = RXE_MIGR_ABI_VERSION;
		d->flags = below(4) == 0 ? RXE_MIGR_DUMP_STOP : 0;
		d->offset = below(2) ? 0 : below((uint32_t)w.dump_len + 2);
		h->in_len = sizeof(*d);
		h->out_len = (uint32_t[]){ 0, 1, 16, 4096, MAX_IN }[below(5)];
	} else if (r < 18) {
		struct rxe_migr_set_next *sn = (void *)in;
		struct create_params *p;
		const struct rxe_migr_rec_hdr *rec;
		static const uint32_t types[] = { RXE_MIGR_OBJ_QP,
			RXE_MIGR_OBJ_SRQ, RXE_MIGR_OBJ_MR, RXE_MIGR_OBJ_AH };

		h->op = OP_SET_NEXT;
		h->method = RXE_MIGR_METHOD_SET_NEXT;
		memset(sn, 0, sizeof(*sn));
		sn->version = RXE_MIGR_ABI_VERSION;
		sn->type = types[below(4)];
		rec = find_rec(sn->type, NO_HANDLE);
		/* a number of the dump (taken: EBUSY at create) or a free
		 * one just above it */
		if (rec) {
			const uint32_t *b = (const uint32_t *)(rec + 1);

			sn->number = sn->type == RXE_MIGR_OBJ_QP ? b[0] : b[1];
			if (sn->type == RXE_MIGR_OBJ_MR)
				sn->key = ((const struct rxe_migr_mr *)b)->lkey & 0xff;
		}
		if (below(2))
			sn->number += 1 + below(64);
		if (sn->type == RXE_MIGR_OBJ_MR && below(2))
			sn->key |= RXE_MIGR_NEXT_MR_UNPINNED;
		h->in_len = sizeof(*sn);
		p = (void *)(in + MAX_IN);	/* aux follows in the record */
		memset(p, 0, sizeof(*p));
		p->addr_off = 0;
		p->length = BUF_LEN;
		p->access = IBV_ACCESS_LOCAL_WRITE;
		p->count = 0x0404;
		h->aux_len = sizeof(*p);
		h->in_len = mutate(in, h->in_len, 64, NULL, 0);
		keep_version(in, h->in_len);
		/* the create parameters are mutated too: lengths and
		 * addresses far beyond what is mapped */
		if (below(2))
			mutate((uint8_t *)p, sizeof(*p), sizeof(*p), NULL, 0);
		/* keep aux right behind the input in the record */
		memmove(in + h->in_len, p, sizeof(*p));
		return;
	} else if (r < 38) {
		uint32_t attr;
		enum target t = (enum target[]){ T_CQ, T_CQ_UD, T_SRQ, T_QP_A,
						 T_QP_B, T_QP_UD }[below(6)];

		h->op = OP_RESTORE_QUEUE;
		h->method = RXE_MIGR_METHOD_RESTORE_QUEUE;
		h->in_len = valid_restore_queue(in, t, &attr, 0);
		h->attr = attr;
		h->target = t;
		other_len = valid_restore_queue(other, qp_target(), &attr, 0);
	} else if (r < 58) {
		struct rxe_migr_restore_qp *rq = (void *)in;
		enum target t = qp_target();
		const struct rxe_migr_rec_hdr *rec;

		h->op = OP_RESTORE_QP;
		h->method = RXE_MIGR_METHOD_RESTORE_QP;
		h->attr = RXE_MIGR_ATTR_QP_HANDLE;
		h->target = t;
		rec = find_rec(RXE_MIGR_OBJ_QP, target_handle(t));
		h->in_len = valid_restore_qp(rq, rec, below(3) == 0);
		rq->flags = below(4) == 0 ? RXE_MIGR_RESTORE_NO_RESUME : 0;
		rec = find_rec(RXE_MIGR_OBJ_QP, target_handle(qp_target()));
		memcpy(other, rec + 1, sizeof(rq->qp));
		other_len = sizeof(rq->qp);
	} else if (r < 66) {
		struct rxe_migr_qp_ctl *q = (void *)in;

		h->op = OP_QP_CTL;
		h->method = RXE_MIGR_METHOD_QP_CTL;
		h->attr = RXE_MIGR_ATTR_QP_HANDLE;
		h->target = qp_target();
		q->version = RXE_MIGR_ABI_VERSION;
		q->op = below(2) ? RXE_MIGR_QP_STOP : RXE_MIGR_QP_RESUME;
		h->in_len = sizeof(*q);
	} else if (r < 74) {
		struct rxe_migr_identify_fd *f = (void *)in;

		h->op = OP_IDENTIFY_FD;
		h->method = RXE_MIGR_METHOD_IDENTIFY_FD;
		f->version = RXE_MIGR_ABI_VERSION;
		f->fd = (int32_t[]){ -1000, -1001, -1002, 0, 1, 2,
				     1023 }[below(7)];
		h->in_len = sizeof(*f);
		h->out_len = sizeof(struct rxe_migr_fd_ident);
	} else if (r < 82) {
		struct rxe_migr_queue_mmap *m = (void *)in;
		enum target t = (enum target[]){ T_CQ, T_SRQ, T_QP_A, T_QP_B,
						 T_QP_UD }[below(5)];

		h->op = OP_QUEUE_MMAP;
		h->method = RXE_MIGR_METHOD_QUEUE_MMAP;
		memset(m, 0, sizeof(*m));
		m->version = RXE_MIGR_ABI_VERSION;
		m->flags = below(2) ? RXE_MIGR_MMAP_AGAIN : 0;
		h->target = t;
		if (t == T_CQ) {
			m->which = RXE_MIGR_Q_CQ;
			h->attr = RXE_MIGR_ATTR_CQ_HANDLE;
		} else if (t == T_SRQ) {
			m->which = RXE_MIGR_Q_SRQ;
			h->attr = RXE_MIGR_ATTR_SRQ_HANDLE;
		} else {
			m->which = t != T_QP_B && below(2) ? RXE_MIGR_Q_RQ :
							     RXE_MIGR_Q_SQ;
			h->attr = RXE_MIGR_ATTR_QP_HANDLE;
		}
		h->in_len = sizeof(*m);
		h->out_len = sizeof(struct rxe_migr_queue_mmap_out);
	} else if (r < 88) {
		struct rxe_migr_adopt_cred *a = (void *)in;

		h->op = OP_ADOPT_CRED;
		h->method = RXE_MIGR_METHOD_ADOPT_CRED;
		a->version = RXE_MIGR_ABI_VERSION;
		a->fd = below(4) ? -1000 : (int32_t[]){ -1001, -1002, 0,
							 77 }[below(4)];
		a->pid = below(4) ? 0 : (int32_t)below(300);	/* 0: self */
		a->flags = below(2) ? RXE_MIGR_ADOPT_CRED_THREADS : 0;
		h->in_len = sizeof(*a);
	} else if (r < 88 + 6 && below(2)) {
		/* no method: work requests and polls, so that the engines
		 * run on what the accepted inputs left in the QPs and rings */
		h->op = OP_TRAFFIC;
		h->in_len = 16;
		for (uint32_t i = 0; i < h->in_len; i++)
			in[i] = (uint8_t)rnd();
		return;
	} else if (r < 94 && below(2)) {
		struct rxe_migr_mr_writes_req *q = (void *)in;

		mr_method(h, OP_MR_WRITES, RXE_MIGR_METHOD_MR_WRITES,
			  below(4) ? T_MR : T_MR_UNPINNED);
		q->version = RXE_MIGR_ABI_VERSION;
		q->flags = below(2) ? RXE_MIGR_WRITES_CLEAR : 0;
		q->first_page = (uint64_t[]){ 0, 0, 64, 128, 1,
					      1ull << 40 }[below(6)];
		h->in_len = sizeof(*q);
		/* the header alone, a word, many words, a cut word */
		h->out_len = sizeof(struct rxe_migr_mr_writes) +
			     (uint32_t[]){ 0, 8, 4096, 5 }[below(4)];
	} else if (r < 94) {
		struct rxe_migr_mr_pin *p = (void *)in;

		mr_method(h, OP_MR_PIN, RXE_MIGR_METHOD_MR_PIN,
			  below(2) ? T_MR_UNPINNED : T_MR);
		p->version = RXE_MIGR_ABI_VERSION;
		p->reserved = 0;
		h->in_len = sizeof(*p);
	} else {
		/* any method id of the driver namespace, any attributes */
		h->op = OP_RAW;
		h->method = (1u << UVERBS_ID_NS_SHIFT) + below(10);
		h->object = below(4) ? UVERBS_OBJECT_DEVICE :
			    (uint32_t)below(20);
		h->attr = below(2) ? (1u << UVERBS_ID_NS_SHIFT) + below(8) : 0;
		h->target = below(T_NUM);
		h->in_len = below(64);
		h->out_len = below(3) ? 0 : below(256);
		for (uint32_t i = 0; i < h->in_len; i++)
			in[i] = (uint8_t)rnd();
		if (h->in_len >= 4 && below(2))
			memcpy(in, &(uint32_t){ RXE_MIGR_ABI_VERSION }, 4);
		return;
	}
	h->in_len = mutate(in, h->in_len, MAX_IN, other, other_len);
	keep_version(in, h->in_len);
	/* now and then the wrong object: another handle, a wrong number */
	if (h->attr && below(16) == 0) {
		if (below(2))
			h->target = below(T_NUM);
		else
			h->handle = (uint32_t[]){ 0, 1, 5, 77, 0xffff,
						  0xffffffffu - 1 }[below(6)];
	}
}

/* Issue an operation; returns the kernel's answer (0 or -errno) */
/* OP_TRAFFIC: each input byte pair is one step on one of the QPs */
static int traffic(const uint8_t *in, uint32_t len)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND,
		IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP };
	struct ibv_wc wc[32];
	int err = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2) {
		struct ibv_qp *qp = (struct ibv_qp *[]){ w.qa, w.qb, w.qu }[in[i] % 3];
		uint32_t off = (in[i + 1] & 0xf) * 256;
		uint32_t blen = (in[i + 1] & 0x10) ? 8 : 64 + in[i] % 200;

		switch ((in[i] >> 2) % 4) {
		case 0:		/* a receive */
			err = post_recv(qp, qp == w.qb ? w.srq : NULL,
					4096 + off, 256);
			break;
		case 1:		/* drain the CQs */
			while (ibv_poll_cq(w.cq, 32, wc) > 0)
				;
			while (ibv_poll_cq(w.cq_ud, 32, wc) > 0)
				;
			break;
		default: {	/* a request, atomics on an aligned address */
			enum ibv_wr_opcode op = ops[(in[i] >> 4) % 6];

			if (qp == w.qu)
				op = IBV_WR_SEND;
			if (op >= IBV_WR_ATOMIC_CMP_AND_SWP)
				blen = 8;
			err = post_send(qp, op, off, blen,
					(uintptr_t)w.buf + 32768 + off, w.mr->rkey);
			break;
		}
		}
	}
	return err ? -err : 0;
}

static int run_op(struct opbuf *o)
{
	struct kfz_op *h = &o->h;
	int err;

	switch (h->op) {
	case OP_TRAFFIC:
		return traffic(o->data, h->in_len);
	case OP_IDENTIFY_FD: {
		struct rxe_migr_identify_fd *f = (void *)o->data;
		int32_t saved = 0;

		if (h->in_len >= sizeof(*f)) {
			saved = f->fd;
			f->fd = resolve_fd(f->fd);
		}
		err = op_call(o);
		if (h->in_len >= sizeof(*f))
			f->fd = saved;
		return err;
	}
	case OP_ADOPT_CRED: {
		struct rxe_migr_adopt_cred *a = (void *)o->data;
		int32_t sfd = 0, spid = 0;

		if (h->in_len >= sizeof(*a)) {
			sfd = a->fd;
			spid = a->pid;
			a->fd = resolve_fd(a->fd);
			if (!a->pid)
				a->pid = getpid();
		}
		err = op_call(o);
		if (h->in_len >= sizeof(*a)) {
			a->fd = sfd;
			a->pid = spid;
		}
		/* the file must work for us again */
		if (ibv_migr_adopt_cred(w.ctx, getpid(), 0))
			die("adopt_cred of our own credentials failed");
		return err;
	}
	case OP_SET_NEXT: {
		struct rxe_migr_set_next sn = { 0 };
		struct create_params p;

		memcpy(&p, o->data + h->in_len, sizeof(p));
		err = op_call(o);
		if (!err && h->in_len >= sizeof(sn)) {
			memcpy(&sn, o->data, sizeof(sn));
			(void)create_after_set_next(&sn, &p);
		}
		clear_next();
		return err;
	}
	case OP_QUEUE_MMAP: {
		/* op_call's output buffer is internal: ask again for the
		 * offset with the library when the input was valid */
		err = op_call(o);
		if (!err && h->in_len >= sizeof(struct rxe_migr_queue_mmap)) {
			const struct rxe_migr_queue_mmap *m = (void *)o->data;
			uint64_t off, size;

			if (m->flags & RXE_MIGR_MMAP_AGAIN &&
			    !ibv_migr_queue_mmap(w.ctx, m->which,
						 target_handle(h->target), 0,
						 &off, &size) && below(2)) {
				void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
					       MAP_SHARED, w.ctx->cmd_fd,
					       (off_t)off);

				if (p != MAP_FAILED)
					munmap(p, size);
			}
		}
		return err;
	}
	default:
		return op_call(o);
	}
}

/* --- taint, watchdog, saved operations ----------------------------- */

static unsigned long taint(void)
{
	char s[32] = "";
	int fd = open("/proc/sys/kernel/tainted", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, s, sizeof(s) - 1);
	close(fd);
	if (n > 0)
		s[n] = 0;
	return strtoul(s, NULL, 10);
}

static const char *crash_dir = "/tmp";
static int verbose;
static atomic_ulong progress;

static void save_op(const struct opbuf *o, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", crash_dir, name);
	f = fopen(path, "wb");
	if (!f) {
		printf("cannot save %s: %s\n", path, strerror(errno));
		return;
	}
	fwrite(&o->h, sizeof(o->h), 1, f);
	fwrite(o->data, 1, o->h.in_len + o->h.aux_len, f);
	fclose(f);
	printf("saved %s (op %s, %u input bytes)\n", path, op_name[o->h.op],
	       o->h.in_len);
	fflush(stdout);
}

/* the kernel's log next to the saved operation */
static void save_log(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "dmesg > '%s/dmesg.txt'", crash_dir);
	if (system(cmd))
		printf("cannot save the kernel log\n");
	else
		printf("saved %s/dmesg.txt\n", crash_dir);
}

static void *watchdog(void *arg)
{
	unsigned long last = (unsigned long)-1;

	(void)arg;
	for (;;) {
		unsigned long now;

		sleep(WATCHDOG_S);
		now = atomic_load(&progress);
		if (now == last) {
			printf("FAIL no progress for %d s in op %s (iteration %u)\n",
			       WATCHDOG_S, op_name[cur->h.op], cur->h.seq);
			save_op(cur, "hang.kfz");
			save_log();
			fflush(stdout);
			_exit(3);
		}
		last = now;
	}
	return NULL;
}

/* the operation in flight lives in a shared file mapping: if the kernel
 * kills the process in the middle of it, the file still says what it was */
static struct opbuf *map_current(void)
{
	char path[512];
	int fd;
	void *p;

	/* tmpfs: a shared file mapping of the 9p scratch dir fails */
	snprintf(path, sizeof(path), "/dev/shm/kfuzz-current.kfz");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct opbuf)))
		die("%s: %s", path, strerror(errno));
	p = mmap(NULL, sizeof(struct opbuf), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("mmap %s: %s", path, strerror(errno));
	return p;
}

static void count(const struct opbuf *o, int err)
{
	stats[o->h.op][0]++;
	stats[o->h.op][err ? 2 : 1]++;
	if (err < 0 && -err < 140)
		errnos[o->h.op][-err]++;
}

static void print_stats(void)
{
	for (int i = 0; i < OP_NUM; i++) {
		if (!stats[i][0])
			continue;
		printf("  %-14s %8" PRIu64 " calls, %7" PRIu64 " accepted, errors:",
		       op_name[i], stats[i][0], stats[i][1]);
		for (int e = 1; e < 140; e++)
			if (errnos[i][e])
				printf(" %s %" PRIu64, strerrorname_np(e) ?
				       strerrorname_np(e) : "?", errnos[i][e]);
		putchar('\n');
	}
}

static int world_healthy(void)
{
	return qp_state(w.qa) == IBV_QPS_RTS && qp_state(w.qb) == IBV_QPS_RTS &&
	       qp_state(w.qu) == IBV_QPS_RTS;
}

/* --- modes --------------------------------------------------------- */

static int do_fuzz(uint64_t iters, uint64_t seed, uint32_t lib_every)
{
	unsigned long t0 = taint(), t;
	struct timespec a, b;
	pthread_t wd;
	uint64_t i, rebuilds = 0, lib_ok = 0;
	static uint8_t mdump[DUMP_MAX];

	if (t0 & (TAINT_WARN | TAINT_DIE))
		die("the kernel is tainted already (%lu): nothing to judge by", t0);
	rng_state = seed ? seed : 1;
	printf("kfuzz: seed %" PRIu64 ", %" PRIu64 " iterations, library restore "
	       "every %u, taint at start %lu\n", seed, iters, lib_every, t0);
	fflush(stdout);
	cur = map_current();
	lib_buf = map_anon(2 * BUF_LEN);
	pthread_create(&wd, NULL, watchdog, NULL);
	clock_gettime(CLOCK_MONOTONIC, &a);
	world_build(1);
	for (i = 0; i < iters; i++) {
		int err;

		if (i && (i % REBUILD_EVERY == 0 || (i % 50 == 0 &&
						     !world_healthy()))) {
			world_destroy();
			world_build(1);
			rebuilds++;
		}
		if (lib_every && i % lib_every == lib_every - 1) {
			/* a whole dump, mutated, restored as a migration would */
			uint32_t len = (uint32_t)w.dump_len;
			uint32_t flags = (uint32_t[]){ 0,
				IBV_MIGR_RESTORE_NO_RESUME,
				IBV_MIGR_RESTORE_UNPINNED,
				IBV_MIGR_RESTORE_USER_HANDLE |
				IBV_MIGR_RESTORE_EVENT_COUNTS }[below(4)];

			memcpy(mdump, w.dump, len);
			if (below(8))
				len = mutate_dump(mdump, len, DUMP_MAX);
			memset(&cur->h, 0, sizeof(cur->h));
			cur->h.magic = KFZ_MAGIC;
			cur->h.op = OP_LIB_RESTORE;
			cur->h.seq = (uint32_t)i;
			cur->h.out_len = flags;
			cur->h.in_len = len <= sizeof(cur->data) ? len : 0;
			memcpy(cur->data, mdump, cur->h.in_len);
			/* the original objects hold the numbers: restore
			 * into a node without them, as after a migration */
			world_destroy();
			err = lib_restore(mdump, len, flags);
			if (!err)
				lib_ok++;
			world_build(1);
			rebuilds++;
		} else {
			make_op(cur, (uint32_t)i);
			err = run_op(cur);
		}
		count(cur, err);
		if (verbose)
			printf("%" PRIu64 " %s len %u target %u handle %x: %d\n", i,
			       op_name[cur->h.op], cur->h.in_len, cur->h.target,
			       cur->h.handle, err);
		atomic_fetch_add(&progress, 1);
		t = taint();
		if ((t & ~t0) & (TAINT_WARN | TAINT_DIE)) {
			printf("FAIL kernel tainted %lu -> %lu at iteration %" PRIu64
			       " (op %s, answer %d)\n", t0, t, i,
			       op_name[cur->h.op], err);
			save_op(cur, "taint.kfz");
			save_log();
			print_stats();
			return 1;
		}
		if (i && i % 10000 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("kfuzz: %" PRIu64 " iterations, %.0f s\n", i,
			       (double)(b.tv_sec - a.tv_sec));
			fflush(stdout);
		}
	}
	world_destroy();
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("kfuzz: per operation\n");
	print_stats();
	printf("OK kfuzz seed %" PRIu64 ": %" PRIu64 " iterations in %.1f s, "
	       "%" PRIu64 " rebuilds, %" PRIu64 " whole-dump restores accepted, "
	       "kernel untainted (%lu)\n", seed, iters,
	       (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
	       rebuilds, lib_ok, taint());
	return 0;
}

/* the world's valid input of o's op and target, then o's edits on it */
static void apply_edit(struct opbuf *o)
{
	uint32_t edits[256], n = o->h.in_len / 8, attr;

	if (n > 128)
		die("too many edits");
	memcpy(edits, o->data, n * 8);
	switch (o->h.op) {
	case OP_RESTORE_QP: {
		struct rxe_migr_restore_qp *rq = (void *)o->data;
		const struct rxe_migr_rec_hdr *rec;

		rec = find_rec(RXE_MIGR_OBJ_QP, target_handle(o->h.target));
		o->h.in_len = valid_restore_qp(rq, rec, 0);
		o->h.attr = RXE_MIGR_ATTR_QP_HANDLE;
		break;
	}
	case OP_RESTORE_QUEUE:
		/* the queue of a QP: the send queue unless out_len says RQ */
		o->h.in_len = valid_restore_queue(o->data, o->h.target, &attr,
						  o->h.out_len ? o->h.out_len :
						  RXE_MIGR_Q_SQ);
		o->h.attr = attr;
		break;
	default:
		die("no valid input to edit for op %s", op_name[o->h.op]);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = edits[2 * i];

		/* bit 31: an offset inside each element of the ring */
		if (off & KFZ_EDIT_EACH_SLOT) {
			const struct rxe_migr_restore_queue *rq = (void *)o->data;
			uint32_t base = sizeof(*rq);

			if (o->h.op != OP_RESTORE_QUEUE)
				die("slot edit of a non-queue input");
			off &= ~KFZ_EDIT_EACH_SLOT;
			for (uint32_t k = 0; k < rq->queue.num_elem; k++) {
				uint32_t at = base + k * rq->queue.elem_size + off;

				if (at + 4 <= o->h.in_len)
					memcpy(o->data + at, &edits[2 * i + 1], 4);
			}
			continue;
		}
		if (off & KFZ_EDIT_ADD) {
			uint32_t v;

			off &= ~KFZ_EDIT_ADD;
			if (off + 4 > o->h.in_len)
				die("edit beyond the input");
			memcpy(&v, o->data + off, 4);
			v += edits[2 * i + 1];
			memcpy(o->data + off, &v, 4);
			continue;
		}
		if (off + 4 > o->h.in_len)
			die("edit beyond the input");
		memcpy(o->data + off, &edits[2 * i + 1], 4);
	}
	o->h.handle = NO_HANDLE;
}

/* Hand-made regression cases for what the fuzzer found through a
 * sequence of operations (the kernel complained later, on traffic), one
 * file per operation, replayed in name order. */
struct mkcase {
	const char *dir, *name;
	int k;
};

static void mk_write(struct mkcase *m, struct kfz_op *h, const void *data)
{
	char path[512];
	FILE *f;

	h->magic = KFZ_MAGIC;
	snprintf(path, sizeof(path), "%s/%s-%d.kfz", m->dir, m->name, m->k++);
	f = fopen(path, "wb");
	if (!f || fwrite(h, sizeof(*h), 1, f) != 1 ||
	    fwrite(data, 1, h->in_len, f) != h->in_len || fclose(f))
		die("%s: %s", path, strerror(errno));
}

/* the world's valid input of op/target with {offset, value} edits */
static void mk_edit(struct mkcase *m, uint32_t op, enum target t,
		    const uint32_t *edits, uint32_t n)
{
	struct kfz_op h = { .op = op, .target = t, .handle = NO_HANDLE,
			    .object = UVERBS_OBJECT_DEVICE, .edit = KFZ_EDIT,
			    .in_len = n * 8 };

	h.method = op == OP_RESTORE_QP ? RXE_MIGR_METHOD_RESTORE_QP :
				       RXE_MIGR_METHOD_RESTORE_QUEUE;
	mk_write(m, &h, edits);
}

static void mk_resume(struct mkcase *m, enum target t)
{
	struct rxe_migr_qp_ctl q = { .version = RXE_MIGR_ABI_VERSION,
				     .op = RXE_MIGR_QP_RESUME };
	struct kfz_op h = { .op = OP_QP_CTL, .method = RXE_MIGR_METHOD_QP_CTL,
			    .object = UVERBS_OBJECT_DEVICE,
			    .attr = RXE_MIGR_ATTR_QP_HANDLE, .target = t,
			    .handle = NO_HANDLE, .in_len = sizeof(q) };

	mk_write(m, &h, &q);
}

/* steps of traffic(): 0x01 a receive on QP b's SRQ, 0x0c a send of QP
 * a, 0x04 drain the CQs */
static void mk_traffic(struct mkcase *m)
{
	static const uint8_t steps[16] = { 0x01, 0, 0x0c, 0, 0x01, 0, 0x0c, 0,
					   0x04, 0, 0x0c, 0, 0x01, 0, 0x04, 0 };
	struct kfz_op h = { .op = OP_TRAFFIC, .handle = NO_HANDLE,
			    .in_len = sizeof(steps) };

	mk_write(m, &h, steps);
}

#define RQ_OFF(f) ((uint32_t)offsetof(struct rxe_migr_restore_queue, f))
#define SLOT(type, f) (KFZ_EDIT_EACH_SLOT | (uint32_t)offsetof(type, f))

static int do_mkcase(const char *name, const char *dir)
{
	struct mkcase m = { .dir = dir, .name = name };

	if (!strcmp(name, "comp-opcode")) {
		/* QP a gets completer opcode 5 (an RC RDMA write middle),
		 * then sends: the ack of one reaches check_ack() */
		uint32_t e[] = { offsetof(struct rxe_migr_restore_qp,
					  qp.comp_opcode), 5 };

		mk_resume(&m, T_QP_B);	/* the world's dump stopped it */
		mk_edit(&m, OP_RESTORE_QP, T_QP_A, e, 1);
		mk_traffic(&m);
	} else if (!strcmp(name, "comp-bad-resp")) {
		/* QP a's completer is in the middle of an RDMA read response
		 * (a dump taken during one), then QP a sends: the ack of the
		 * send does not fit that sequence */
		uint32_t e[] = { offsetof(struct rxe_migr_restore_qp,
					  qp.comp_opcode),
				 0x0e };	/* RC RDMA read response middle */

		mk_resume(&m, T_QP_B);
		mk_edit(&m, OP_RESTORE_QP, T_QP_A, e, 1);
		mk_traffic(&m);
	} else if (!strcmp(name, "recv-cur-sge")) {
		/* every WQE of the SRQ ring says its receive is at SGE
		 * 0x7fff0000 (a process can write that into its own ring);
		 * sends of QP a land in them */
		uint32_t e[] = {
			SLOT(struct rxe_recv_wqe, dma.cur_sge), 0x7fff0000,
			RQ_OFF(flags), RXE_MIGR_RESTORE_SET_INDICES,
		};

		mk_edit(&m, OP_RESTORE_QUEUE, T_SRQ, e, 2);
		mk_resume(&m, T_QP_B);
		mk_resume(&m, T_QP_A);
		mk_traffic(&m);
	} else if (!strcmp(name, "sq-opcode") || !strcmp(name, "user-reg-mr")) {
		/* two more WQEs in QP a's send ring than it had, every slot
		 * with opcode 0x7fffffff (an index far outside the opcode
		 * table), or IB_WR_REG_MR (0x20) with a non-canonical MR
		 * pointer where the uapi has the remote address */
		int reg = !strcmp(name, "user-reg-mr");
		uint32_t e[] = {
			RQ_OFF(flags), RXE_MIGR_RESTORE_SET_INDICES,
			RQ_OFF(queue.producer) | KFZ_EDIT_ADD, 2,
			SLOT(struct rxe_send_wqe, wr.opcode), reg ? 0x20 : 0x7fffffff,
			SLOT(struct rxe_send_wqe, wr.wr.rdma.remote_addr), 0,
			SLOT(struct rxe_send_wqe, wr.wr.rdma.remote_addr) + 4,
			0xdead0000,
		};

		mk_edit(&m, OP_RESTORE_QUEUE, T_QP_A, e, 5);
		mk_resume(&m, T_QP_B);
		mk_resume(&m, T_QP_A);
	} else if (!strcmp(name, "sq-inline-offset")) {
		/* two more WQEs in QP a's send ring, every slot an inline
		 * send of 64 bytes from inline offset 0x7fff0000 */
		uint32_t e[] = {
			RQ_OFF(flags), RXE_MIGR_RESTORE_SET_INDICES,
			RQ_OFF(queue.producer) | KFZ_EDIT_ADD, 2,
			SLOT(struct rxe_send_wqe, wr.opcode), IBV_WR_SEND,
			SLOT(struct rxe_send_wqe, wr.send_flags), IBV_SEND_INLINE,
			SLOT(struct rxe_send_wqe, state), 0,	/* posted */
			SLOT(struct rxe_send_wqe, dma.length), 64,
			SLOT(struct rxe_send_wqe, dma.resid), 64,
			SLOT(struct rxe_send_wqe, dma.num_sge), 0,
			SLOT(struct rxe_send_wqe, dma.cur_sge), 0,
			SLOT(struct rxe_send_wqe, dma.sge_offset), 0x7fff0000,
		};

		mk_edit(&m, OP_RESTORE_QUEUE, T_QP_A, e, 10);
		mk_resume(&m, T_QP_B);
		mk_resume(&m, T_QP_A);
	} else {
		die("unknown case %s", name);
	}
	printf("OK %d file(s) for case %s in %s\n", m.k, name, dir);
	return 0;
}

static int do_replay(int argc, char **argv)
{
	unsigned long t0 = taint();
	static struct opbuf o;
	char prev_case[256] = "";
	int fails = 0;

	if (t0 & (TAINT_WARN | TAINT_DIE))
		die("the kernel is tainted already (%lu): nothing to judge by", t0);
	lib_buf = map_anon(2 * BUF_LEN);
	world_build(1);
	for (int i = 0; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		const char *base = strrchr(argv[i], '/');
		size_t n, plen;
		int err;

		/* files of one case (NAME-K.kfz) share a world; each case
		 * starts from a fresh one */
		base = base ? base + 1 : argv[i];
		plen = strrchr(base, '-') ? (size_t)(strrchr(base, '-') - base) :
					    strlen(base);
		if (i && (plen != strlen(prev_case) ||
			  strncmp(base, prev_case, plen))) {
			world_destroy();
			world_build(1);
		}
		snprintf(prev_case, sizeof(prev_case), "%.*s", (int)plen, base);

		if (!f)
			die("%s: %s", argv[i], strerror(errno));
		memset(&o, 0, sizeof(o));
		n = fread(&o.h, 1, sizeof(o.h), f);
		if (n != sizeof(o.h) || o.h.magic != KFZ_MAGIC ||
		    o.h.op >= OP_NUM || o.h.in_len + o.h.aux_len > sizeof(o.data))
			die("%s: not a kfuzz operation", argv[i]);
		if (fread(o.data, 1, o.h.in_len + o.h.aux_len, f) !=
		    o.h.in_len + o.h.aux_len)
			die("%s: short", argv[i]);
		fclose(f);
		if (o.h.op == OP_LIB_RESTORE) {
			world_destroy();
			err = lib_restore(o.data, o.h.in_len, o.h.out_len);
			world_build(1);
		} else {
			if (o.h.edit == KFZ_EDIT)
				apply_edit(&o);
			err = run_op(&o);
		}
		if ((taint() & ~t0) & (TAINT_WARN | TAINT_DIE)) {
			printf("FAIL %s: kernel tainted (%lu)\n", argv[i], taint());
			fails++;
			break;
		}
		printf("replay %s: op %s, answer %s\n", argv[i], op_name[o.h.op],
		       err ? strerror(-err) : "accepted");
	}
	/* what the engines do after the last operation */
	sleep(1);
	if (!fails && (taint() & ~t0) & (TAINT_WARN | TAINT_DIE)) {
		printf("FAIL kernel tainted after the last operation (%lu)\n",
		       taint());
		fails++;
	}
	world_destroy();
	if (!fails)
		printf("OK %d operation(s) replayed, kernel untainted\n", argc);
	return fails ? 1 : 0;
}

/* --- perm: every method refused without the capabilities ---------- */

static int perm_fails;

static void perm_expect(const char *what, int err, int expect_ok)
{
	if (expect_ok ? err != 0 : err != -EPERM) {
		printf("perm %s: expected %s, got %s\n", what,
		       expect_ok ? "success" : "EPERM",
		       err ? strerror(-err) : "success");
		perm_fails++;
	} else {
		printf("perm %s: %s\n", what, err ? "EPERM" : "ok");
	}
}

static int perm_call(uint32_t object, uint32_t method, const void *in,
		     uint32_t in_len, int out, uint16_t attr, uint32_t handle)
{
	static struct opbuf o;
	/* method ids count from the namespace bit in each object */
	const int dev = object == UVERBS_OBJECT_DEVICE;

	memset(&o.h, 0, sizeof(o.h));
	o.h.op = dev && method == RXE_MIGR_METHOD_DUMP ? OP_DUMP :
		 out ? OP_RAW : OP_SET_NEXT;
	o.h.method = method;
	o.h.object = object;
	o.h.attr = attr;
	o.h.handle = handle;
	o.h.in_len = in_len;
	/* the exact output size: ib_uverbs refuses a call whose output
	 * attribute is larger than the method's type before the driver
	 * runs (EINVAL), which would prove nothing about the driver */
	o.h.out_len = !out ? 0 :
		      !dev ? sizeof(struct rxe_migr_mr_writes) + 8 :
		      method == RXE_MIGR_METHOD_DUMP ? 4096 :
		      method == RXE_MIGR_METHOD_IDENTIFY_FD ?
		      sizeof(struct rxe_migr_fd_ident) :
		      sizeof(struct rxe_migr_queue_mmap_out);
	memcpy(o.data, in, in_len);
	return op_call(&o);
}

/* a message from a to b and back, both completed: nothing is stopped */
static int perm_traffic(void)
{
	int before = 0;

	if (post_recv(w.qa, NULL, 4096, 256) ||
	    post_recv(NULL, w.srq, 8192, 256))
		return -1;
	poll_n(w.cq, 64, 200);	/* drain */
	if (post_send(w.qa, IBV_WR_SEND, 0, 64, 0, 0) ||
	    post_send(w.qb, IBV_WR_SEND, 64, 64, 0, 0))
		return -1;
	before = poll_n(w.cq, 4, 10000);
	return before == 4 ? 0 : -1;
}

/* librxe maps each queue buffer once; rxe_mmap() hands a buffer out only
 * once per offset, so a second mmap of any of them works only after an
 * accepted MMAP_AGAIN.  The offsets are those of our uverbs mappings. */
static int perm_remap(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int mapped = 0, seen = 0;

	if (!f)
		die("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		void *p;

		if (!strstr(line, "uverbs") ||
		    sscanf(line, "%llx-%llx %7s %llx", &lo, &hi, perms,
			   &off) != 4)
			continue;
		seen++;
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, w.ctx->cmd_fd,
			 (off_t)off);
		if (p != MAP_FAILED) {
			mapped++;
			munmap(p, 4096);
		}
	}
	fclose(f);
	if (!seen)
		die("no queue mapping of the uverbs file found");
	return mapped;
}

static int do_perm(int expect_ok)
{
	static uint8_t garbage[4096];
	struct rxe_migr_dump_req dr = { .version = RXE_MIGR_ABI_VERSION,
					.flags = RXE_MIGR_DUMP_STOP };
	struct rxe_migr_set_next sn = { .version = RXE_MIGR_ABI_VERSION,
					.type = RXE_MIGR_OBJ_QP };
	struct rxe_migr_qp_ctl qc = { .version = RXE_MIGR_ABI_VERSION,
				      .op = RXE_MIGR_QP_STOP };
	struct rxe_migr_identify_fd idf = { .version = RXE_MIGR_ABI_VERSION };
	struct rxe_migr_queue_mmap qm = { .version = RXE_MIGR_ABI_VERSION,
					  .which = RXE_MIGR_Q_CQ,
					  .flags = RXE_MIGR_MMAP_AGAIN };
	struct rxe_migr_adopt_cred ac = { .version = RXE_MIGR_ABI_VERSION,
					  .pid = 1 };
	struct rxe_migr_mr_pin mp = { .version = RXE_MIGR_ABI_VERSION };
	struct rxe_migr_mr_writes_req mw = { .version = RXE_MIGR_ABI_VERSION,
					     .flags = RXE_MIGR_WRITES_CLEAR };
	static struct {
		struct rxe_migr_restore_queue rq;
		uint8_t ring[4096];
	} rqb;
	struct rxe_migr_restore_qp rqp;
	struct ibv_qp *probe;
	uint32_t want_qpn;
	int round;

	world_build(0);
	idf.fd = w.ctx->async_fd;
	ac.fd = w.ctx->cmd_fd;
	/* a QPN that is free: the number after the UD QP's, a few up */
	want_qpn = w.qu->qp_num + 40;
	sn.number = want_qpn;
	for (unsigned int i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)(i * 37 + 11);

	/* valid-looking inputs that would change the objects if accepted */
	memset(&rqb, 0, sizeof(rqb));
	rqb.rq.version = RXE_MIGR_ABI_VERSION;
	rqb.rq.which = RXE_MIGR_Q_CQ;
	rqb.rq.flags = RXE_MIGR_RESTORE_SET_INDICES |
		       RXE_MIGR_RESTORE_USER_HANDLE |
		       RXE_MIGR_RESTORE_EVENT_COUNTS;
	rqb.rq.queue.producer = 5;
	memset(&rqp, 0, sizeof(rqp));
	rqp.version = RXE_MIGR_ABI_VERSION;
	rqp.qp.qpn = w.qa->qp_num;
	rqp.qp.qp_type = IBV_QPT_RC;
	rqp.qp.qp_state = IBV_QPS_RTS;

	for (round = 0; round < 2; round++) {
		const char *k = round ? "garbage" : "valid";
		char what[64];
#define P(name, obj, m, in, len, out, attr, handle) do { \
		snprintf(what, sizeof(what), "%s %s", name, k); \
		perm_expect(what, perm_call(obj, m, round ? garbage : \
			(const void *)(in), len, out, attr, handle), \
			expect_ok && (obj) == UVERBS_OBJECT_DEVICE && \
			((unsigned int)(m) == RXE_MIGR_METHOD_DUMP || \
			 (unsigned int)(m) == RXE_MIGR_METHOD_IDENTIFY_FD)); \
	} while (0)
		if (expect_ok && round)
			break;
		P("dump", UVERBS_OBJECT_DEVICE, RXE_MIGR_METHOD_DUMP, &dr,
		  sizeof(dr), 1, 0, 0);
		if (expect_ok) {
			P("identify_fd", UVERBS_OBJECT_DEVICE,
			  RXE_MIGR_METHOD_IDENTIFY_FD, &idf, sizeof(idf), 1, 0, 0);
			/* the dump stopped the QPs: resume them */
			if (ibv_migr_resume_stopped(w.ctx) < 0)
				die("resume after dump");
			break;
		}
		P("set_next", UVERBS_OBJECT_DEVICE, RXE_MIGR_METHOD_SET_NEXT,
		  &sn, sizeof(sn), 0, 0, 0);
		P("restore_queue", UVERBS_OBJECT_DEVICE,
		  RXE_MIGR_METHOD_RESTORE_QUEUE, &rqb,
		  sizeof(rqb.rq) + 64, 0,
		  RXE_MIGR_ATTR_CQ_HANDLE, w.cq->handle);
		P("restore_qp", UVERBS_OBJECT_DEVICE, RXE_MIGR_METHOD_RESTORE_QP,
		  &rqp, sizeof(rqp), 0, RXE_MIGR_ATTR_QP_HANDLE, w.qa->handle);
		P("qp_ctl", UVERBS_OBJECT_DEVICE, RXE_MIGR_METHOD_QP_CTL, &qc,
		  sizeof(qc), 0, RXE_MIGR_ATTR_QP_HANDLE, w.qa->handle);
		P("identify_fd", UVERBS_OBJECT_DEVICE,
		  RXE_MIGR_METHOD_IDENTIFY_FD, &idf, sizeof(idf), 1, 0, 0);
		P("queue_mmap", UVERBS_OBJECT_DEVICE, RXE_MIGR_METHOD_QUEUE_MMAP,
		  &qm, sizeof(qm), 1, RXE_MIGR_ATTR_CQ_HANDLE, w.cq->handle);
		P("adopt_cred", UVERBS_OBJECT_DEVICE, RXE_MIGR_METHOD_ADOPT_CRED,
		  &ac, sizeof(ac), 0, 0, 0);
		P("mr_pin", UVERBS_OBJECT_MR, RXE_MIGR_METHOD_MR_PIN, &mp,
		  sizeof(mp), 0, RXE_MIGR_ATTR_MR_HANDLE, w.mr->handle);
		P("mr_writes", UVERBS_OBJECT_MR, RXE_MIGR_METHOD_MR_WRITES, &mw,
		  sizeof(mw), 1, RXE_MIGR_ATTR_MR_HANDLE, w.mr->handle);
#undef P
	}

	/* nothing changed: the QPs carry messages (not stopped, indices and
	 * state untouched), the CQ holds no invented completion, the file
	 * takes write() commands, a new QP gets no forced number, and the
	 * CQ's buffer cannot be mapped a second time */
	if (perm_traffic()) {
		printf("perm: the looped-back QPs no longer carry messages\n");
		perm_fails++;
	} else {
		printf("perm: QPs still carry messages\n");
	}
	if (!expect_ok) {
		struct ibv_qp_init_attr ia = { .send_cq = w.cq_ud, .recv_cq = w.cq_ud,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 } };
		struct ibv_wc wc;

		if (ibv_poll_cq(w.cq, 1, &wc) != 0) {
			printf("perm: a completion appeared in the CQ\n");
			perm_fails++;
		}
		probe = ibv_create_qp(w.pd, &ia);
		if (!probe) {
			printf("perm: create_qp after set_next: %s\n", strerror(errno));
			perm_fails++;
		} else {
			if (probe->qp_num == want_qpn) {
				printf("perm: the refused set_next took effect\n");
				perm_fails++;
			}
			else
				printf("perm: new QP got %u, not the asked-for %u\n",
				       probe->qp_num, want_qpn);
			ibv_destroy_qp(probe);
		}
		if (perm_remap()) {
			printf("perm: a queue buffer is mappable again\n");
			perm_fails++;
		} else {
			printf("perm: no queue buffer mappable again\n");
		}
	}
	world_destroy();	/* uses write() commands: ADOPT_CRED left the file ours */
	if (perm_fails) {
		printf("FAIL perm: %d check(s) failed\n", perm_fails);
		return 1;
	}
	printf("OK perm: every method %s\n", expect_ok ?
	       "that reads works with the capability" :
	       "refused with EPERM, nothing changed");
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t iters = 1000, seed = 0;
	uint32_t lib_every = 200;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	verbose = getenv("KFUZZ_VERBOSE") != NULL;
	if (argc < 2)
		die("usage: kfuzz fuzz|replay|perm ...");
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--lib-every") && i + 1 < argc)
			lib_every = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--crash-dir") && i + 1 < argc)
			crash_dir = argv[++i];
		else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
			i++;
		else if (strcmp(argv[1], "replay") && strcmp(argv[1], "mkcase"))
			die("unknown argument %s", argv[i]);
	}
	if (!strcmp(argv[1], "fuzz")) {
		if (!seed) {
			struct timespec t;

			clock_gettime(CLOCK_REALTIME, &t);
			seed = (uint64_t)t.tv_sec * 1000003u ^ (uint64_t)t.tv_nsec;
		}
		return do_fuzz(iters, seed, lib_every);
	}
	if (!strcmp(argv[1], "mkcase") && argc == 4)
		return do_mkcase(argv[2], argv[3]);
	if (!strcmp(argv[1], "replay"))
		return do_replay(argc - 2, argv + 2);
	if (!strcmp(argv[1], "perm")) {
		for (i = 2; i + 1 < argc; i++)
			if (!strcmp(argv[i], "--expect"))
				return do_perm(!strcmp(argv[i + 1], "ok"));
		die("perm needs --expect eperm|ok");
	}
	die("unknown mode %s", argv[1]);
	return 1;
}
