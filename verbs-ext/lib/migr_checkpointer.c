/* Calls a checkpointer (the CRIU plugin, crx) needs around dump and
 * restore of a process whose memory it restores itself: mapping restored
 * queues at the process's addresses, pinning MRs once that memory is in
 * place, the file's credentials, and resuming QPs left stopped. */
#include "ibv_migr.h"
#include "migr_ioctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint16_t queue_handle_attr(uint32_t which)
{
	switch (which) {
	case RXE_MIGR_Q_CQ: return RXE_MIGR_ATTR_CQ_HANDLE;
	case RXE_MIGR_Q_SRQ: return RXE_MIGR_ATTR_SRQ_HANDLE;
	case RXE_MIGR_Q_SQ:
	case RXE_MIGR_Q_RQ: return RXE_MIGR_ATTR_QP_HANDLE;
	default: return 0;
	}
}

int ibv_migr_queue_mmap(struct ibv_context *ctx, uint32_t which,
			uint32_t handle, unsigned int flags,
			uint64_t *offset, uint64_t *size)
{
	struct rxe_migr_queue_mmap req = { .version = RXE_MIGR_ABI_VERSION,
					   .which = which, .flags = flags };
	struct rxe_migr_queue_mmap_out out;
	uint16_t attr = queue_handle_attr(which);
	struct migr_call c;
	int err;

	if (!ctx || !attr || !offset || !size)
		return -EINVAL;
	memset(&out, 0, sizeof(out));
	migr_call_init(&c, RXE_MIGR_METHOD_QUEUE_MMAP);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	migr_attr_out(&c, RXE_MIGR_ATTR_OUT, &out, sizeof(out));
	migr_attr_handle(&c, attr, handle);
	err = migr_call_run(ctx->cmd_fd, &c);
	if (err)
		return err;
	*offset = out.offset;
	*size = out.size;
	return 0;
}

int ibv_migr_mr_pin(struct ibv_context *ctx, uint32_t mr_handle)
{
	struct rxe_migr_mr_pin req = { .version = RXE_MIGR_ABI_VERSION };
	struct migr_call c;

	if (!ctx)
		return -EINVAL;
	migr_call_init(&c, RXE_MIGR_METHOD_MR_PIN);
	c.object = UVERBS_OBJECT_MR;
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	migr_attr_handle(&c, RXE_MIGR_ATTR_MR_HANDLE, mr_handle);
	return migr_call_run(ctx->cmd_fd, &c);
}

/* One call of MR_WRITES: the bitmap from first_page on, as much as one
 * attribute holds, into words (room for (pages - first_page + 63) / 64
 * of them once pages is known). */
static int mr_writes_call(struct ibv_context *ctx, uint32_t mr_handle,
			  unsigned int flags, uint64_t first_page,
			  struct rxe_migr_mr_writes *hdr, uint64_t *words,
			  size_t nwords)
{
	size_t max_words = (RXE_MIGR_MAX_ATTR_LEN - sizeof(*hdr)) / 8;
	size_t len = sizeof(*hdr) + (nwords < max_words ? nwords : max_words) * 8;
	struct rxe_migr_mr_writes_req req = { .version = RXE_MIGR_ABI_VERSION,
					      .first_page = first_page };
	struct migr_call c;
	char *buf;
	int err;

	if (flags & IBV_MIGR_WRITES_CLEAR)
		req.flags |= RXE_MIGR_WRITES_CLEAR;
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	migr_call_init(&c, RXE_MIGR_METHOD_MR_WRITES);
	c.object = UVERBS_OBJECT_MR;
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	migr_attr_out(&c, RXE_MIGR_ATTR_OUT, buf, len);
	migr_attr_handle(&c, RXE_MIGR_ATTR_MR_HANDLE, mr_handle);
	err = migr_call_run(ctx->cmd_fd, &c);
	if (!err) {
		memcpy(hdr, buf, sizeof(*hdr));
		if (hdr->count > (len - sizeof(*hdr)) * 8)
			err = -EPROTO;
		else
			memcpy(words, buf + sizeof(*hdr), (hdr->count + 63) / 64 * 8);
	}
	free(buf);
	return err;
}

