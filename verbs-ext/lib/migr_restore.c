/* ibv_restore_object: recreate dumped objects and refill them. */
#include "ibv_migr.h"
#include "migr_ioctl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_CHUNK 0xf000u
#define MAX_PLACEHOLDERS 4096u

/* Placeholders keep handle gaps of the original context occupied until
 * IBV_RESTORE_FINISH, so that later objects get their original handles
 * (uverbs hands out the lowest free handle of a file). */
struct placeholder {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct placeholder *next;
};
static struct placeholder *placeholders;
static pthread_mutex_t placeholders_lock = PTHREAD_MUTEX_INITIALIZER;

static int keep_placeholder(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct placeholder *p = malloc(sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->ctx = ctx;
	p->pd = pd;
	pthread_mutex_lock(&placeholders_lock);
	p->next = placeholders;
	placeholders = p;
	pthread_mutex_unlock(&placeholders_lock);
	return 0;
}

static void drop_placeholders(struct ibv_context *ctx)
{
	struct placeholder **pp, *p;

	pthread_mutex_lock(&placeholders_lock);
	for (pp = &placeholders; (p = *pp);) {
		if (p->ctx == ctx) {
			*pp = p->next;
			ibv_dealloc_pd(p->pd);
			free(p);
		} else {
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&placeholders_lock);
}

/* Objects are recreated by type (PD, AH, MR, CQ, SRQ, QP: each after what it
 * depends on), not in handle order, so a placeholder may sit on the handle
 * a later object wants: give it back first. */
static void release_placeholder(struct ibv_context *ctx, uint32_t handle)
{
	struct placeholder **pp, *p;

	pthread_mutex_lock(&placeholders_lock);
	for (pp = &placeholders; (p = *pp); pp = &p->next) {
		if (p->ctx == ctx && p->pd->handle == handle) {
			*pp = p->next;
			ibv_dealloc_pd(p->pd);
			free(p);
			break;
		}
	}
	pthread_mutex_unlock(&placeholders_lock);
}

/* Make `want` the lowest free handle of the context's file. */
static int reserve_handle(struct ibv_context *ctx, uint32_t want)
{
	unsigned int n;

	release_placeholder(ctx, want);
	for (n = 0; n < MAX_PLACEHOLDERS; n++) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		int err;

		if (!pd)
			return errno ? -errno : -ENOMEM;
		if (pd->handle == want) {
			ibv_dealloc_pd(pd);
			return 0;
		}
		if (pd->handle > want) {
			ibv_dealloc_pd(pd);
			return -EEXIST;	/* taken by an object restored earlier */
		}
		err = keep_placeholder(ctx, pd);
		if (err) {
			ibv_dealloc_pd(pd);
			return err;
		}
	}
	return -EINVAL;
}

static int check_handle(const struct ibv_restore_args *a, uint32_t handle)
{
	if (a->flags & IBV_MIGR_RESTORE_ANY_HANDLE)
		return 0;
	return handle == a->record->handle ? 0 : -EIO;
}

static int create_pd(struct ibv_context *ctx, void **obj,
		     const struct ibv_restore_args *a)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	if (!pd)
		return errno ? -errno : -ENOMEM;
	if (check_handle(a, pd->handle)) {
		ibv_dealloc_pd(pd);
		return -EIO;
	}
	*obj = pd;
	return 0;
}

/* The AH gets its dumped index (UD WQEs in the process's rings name it)
 * and the GID at the dumped source index of this node's port. */
