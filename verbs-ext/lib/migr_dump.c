/* ibv_dump_context and dump parsing. */
#include "ibv_migr.h"
#include "migr_ioctl.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* one attribute carries at most 64 KiB; stay below with aligned chunks */
#define DUMP_CHUNK 0xf000u

static int dump_chunk(struct ibv_context *ctx, struct rxe_migr_dump_req *req,
		      uint32_t off, void *out, size_t n, uint32_t *total)
{
	struct migr_call c;

	req->offset = off;
	migr_call_init(&c, RXE_MIGR_METHOD_DUMP);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, req, sizeof(*req));
	migr_attr_out(&c, RXE_MIGR_ATTR_OUT, out, n);
	migr_attr_out(&c, RXE_MIGR_ATTR_OUT_LEN, total, sizeof(*total));
	return migr_call_run(ctx->cmd_fd, &c);
}

#define DUMP_FLAGS (IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_NO_RINGS | \
		    IBV_MIGR_DUMP_CQ_WINDOWS)

static uint32_t dump_req_flags(unsigned int flags)
{
	return (flags & IBV_MIGR_DUMP_NO_STOP ? 0 : RXE_MIGR_DUMP_STOP) |
	       (flags & IBV_MIGR_DUMP_NO_RINGS ? RXE_MIGR_DUMP_NO_RINGS : 0) |
	       (flags & IBV_MIGR_DUMP_CQ_WINDOWS ? RXE_MIGR_DUMP_CQ_WINDOWS : 0);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

int ibv_dump_context_flags(struct ibv_context *ctx, int *count, void *dump,
			   size_t length, unsigned int flags)
{
	struct rxe_migr_dump_req req = { .version = RXE_MIGR_ABI_VERSION };
	struct rxe_migr_dump_hdr hdr;
	uint32_t total = 0;
	size_t off, n;
	int err;

	if (!ctx || (!dump && length) || (flags & ~DUMP_FLAGS))
		return -EINVAL;
	req.flags = dump_req_flags(flags);

	/* offset 0 takes the snapshot; later chunks read the same one */
	if (length < sizeof(hdr)) {
		err = dump_chunk(ctx, &req, 0, &hdr, sizeof(hdr), &total);
		if (err)
			return err;
		if (length)
			memcpy(dump, &hdr, length);
		off = length;
	} else {
		n = min_size(length, DUMP_CHUNK);
		err = dump_chunk(ctx, &req, 0, dump, n, &total);
		if (err)
			return err;
		memcpy(&hdr, dump, sizeof(hdr));
		off = n;
	}
	while (off < total && off < length) {
		n = min_size(min_size(length - off, total - off), DUMP_CHUNK);
		err = dump_chunk(ctx, &req, (uint32_t)off, (char *)dump + off, n,
				 &total);
		if (err)
			return err;
		off += n;
	}

	if (hdr.magic != RXE_MIGR_MAGIC || hdr.version != RXE_MIGR_ABI_VERSION)
		return -EPROTO;
	if (count)
		*count = (int)hdr.count;
	return (int)total;
}

int ibv_dump_context_alloc(struct ibv_context *ctx, int *count, void **dump,
			   size_t *length, unsigned int flags)
{
	struct rxe_migr_dump_req req = { .version = RXE_MIGR_ABI_VERSION };
	struct rxe_migr_dump_hdr hdr;
	uint32_t total = 0;
	size_t off;
	char *buf, *grown;
	int err;

	if (!ctx || !dump || !length || (flags & ~DUMP_FLAGS))
		return -EINVAL;
	req.flags = dump_req_flags(flags);
	buf = malloc(DUMP_CHUNK);
	if (!buf)
		return -ENOMEM;
	/* offset 0 takes the snapshot and says its size */
	err = dump_chunk(ctx, &req, 0, buf, DUMP_CHUNK, &total);
	if (err)
		goto fail;
	if (total < sizeof(hdr)) {
		err = -EPROTO;
		goto fail;
	}
	if (total > DUMP_CHUNK) {
		grown = realloc(buf, total);
		if (!grown) {
			err = -ENOMEM;
			goto fail;
		}
		buf = grown;
	}
	/* the rest of the same snapshot, which the kernel keeps until the
	 * context's next one (another thread's dump: -EAGAIN) */
	for (off = DUMP_CHUNK; off < total; off += DUMP_CHUNK) {
		uint32_t now = 0;

		err = dump_chunk(ctx, &req, (uint32_t)off, buf + off,
				 min_size(total - off, DUMP_CHUNK), &now);
		if (!err && now != total)
			err = -EAGAIN;
		if (err)
			goto fail;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.magic != RXE_MIGR_MAGIC || hdr.version != RXE_MIGR_ABI_VERSION ||
	    hdr.total_len != total) {
		err = -EPROTO;
		goto fail;
	}
	if (count)
		*count = (int)hdr.count;
	*dump = buf;
	*length = total;
	return 0;
fail:
	free(buf);
	return err;
}

int ibv_dump_context(struct ibv_context *ctx, int *count, void *dump,
		     size_t length)
{
	return ibv_dump_context_flags(ctx, count, dump, length, 0);
}

static size_t body_min(uint32_t type)
{
	switch (type) {
	case RXE_MIGR_OBJ_PD: return 0;
	case RXE_MIGR_OBJ_AH: return sizeof(struct rxe_migr_ah);
	case RXE_MIGR_OBJ_MR: return sizeof(struct rxe_migr_mr);
	case RXE_MIGR_OBJ_CQ: return sizeof(struct rxe_migr_cq);
	case RXE_MIGR_OBJ_SRQ: return sizeof(struct rxe_migr_srq);
	case RXE_MIGR_OBJ_QP: return sizeof(struct rxe_migr_qp);
	case RXE_MIGR_OBJ_ASYNC_EVENT:
	case RXE_MIGR_OBJ_COMP_CHANNEL: return sizeof(struct rxe_migr_event_file);
	default: return (size_t)-1;
	}
}

/* bytes that must follow the body: rings, and a QP's responder resources */
static uint64_t trailer_bytes(const struct rxe_migr_rec_hdr *r)
{
	const void *b = r + 1;

	switch (r->type) {
	case RXE_MIGR_OBJ_CQ:
		return ((const struct rxe_migr_cq *)b)->queue.data_len;
	case RXE_MIGR_OBJ_SRQ:
		return ((const struct rxe_migr_srq *)b)->queue.data_len;
	case RXE_MIGR_OBJ_QP:
		return ibv_migr_qp_trailer_len(b);
	default:
		return 0;
	}
}

static int record_ok(const struct rxe_migr_rec_hdr *r, size_t room)
{
	size_t body;

	if (room < sizeof(*r) || r->len < sizeof(*r) || r->len > room ||
	    r->len % 8)
		return 0;
	body = body_min(r->type);
	if (body == (size_t)-1 || r->len - sizeof(*r) < body)
		return 0;
	return trailer_bytes(r) <= r->len - sizeof(*r) - body;
}

const struct rxe_migr_rec_hdr *ibv_migr_next_record(const void *dump,
		size_t length, const struct rxe_migr_rec_hdr *rec, int *err)
{
	const struct rxe_migr_dump_hdr *h = dump;
	const char *end;
	const char *p;

	if (err)
		*err = 0;
	if (!dump || length < sizeof(*h) || h->magic != RXE_MIGR_MAGIC ||
	    h->version != RXE_MIGR_ABI_VERSION || h->total_len > length ||
	    h->total_len < sizeof(*h))
		goto bad;
	end = (const char *)dump + h->total_len;
	p = rec ? (const char *)rec + rec->len : (const char *)(h + 1);
	if (p < (const char *)(h + 1) || p > end)
		goto bad;
	if (p == end)
		return NULL;
	if (!record_ok((const void *)p, (size_t)(end - p)))
		goto bad;
	return (const void *)p;
bad:
	if (err)
		*err = -EINVAL;
	return NULL;
}

static int is_window(const struct rxe_migr_queue *q)
{
	uint64_t live;

	if (q->num_elem < 2 || (q->num_elem & (q->num_elem - 1)) ||
	    !q->elem_size || (uint64_t)q->num_elem * q->elem_size > UINT32_MAX ||
	    q->producer >= q->num_elem || q->consumer >= q->num_elem)
		return 0;
	live = (q->producer - q->consumer) & (q->num_elem - 1);
	return live * q->elem_size == q->data_len;
}

int ibv_migr_cq_window_bytes(const struct rxe_migr_queue *q,
			     const void *window, uint32_t offset,
			     uint32_t length, void *out)
{
	const uint8_t *win = window;
	uint8_t *o = out;
	uint64_t end = (uint64_t)offset + length;
	uint32_t mask, live, s, last;
	int any = 0;

	if (!q || !is_window(q) || (q->data_len && !win) ||
	    end > (uint64_t)q->num_elem * q->elem_size)
		return -EINVAL;
	if (!length)
		return 0;
	if (o)
		memset(o, 0, length);
	mask = q->num_elem - 1;
	live = q->data_len / q->elem_size;
	last = (uint32_t)((end - 1) / q->elem_size);
	for (s = offset / q->elem_size; s <= last; s++) {
		/* slot s holds entry k of the window, if k is one */
		uint32_t k = (s - q->consumer) & mask;
		uint64_t at = (uint64_t)s * q->elem_size;
		uint64_t lo = at > offset ? at : offset;
		uint64_t hi = at + q->elem_size < end ? at + q->elem_size : end;

		if (k >= live)
			continue;
		if (!o)
			return 1;
		memcpy(o + (lo - offset),
		       win + (uint64_t)k * q->elem_size + (lo - at), hi - lo);
		any = 1;
	}
	return any;
}

int ibv_migr_check_dump(const void *dump, size_t length)
{
	const struct rxe_migr_dump_hdr *h = dump;
	const struct rxe_migr_rec_hdr *r = NULL;
	uint32_t n = 0;
	int err;

	while ((r = ibv_migr_next_record(dump, length, r, &err)))
		n++;
	if (err)
		return err;
	return n == h->count ? 0 : -EINVAL;
}

static int qp_ctl(struct ibv_qp *qp, uint32_t op)
{
	struct rxe_migr_qp_ctl req = { .version = RXE_MIGR_ABI_VERSION,
				       .op = op };
	struct migr_call c;

	if (!qp)
		return -EINVAL;
	migr_call_init(&c, RXE_MIGR_METHOD_QP_CTL);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	migr_attr_handle(&c, RXE_MIGR_ATTR_QP_HANDLE, qp->handle);
	return migr_call_run(qp->context->cmd_fd, &c);
}

int ibv_migr_qp_stop(struct ibv_qp *qp)
{
	return qp_ctl(qp, RXE_MIGR_QP_STOP);
}

int ibv_migr_qp_resume(struct ibv_qp *qp)
{
	return qp_ctl(qp, RXE_MIGR_QP_RESUME);
}

int ibv_migr_set_next(struct ibv_context *ctx, int object_type,
		      uint32_t number, uint32_t key)
{
	struct rxe_migr_set_next req = {
		.version = RXE_MIGR_ABI_VERSION,
		.type = (uint32_t)object_type,
		.number = number,
		.key = key,
	};
	struct migr_call c;

	if (!ctx)
		return -EINVAL;
	migr_call_init(&c, RXE_MIGR_METHOD_SET_NEXT);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	return migr_call_run(ctx->cmd_fd, &c);
}

int ibv_migr_identify_fd(struct ibv_context *ctx, int fd,
			 struct ibv_migr_fd_info *info)
{
	struct rxe_migr_identify_fd req = { .version = RXE_MIGR_ABI_VERSION,
					    .fd = fd };
	struct rxe_migr_fd_ident out;
	struct migr_call c;
	int err;

	if (!ctx || !info || fd < 0)
		return -EINVAL;
	memset(&out, 0, sizeof(out));
	migr_call_init(&c, RXE_MIGR_METHOD_IDENTIFY_FD);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	migr_attr_out(&c, RXE_MIGR_ATTR_OUT, &out, sizeof(out));
	err = migr_call_run(ctx->cmd_fd, &c);
	if (err)
		return err;
	info->type = out.type;
	info->handle = out.handle;
	info->flags = out.flags;
	return 0;
}