int ibv_migr_mr_writes(struct ibv_context *ctx, uint32_t mr_handle,
		       unsigned int flags, struct ibv_migr_mr_writes *out)
{
	struct rxe_migr_mr_writes hdr;
	uint64_t first = 0, *words = NULL;
	int err;

	if (!ctx || !out || flags & ~IBV_MIGR_WRITES_CLEAR)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	/* the first call says how large the MR is and reads its start */
	do {
		size_t nwords;

		if (!words) {
			uint64_t probe[1];

			err = mr_writes_call(ctx, mr_handle, flags, 0, &hdr,
					     probe, 0);
			if (err)
				return err;
			if (!hdr.pages)
				break;
			words = calloc((hdr.pages + 63) / 64, 8);
			if (!words)
				return -ENOMEM;
			out->pages = hdr.pages;
			out->addr = hdr.addr;
		}
		nwords = (out->pages - first + 63) / 64;
		err = mr_writes_call(ctx, mr_handle, flags, first, &hdr,
				     words + first / 64, nwords);
		if (!err && (hdr.pages != out->pages || hdr.addr != out->addr ||
			     !hdr.count))
			err = -EAGAIN;	/* the MR changed under us */
		if (err) {
			free(words);
			return err;
		}
		first += hdr.count;
	} while (first < out->pages);
	out->bits = words;
	out->context = hdr.context;
	out->lost = hdr.lost;
	return 0;
}

int ibv_migr_adopt_cred(struct ibv_context *ctx, pid_t pid, unsigned int flags)
{
	struct rxe_migr_adopt_cred req = { .version = RXE_MIGR_ABI_VERSION,
					   .pid = pid };
	struct migr_call c;

	if (!ctx || pid <= 0 || flags & ~IBV_MIGR_ADOPT_CRED_THREADS)
		return -EINVAL;
	if (flags & IBV_MIGR_ADOPT_CRED_THREADS)
		req.flags |= RXE_MIGR_ADOPT_CRED_THREADS;
	req.fd = ctx->cmd_fd;
	migr_call_init(&c, RXE_MIGR_METHOD_ADOPT_CRED);
	migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
	return migr_call_run(ctx->cmd_fd, &c);
}

/* QP_CTL op on every QP of the context whose migration state `want`
 * accepts; the others are still tried when one fails.  Returns how many
 * took it, or the first error. */
static int qp_ctl_each(struct ibv_context *ctx, uint32_t op,
		       int (*want)(uint32_t migr_state))
{
	const struct rxe_migr_rec_hdr *r = NULL;
	struct rxe_migr_qp_ctl req = { .version = RXE_MIGR_ABI_VERSION,
				       .op = op };
	void *dump;
	size_t len;
	int err, done = 0, first_err = 0;

	if (!ctx)
		return -EINVAL;
	/* the QPs' states, stopping nothing */
	err = ibv_dump_context_alloc(ctx, NULL, &dump, &len,
				     IBV_MIGR_DUMP_NO_STOP |
				     IBV_MIGR_DUMP_NO_RINGS);
	if (err)
		return err;
	while ((r = ibv_migr_next_record(dump, len, r, &err))) {
		const struct rxe_migr_qp *q = (const void *)(r + 1);
		struct migr_call c;

		if (r->type != RXE_MIGR_OBJ_QP || !want(q->migr_state))
			continue;
		migr_call_init(&c, RXE_MIGR_METHOD_QP_CTL);
		migr_attr_in(&c, RXE_MIGR_ATTR_IN, &req, sizeof(req));
		migr_attr_handle(&c, RXE_MIGR_ATTR_QP_HANDLE, r->handle);
		err = migr_call_run(ctx->cmd_fd, &c);
		if (err && !first_err)
			first_err = err;
		else if (!err)
			done++;
	}
	free(dump);
	if (err)
		return err;
	return first_err ? first_err : done;
}

static int is_stopped(uint32_t migr_state)
{
	return migr_state == RXE_MIGR_QPS_STOPPED;
}

static int is_not_stopped(uint32_t migr_state)
{
	return migr_state != RXE_MIGR_QPS_STOPPED;
}

int ibv_migr_resume_stopped(struct ibv_context *ctx)
{
	return qp_ctl_each(ctx, RXE_MIGR_QP_RESUME, is_stopped);
}

int ibv_migr_stop_all(struct ibv_context *ctx)
{
	return qp_ctl_each(ctx, RXE_MIGR_QP_STOP, is_not_stopped);
}