static int create_ah(struct ibv_context *ctx, void **obj,
		     const struct ibv_restore_args *a)
{
	const struct rxe_migr_ah *r = (const void *)(a->record + 1);
	struct ibv_ah_attr attr;
	struct ibv_ah *ah;
	int err;

	if (!a->pd || !r->ahn)
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.is_global = 1;
	memcpy(attr.grh.dgid.raw, r->dgid, sizeof(r->dgid));
	attr.grh.flow_label = r->flow_label;
	attr.grh.sgid_index = r->sgid_index;
	attr.grh.hop_limit = r->hop_limit;
	attr.grh.traffic_class = r->traffic_class;
	attr.port_num = r->port_num;
	err = ibv_migr_set_next(ctx, IBV_MIGR_OBJ_AH, r->ahn, 0);
	if (err)
		return err;
	ah = ibv_create_ah(a->pd, &attr);
	if (!ah) {
		err = errno ? -errno : -ENOMEM;
		ibv_migr_set_next(ctx, IBV_MIGR_OBJ_AH, 0, 0);
		return err;
	}
	if (check_handle(a, ah->handle)) {
		ibv_destroy_ah(ah);
		return -EIO;
	}
	*obj = ah;
	return 0;
}

static int create_mr(struct ibv_context *ctx, void **obj,
		     const struct ibv_restore_args *a)
{
	const struct rxe_migr_mr *r = (const void *)(a->record + 1);
	void *addr = a->addr ? a->addr : (void *)(uintptr_t)r->addr;
	struct ibv_mr *mr;
	int err;

	if (!a->pd || !r->length)
		return -EINVAL;
	err = ibv_migr_set_next(ctx, IBV_MIGR_OBJ_MR, r->mrn,
				(r->lkey & 0xff) |
				(a->flags & IBV_MIGR_RESTORE_UNPINNED ?
				 RXE_MIGR_NEXT_MR_UNPINNED : 0));
	if (err)
		return err;
	if (r->iova != r->addr)
		mr = ibv_reg_mr_iova(a->pd, addr, r->length, r->iova,
				     (int)r->access);
	else
		mr = ibv_reg_mr(a->pd, addr, r->length, (int)r->access);
	if (!mr) {
		err = errno ? -errno : -ENOMEM;
		ibv_migr_set_next(ctx, IBV_MIGR_OBJ_MR, 0, 0);
		return err;
	}
	if (mr->lkey != r->lkey || mr->rkey != r->rkey ||
	    check_handle(a, mr->handle)) {
		ibv_dereg_mr(mr);
		return -EIO;
	}
	*obj = mr;
	return 0;
}

static int create_cq(struct ibv_context *ctx, void **obj,
		     const struct ibv_restore_args *a)
{
	const struct rxe_migr_cq *r = (const void *)(a->record + 1);
	struct ibv_cq *cq;

	if (!r->cqe || (r->comp_channel != ~0u) != (a->channel != NULL))
		return -EINVAL;
	cq = ibv_create_cq(ctx, (int)r->cqe, NULL, a->channel, 0);
	if (!cq)
		return errno ? -errno : -ENOMEM;
	if (check_handle(a, cq->handle)) {
		ibv_destroy_cq(cq);
		return -EIO;
	}
	*obj = cq;
	return 0;
}

static int create_srq(struct ibv_context *ctx, void **obj,
		      const struct ibv_restore_args *a)
{
	const struct rxe_migr_srq *r = (const void *)(a->record + 1);
	struct ibv_srq_init_attr init = {
		.attr = { .max_wr = r->max_wr, .max_sge = r->max_sge,
			  .srq_limit = r->srq_limit },
	};
	struct ibv_srq *srq;
	int err;

	if (!a->pd)
		return -EINVAL;
	err = ibv_migr_set_next(ctx, IBV_MIGR_OBJ_SRQ, r->srqn, 0);
	if (err)
		return err;
	srq = ibv_create_srq(a->pd, &init);
	if (!srq) {
		err = errno ? -errno : -ENOMEM;
		ibv_migr_set_next(ctx, IBV_MIGR_OBJ_SRQ, 0, 0);
		return err;
	}
	if (check_handle(a, srq->handle)) {
		ibv_destroy_srq(srq);
		return -EIO;
	}
	*obj = srq;
	return 0;
}

static int create_qp(struct ibv_context *ctx, void **obj,
		     const struct ibv_restore_args *a)
{
	const struct rxe_migr_qp *r = (const void *)(a->record + 1);
	struct ibv_qp_init_attr init = {
		.send_cq = a->send_cq,
		.recv_cq = a->recv_cq,
		.srq = a->srq,
		.cap = {
			.max_send_wr = r->max_send_wr,
			.max_recv_wr = a->srq ? 0 : r->max_recv_wr,
			.max_send_sge = r->max_send_sge,
			.max_recv_sge = a->srq ? 0 : r->max_recv_sge,
			.max_inline_data = r->max_inline_data,
		},
		.qp_type = (enum ibv_qp_type)r->qp_type,
		.sq_sig_all = (int)r->sq_sig_all,
	};
	struct ibv_qp *qp;
	int err;

	if (!a->pd || !a->send_cq || !a->recv_cq ||
	    (r->srq_handle != ~0u) != (a->srq != NULL) ||
	    (r->qp_type != IBV_QPT_RC && r->qp_type != IBV_QPT_UD))
		return -EINVAL;
	err = ibv_migr_set_next(ctx, IBV_MIGR_OBJ_QP, r->qpn, 0);
	if (err)
		return err;
	qp = ibv_create_qp(a->pd, &init);
	if (!qp) {
		err = errno ? -errno : -ENOMEM;
		ibv_migr_set_next(ctx, IBV_MIGR_OBJ_QP, 0, 0);
		return err;
	}
	if (qp->qp_num != r->qpn || check_handle(a, qp->handle)) {
		ibv_destroy_qp(qp);
		return -EIO;
	}
	*obj = qp;
	return 0;
}

/* COMP_CHANNEL: a new channel; ASYNC_EVENT: the context has its own */
static int create_event_file(struct ibv_context *ctx, void **obj, int type)
{
	struct ibv_comp_channel *ch;

	if (type == IBV_MIGR_OBJ_ASYNC_EVENT) {
		*obj = NULL;
		return 0;
	}
	ch = ibv_create_comp_channel(ctx);
	if (!ch)
		return errno ? -errno : -ENOMEM;
	*obj = ch;
	return 0;
}

/* What the owner of a queue (CQ, SRQ, QP) gets back besides its ring, set
 * with the ring's last chunk: when the process's own memory is restored,
 * its events must carry the library's pointer (IBV_MIGR_RESTORE_USER_HANDLE)
 * and the counts of events it has read must match the library's
 * (IBV_MIGR_RESTORE_EVENT_COUNTS). */
struct owner_state {
	uint32_t flags;		/* RXE_MIGR_RESTORE_* */
	uint64_t user_handle;
	uint32_t events_reported;
	uint32_t comp_events_reported;
};

static struct owner_state dumped_owner(const struct ibv_restore_args *a,
				       uint32_t comp_events_reported)
{
	struct owner_state o = { 0 };

	if (a->flags & IBV_MIGR_RESTORE_USER_HANDLE) {
		o.flags |= RXE_MIGR_RESTORE_USER_HANDLE;
		o.user_handle = a->record->user_handle;
	}
	if (a->flags & IBV_MIGR_RESTORE_EVENT_COUNTS) {
		o.flags |= RXE_MIGR_RESTORE_EVENT_COUNTS;
		o.events_reported = a->record->events_reported;
		o.comp_events_reported = comp_events_reported;
	}
	return o;
}

static int all_zero(const uint8_t *p, uint32_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* The ring in chunks, the last one with the indices.  REFILL follows the
 * CREATE that made the queue, whose ring the kernel allocated zeroed: a
 * chunk of zeros is not sent, the last one always is.  With window, data
 * is a CQ's live entries (IBV_MIGR_RESTORE_CQ_WINDOW): each chunk is made
 * from them, and only the chunks that hold one are sent (UCX's CQs of
 * thousands of slots hold a few completions at a dump). */
static int restore_queue(struct ibv_context *ctx, uint32_t which,
			 uint16_t handle_attr, uint32_t handle,
			 const struct rxe_migr_queue *q, const uint8_t *data,
			 int window, uint32_t last_flags,
			 const struct owner_state *owner)
{
	struct rxe_migr_queue whole = *q;
	struct rxe_migr_restore_queue *req;
	uint32_t off = 0;
	int err = 0;

	if (window) {
		/* ibv_migr_cq_window_bytes() checks the geometry */
		if (ibv_migr_cq_window_bytes(q, data, 0, 0, NULL) < 0)
			return -EINVAL;
		whole.data_len = q->num_elem * q->elem_size;
	}
	if (!whole.data_len)
		return 0;
	req = malloc(sizeof(*req) + QUEUE_CHUNK);
	if (!req)
		return -ENOMEM;
	do {
		uint32_t n = whole.data_len - off;
		int last, any;
		struct migr_call c;

		if (n > QUEUE_CHUNK)
			n = QUEUE_CHUNK;
		last = off + n == whole.data_len;
		if (window) {
			/* asked first: a chunk not sent is not written */
			any = ibv_migr_cq_window_bytes(q, data, off, n, NULL);
			if (any >= 0 && (any || last))
				any = ibv_migr_cq_window_bytes(q, data, off, n,
							       req + 1);
			if (any < 0) {
				err = any;
				break;
			}
		} else {
			any = !all_zero(data + off, n);
			if (any || last)
				memcpy(req + 1, data + off, n);
		}
		if (!any && !last) {
			off += n;
			continue;
		}
		memset(req, 0, sizeof(*req));
		req->version = RXE_MIGR_ABI_VERSION;
		req->which = which;
		req->offset = off;
		req->queue = whole;
		if (last) {
			req->flags = RXE_MIGR_RESTORE_SET_INDICES | last_flags |
				     owner->flags;
			req->user_handle = owner->user_handle;
			req->events_reported = owner->events_reported;
			req->comp_events_reported = owner->comp_events_reported;
		}
		migr_call_init(&c, RXE_MIGR_METHOD_RESTORE_QUEUE);
		migr_attr_in(&c, RXE_MIGR_ATTR_IN, req, sizeof(*req) + n);
		migr_attr_handle(&c, handle_attr, handle);
		err = migr_call_run(ctx->cmd_fd, &c);
		off += n;
	} while (!err && off < whole.data_len);
	free(req);
	return err;
}

/* With IBV_MIGR_RESTORE_EVENT_COUNTS the kernel now counts events this
 * library instance never acked: make its counts agree, so that the caller
 * can still destroy the object (a failed restore) without waiting for
 * ever.  The restored process's own library gets its counts back with
 * its memory. */
static void agree_event_counts(void *obj, int type,
			       const struct ibv_restore_args *a)
{
	const struct rxe_migr_rec_hdr *h = a->record;
	pthread_mutex_t *mutex;
	uint32_t *async;

	if (!(a->flags & IBV_MIGR_RESTORE_EVENT_COUNTS))
		return;
	switch (type) {
	case IBV_MIGR_OBJ_CQ: {
		struct ibv_cq *cq = obj;

		pthread_mutex_lock(&cq->mutex);
		cq->comp_events_completed =
			((const struct rxe_migr_cq *)(h + 1))->comp_events_reported;
		cq->async_events_completed = h->events_reported;
		pthread_mutex_unlock(&cq->mutex);
		return;
	}
	case IBV_MIGR_OBJ_SRQ:
		mutex = &((struct ibv_srq *)obj)->mutex;
		async = &((struct ibv_srq *)obj)->events_completed;
		break;
	case IBV_MIGR_OBJ_QP:
		mutex = &((struct ibv_qp *)obj)->mutex;
		async = &((struct ibv_qp *)obj)->events_completed;
		break;
	default:
		return;
	}
	pthread_mutex_lock(mutex);
	*async = h->events_reported;
	pthread_mutex_unlock(mutex);
}

/* UD: INIT with its Q_Key, RTR and RTS with its send PSN; no path */
static int move_ud_qp(struct ibv_qp *qp, const struct rxe_migr_qp *r)
{
	struct ibv_qp_attr attr;
	int err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = r->pkey_index;
	attr.port_num = r->port_num;
	attr.qkey = r->qkey;
	err = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_QKEY);
	if (err || r->qp_state == IBV_QPS_INIT)
		return -err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	err = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (err || r->qp_state == IBV_QPS_RTR)
		return -err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = r->sq_psn;
	return -ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int move_qp(struct ibv_qp *qp, const struct rxe_migr_qp *r)
{
	struct ibv_qp_attr attr;
	int err;

	if (r->qp_type == IBV_QPT_UD)
		return move_ud_qp(qp, r);

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = r->pkey_index;
	attr.port_num = r->port_num;
	attr.qp_access_flags = (int)r->qp_access_flags;
	err = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err || r->qp_state == IBV_QPS_INIT)
		return -err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = (enum ibv_mtu)r->path_mtu;
	attr.dest_qp_num = r->dest_qp_num;
	attr.rq_psn = r->rq_psn;
	attr.max_dest_rd_atomic = r->max_dest_rd_atomic;
	attr.min_rnr_timer = r->min_rnr_timer;
	attr.ah_attr.is_global = 1;
	memcpy(attr.ah_attr.grh.dgid.raw, r->dgid, sizeof(r->dgid));
	attr.ah_attr.grh.sgid_index = r->sgid_index;
	attr.ah_attr.grh.hop_limit = r->hop_limit;
	attr.ah_attr.grh.traffic_class = r->traffic_class;
	attr.ah_attr.grh.flow_label = r->flow_label;
	attr.ah_attr.port_num = r->port_num;
	err = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err || r->qp_state == IBV_QPS_RTR)
		return -err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = r->sq_psn;
	attr.timeout = r->timeout;
	attr.retry_cnt = r->retry_cnt;
	attr.rnr_retry = r->rnr_retry;
	attr.max_rd_atomic = r->max_rd_atomic;
	err = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	return -err;
}

static int refill_qp(struct ibv_context *ctx, struct ibv_qp *qp,
		     const struct ibv_restore_args *a)
{
	const struct rxe_migr_qp *r = (const void *)(a->record + 1);
	const uint8_t *rings = (const uint8_t *)(r + 1);
	struct owner_state owner = dumped_owner(a, 0);
	size_t res_len = (size_t)r->resp_res_count *
			 sizeof(struct rxe_migr_resp_res);
	struct rxe_migr_restore_qp *req;
	struct migr_call c;
	int err;

	if (r->qp_state != IBV_QPS_RTS && r->qp_state != IBV_QPS_RTR &&
	    r->qp_state != IBV_QPS_INIT)
		return -EINVAL;	/* only live states are restored */
	err = move_qp(qp, r);
	if (err)
		return err;
	/* the send queue (always there) carries the owner's state */
	err = restore_queue(ctx, RXE_MIGR_Q_SQ, RXE_MIGR_ATTR_QP_HANDLE,
			    qp->handle, &r->sq, rings, 0, 0, &owner);
	if (err)
		return err;
	agree_event_counts(qp, IBV_MIGR_OBJ_QP, a);
	owner.flags = 0;
	err = restore_queue(ctx, RXE_MIGR_Q_RQ, RXE_MIGR_ATTR_QP_HANDLE,
			    qp->handle, &r->rq, rings + r->sq.data_len, 0, 0,
			    &owner);
	/* a QP in INIT has no connection state; RTR and RTS have */
	if (err || r->qp_state == IBV_QPS_INIT)
		return err;

	/* the transport state, then the READs and atomics its responder
	 * accepted (to answer their retries) */
	req = calloc(1, sizeof(*req) + res_len);
	if (!req)
		return -ENOMEM;
	req->version = RXE_MIGR_ABI_VERSION;
	req->flags = a->flags & IBV_MIGR_RESTORE_NO_RESUME ?
		RXE_MIGR_RESTORE_NO_RESUME : 0;
	req->qp = *r;
	memcpy(req + 1, ibv_migr_qp_resp_res(r), res_len);
	migr_call_init(&c, RXE_MIGR_METHOD_RESTORE_QP);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, req, sizeof(*req) + res_len);
	migr_attr_handle(&c, RXE_MIGR_ATTR_QP_HANDLE, qp->handle);
	err = migr_call_run(ctx->cmd_fd, &c);
	free(req);
	return err;
}

/* ring and indices; then the CQ is armed as it was, and an event the
 * process had not read at dump time is queued on its channel again */
static int refill_cq(struct ibv_context *ctx, struct ibv_cq *cq,
		     const struct rxe_migr_cq *r, const struct ibv_restore_args *a)
{
	struct owner_state owner = dumped_owner(a, r->comp_events_reported);
	uint32_t event = r->comp_events_pending && cq->channel ?
		RXE_MIGR_RESTORE_CQ_EVENT : 0;
	int err;

	err = restore_queue(ctx, RXE_MIGR_Q_CQ, RXE_MIGR_ATTR_CQ_HANDLE,
			    cq->handle, &r->queue, (const uint8_t *)(r + 1),
			    !!(a->flags & IBV_MIGR_RESTORE_CQ_WINDOW), event,
			    &owner);
	if (err)
		return err;
	agree_event_counts(cq, IBV_MIGR_OBJ_CQ, a);
	switch (r->notify) {
	case RXE_MIGR_CQ_NOTIFY_NONE:
		return 0;
	case RXE_MIGR_CQ_NOTIFY_SOLICITED:
	case RXE_MIGR_CQ_NOTIFY_NEXT:
		err = ibv_req_notify_cq(cq, r->notify ==
					RXE_MIGR_CQ_NOTIFY_SOLICITED);
		return err ? -err : 0;
	default:
		return -EINVAL;
	}
}

static int refill(struct ibv_context *ctx, void *obj, int type,
		  const struct ibv_restore_args *a)
{
	const void *body = a->record + 1;

	switch (type) {
	case IBV_MIGR_OBJ_PD:
	case IBV_MIGR_OBJ_AH:
	case IBV_MIGR_OBJ_MR:
		return 0;
	case IBV_MIGR_OBJ_CQ:
		return refill_cq(ctx, obj, body, a);
	case IBV_MIGR_OBJ_SRQ: {
		const struct rxe_migr_srq *r = body;
		struct owner_state owner = dumped_owner(a, 0);
		int err;

		err = restore_queue(ctx, RXE_MIGR_Q_SRQ,
				    RXE_MIGR_ATTR_SRQ_HANDLE,
				    ((struct ibv_srq *)obj)->handle, &r->queue,
				    (const uint8_t *)(r + 1), 0, 0, &owner);
		if (!err)
			agree_event_counts(obj, IBV_MIGR_OBJ_SRQ, a);
		return err;
	}
	case IBV_MIGR_OBJ_QP:
		return refill_qp(ctx, obj, a);
	default:
		return -EINVAL;
	}
}

static void destroy(void *obj, int type)
{
	switch (type) {
	case IBV_MIGR_OBJ_PD: ibv_dealloc_pd(obj); break;
	case IBV_MIGR_OBJ_AH: ibv_destroy_ah(obj); break;
	case IBV_MIGR_OBJ_MR: ibv_dereg_mr(obj); break;
	case IBV_MIGR_OBJ_CQ: ibv_destroy_cq(obj); break;
	case IBV_MIGR_OBJ_SRQ: ibv_destroy_srq(obj); break;
	case IBV_MIGR_OBJ_QP: ibv_destroy_qp(obj); break;
	case IBV_MIGR_OBJ_COMP_CHANNEL: ibv_destroy_comp_channel(obj); break;
	}
}

static int record_valid(const struct ibv_restore_args *a, int type)
{
	size_t body;
	const struct rxe_migr_rec_hdr *r = a->record;

	if (!r || r->type != (uint32_t)type || r->len < sizeof(*r) || r->len % 8)
		return 0;
	switch (type) {
	case IBV_MIGR_OBJ_PD: body = 0; break;
	case IBV_MIGR_OBJ_AH: body = sizeof(struct rxe_migr_ah); break;
	case IBV_MIGR_OBJ_MR: body = sizeof(struct rxe_migr_mr); break;
	case IBV_MIGR_OBJ_CQ: body = sizeof(struct rxe_migr_cq); break;
	case IBV_MIGR_OBJ_SRQ: body = sizeof(struct rxe_migr_srq); break;
	case IBV_MIGR_OBJ_QP: body = sizeof(struct rxe_migr_qp); break;
	case IBV_MIGR_OBJ_ASYNC_EVENT:
	case IBV_MIGR_OBJ_COMP_CHANNEL:
		body = sizeof(struct rxe_migr_event_file);
		break;
	default: return 0;
	}
	if (r->len - sizeof(*r) < body)
		return 0;
	body = r->len - sizeof(*r) - body;
	switch (type) {
	case IBV_MIGR_OBJ_CQ:
		return ((const struct rxe_migr_cq *)(r + 1))->queue.data_len <= body;
	case IBV_MIGR_OBJ_SRQ:
		return ((const struct rxe_migr_srq *)(r + 1))->queue.data_len <= body;
	case IBV_MIGR_OBJ_QP: {
		const struct rxe_migr_qp *q = (const void *)(r + 1);

		return ibv_migr_qp_trailer_len(q) <= body;
	}
	default:
		return 1;
	}
}

int ibv_restore_object(struct ibv_context *ctx, void **object,
		       int object_type, int cmd, void *args, size_t length)
{
	const struct ibv_restore_args *a = args;
	void *obj = NULL;
	int err;

	if (!ctx)
		return -EINVAL;
	if (cmd == IBV_RESTORE_FINISH) {
		drop_placeholders(ctx);
		return 0;
	}
	if (!object || !a || length < sizeof(*a) || !record_valid(a, object_type))
		return -EINVAL;

	switch (cmd) {
	case IBV_RESTORE_CREATE:
		if (object_type == IBV_MIGR_OBJ_ASYNC_EVENT ||
		    object_type == IBV_MIGR_OBJ_COMP_CHANNEL) {
			/* fds: the checkpointer places them, not uverbs */
			err = create_event_file(ctx, &obj, object_type);
			if (!err)
				*object = obj;
			return err;
		}
		if (!(a->flags & IBV_MIGR_RESTORE_ANY_HANDLE)) {
			err = reserve_handle(ctx, a->record->handle);
			if (err)
				return err;
		}
		switch (object_type) {
		case IBV_MIGR_OBJ_PD: err = create_pd(ctx, &obj, a); break;
		case IBV_MIGR_OBJ_AH: err = create_ah(ctx, &obj, a); break;
		case IBV_MIGR_OBJ_MR: err = create_mr(ctx, &obj, a); break;
		case IBV_MIGR_OBJ_CQ: err = create_cq(ctx, &obj, a); break;
		case IBV_MIGR_OBJ_SRQ: err = create_srq(ctx, &obj, a); break;
		case IBV_MIGR_OBJ_QP: err = create_qp(ctx, &obj, a); break;
		default: err = -EINVAL;
		}
		if (!err)
			*object = obj;
		return err;
	case IBV_RESTORE_REFILL:
		if (object_type == IBV_MIGR_OBJ_ASYNC_EVENT ||
		    object_type == IBV_MIGR_OBJ_COMP_CHANNEL)
			return 0;	/* nothing to refill */
		if (!*object)
			return -EINVAL;
		return refill(ctx, *object, object_type, a);
	default:
		return -EINVAL;
	}
}

/* exported for the C++ wrapper: destroy an object created by CREATE */
void ibv_migr_destroy_object(void *obj, int object_type)
{
	if (obj)
		destroy(obj, object_type);
}
