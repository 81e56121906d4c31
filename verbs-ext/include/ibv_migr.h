/*
 * ibv_migr.h - checkpoint/restore of verbs objects (crx, after MigrOS).
 *
 * Works with Debian's unmodified libibverbs 44 / librxe and the patched
 * rdma_rxe.ko of crx's rxe-patches/: the calls are driver-specific uverbs
 * ioctls (ABI: rxe_migr_abi.h) on ibv_context->cmd_fd.  The caller needs
 * CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN.  All functions return 0 (or a
 * size) on success and a negative errno on failure; they never abort.
 *
 * Dump
 *   ibv_dump_context() stops every QP of the context (a stopped QP sends
 *   nothing and answers its partner with NAK_STOPPED, which pauses the
 *   partner) and writes one consistent snapshot of all PDs, MRs, CQs,
 *   SRQs and QPs into the buffer, in the format documented in
 *   rxe_migr_abi.h.  Records are ordered for restore.
 *
 * Restore (in a fresh context, typically in the restored process)
 *   For each record, in dump order:
 *     ibv_restore_object(ctx, &obj, type, IBV_RESTORE_CREATE, &args, sizeof args)
 *   recreates the object with its original uverbs handle, number (QPN,
 *   MR index, SRQ number) and keys; then for CQs, SRQs and QPs:
 *     ibv_restore_object(ctx, &obj, type, IBV_RESTORE_REFILL, &args, sizeof args)
 *   restores the ring contents and indices (into the rings CREATE made,
 *   which the kernel zeroed: chunks of zeros are not sent); for a QP it
 *   also moves the QP to RTS with the dumped attributes, restores the
 *   internal transport state and sends the resume message to the
 *   partner, which then carries on with the restored QP.  Finally
 *     ibv_restore_object(ctx, NULL, 0, IBV_RESTORE_FINISH, NULL, 0)
 *   releases the placeholder objects used to reproduce handle gaps.
 *   The memory of an MR must already be mapped at the dumped address (or
 *   at args.addr); queue buffers of the new objects are new mappings: a
 *   checkpointer that restores library state must move them to the old
 *   addresses itself.
 *
 * Event fds
 *   The dump has one record per async event fd (the context's own one is
 *   flagged RXE_MIGR_EVF_DEFAULT_ASYNC) and per completion channel; a CQ
 *   record names its channel by the channel record's handle (an opaque
 *   name of the file, not an fd number).  To map a
 *   process's [infinibandevent] fds to records, call ibv_migr_identify_fd()
 *   on a copy of each fd (CRIU passes a plugin one; pidfd_getfd() gives one
 *   too): the kernel compares the files themselves.
 *   Restore: CREATE of a COMP_CHANNEL record makes a new channel
 *   (ibv_create_comp_channel; a checkpointer moves its fd to the old
 *   number); pass it as args.channel when creating the CQs whose record
 *   names it.  CREATE of an ASYNC_EVENT record creates nothing (the new
 *   context has its own async fd, ctx->async_fd) and stores NULL.  REFILL
 *   of a CQ re-arms it as it was (ibv_req_notify_cq) and queues one event on
 *   its channel if the process had not read one at dump time.
 */
#ifndef IBV_MIGR_H
#define IBV_MIGR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "rxe_migr_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* object types: the record types of the dump */
enum ibv_migr_object_type {
	IBV_MIGR_OBJ_PD = RXE_MIGR_OBJ_PD,
	IBV_MIGR_OBJ_MR = RXE_MIGR_OBJ_MR,
	IBV_MIGR_OBJ_CQ = RXE_MIGR_OBJ_CQ,
	IBV_MIGR_OBJ_SRQ = RXE_MIGR_OBJ_SRQ,
	IBV_MIGR_OBJ_QP = RXE_MIGR_OBJ_QP,
	IBV_MIGR_OBJ_ASYNC_EVENT = RXE_MIGR_OBJ_ASYNC_EVENT,
	IBV_MIGR_OBJ_COMP_CHANNEL = RXE_MIGR_OBJ_COMP_CHANNEL,
	IBV_MIGR_OBJ_AH = RXE_MIGR_OBJ_AH,
};

enum ibv_restore_cmd {
	IBV_RESTORE_CREATE = 1,	/* recreate with handle, number, keys */
	IBV_RESTORE_REFILL = 2,	/* rings + state; QP: RTS + resume */
	IBV_RESTORE_FINISH = 3,	/* drop handle placeholders of ctx */
};

/* flags of ibv_dump_context_flags() */
#define IBV_MIGR_DUMP_NO_STOP	(1u << 0)	/* inspect, do not stop */
#define IBV_MIGR_DUMP_NO_RINGS	(1u << 1)	/* objects and states only:
						 * no ring contents (every
						 * queue's data_len is 0),
						 * not restorable */
#define IBV_MIGR_DUMP_CQ_WINDOWS (1u << 2)	/* each CQ's ring as its
						 * live entries, from the
						 * consumer (data_len their
						 * bytes); restorable once
						 * they are put back in
						 * their slots of a zeroed
						 * ring */

/* flags of struct ibv_restore_args */
#define IBV_MIGR_RESTORE_NO_RESUME (1u << 0)	/* REFILL: stay stopped */
#define IBV_MIGR_RESTORE_ANY_HANDLE (1u << 1)	/* CREATE: any handle */
#define IBV_MIGR_RESTORE_UNPINNED (1u << 2)	/* CREATE of an MR: no pages
						 * yet, ibv_migr_mr_pin()
						 * pins them later */
#define IBV_MIGR_RESTORE_USER_HANDLE (1u << 3)	/* REFILL of a CQ, SRQ or
						 * QP: its events carry the
						 * dumped user handle (a
						 * pointer of the process's
						 * library, valid when the
						 * checkpointer restored its
						 * memory) */
#define IBV_MIGR_RESTORE_EVENT_COUNTS (1u << 4)	/* REFILL of a CQ, SRQ or
						 * QP: the counts of its
						 * events the process has
						 * read are the dumped ones
						 * (its library compares
						 * them at destroy) */
#define IBV_MIGR_RESTORE_CQ_WINDOW (1u << 5)	/* REFILL of a CQ: its record
						 * carries the ring as its
						 * live entries (a dump with
						 * IBV_MIGR_DUMP_CQ_WINDOWS);
						 * each goes into its slot of
						 * the ring CREATE made, the
						 * others stay zero */

struct ibv_restore_args {
	const struct rxe_migr_rec_hdr *record;	/* from the dump */
	uint32_t flags;
	/* CREATE: objects the new one depends on (already restored) */
	struct ibv_pd *pd;			/* AH, MR, SRQ, QP */
	struct ibv_cq *send_cq, *recv_cq;	/* QP */
	struct ibv_srq *srq;			/* QP on an SRQ */
	struct ibv_comp_channel *channel;	/* CQ: required if its record
						 * names a channel, else NULL */
	void *addr;		/* MR: NULL = the dumped address */
};

/*
 * Dump every object of ctx, stopping all its QPs.  Returns the size of the
 * dump in bytes; if it is larger than length, only length bytes were
 * written and the call should be repeated with a larger buffer (QPs stay
 * stopped).  *count receives the number of records.  Negative errno on
 * failure.
 */
int ibv_dump_context(struct ibv_context *ctx, int *count, void *dump,
		     size_t length);
int ibv_dump_context_flags(struct ibv_context *ctx, int *count, void *dump,
			   size_t length, unsigned int flags);

/*
 * The same into a buffer of the dump's size that it allocates: one
 * snapshot, whatever the size.  (Repeating ibv_dump_context_flags() with a
 * larger buffer takes a second snapshot: every QP quiesced and every ring
 * copied again, megabytes for a context with deep queues.)  0 or a
 * negative errno; on success *dump is the caller's to free() and *length
 * its size.
 */
int ibv_dump_context_alloc(struct ibv_context *ctx, int *count, void **dump,
			   size_t *length, unsigned int flags);

/*
 * Restore one object (see above).  object: in/out; CREATE stores the new
 * object (struct ibv_pd/mr/cq/srq/qp *) there, REFILL takes it.  args is a
 * struct ibv_restore_args and length its size.  0 or a negative errno;
 * on failure nothing of the object is left behind.
 */
int ibv_restore_object(struct ibv_context *ctx, void **object,
		       int object_type, int cmd, void *args, size_t length);

/* Iterate the records of a dump: first call with rec == NULL.  Returns
 * NULL at the end or on a malformed dump (then *err is -EINVAL). */
const struct rxe_migr_rec_hdr *ibv_migr_next_record(const void *dump,
		size_t length, const struct rxe_migr_rec_hdr *rec, int *err);

/* Bytes after the body of a QP record: its two rings, then its
 * responder resources (the records of the READs and atomics it accepted) */
static inline uint64_t ibv_migr_qp_trailer_len(const struct rxe_migr_qp *q)
{
	return (uint64_t)q->sq.data_len + q->rq.data_len +
	       (uint64_t)q->resp_res_count * sizeof(struct rxe_migr_resp_res);
}

/* The responder resources of a QP record (its last trailer bytes) */
static inline const struct rxe_migr_resp_res *
ibv_migr_qp_resp_res(const struct rxe_migr_qp *q)
{
	return (const struct rxe_migr_resp_res *)((const uint8_t *)(q + 1) +
		q->sq.data_len + q->rq.data_len);
}

/* Bytes [offset, offset + length) of the whole ring that a CQ's queue
 * from a dump with IBV_MIGR_DUMP_CQ_WINDOWS describes, into out: the
 * window's entries (in order from the consumer index) in their slots,
 * zeros elsewhere.  Returns 1 if an entry lies in those bytes, 0 if none
 * does, -EINVAL if q is no window of a ring (slot count not a power of
 * two, an index outside the ring, data_len not the entries between them)
 * or the bytes are not inside the ring.  With out NULL it only answers
 * whether an entry lies there, and writes nothing. */
int ibv_migr_cq_window_bytes(const struct rxe_migr_queue *q,
			     const void *window, uint32_t offset,
			     uint32_t length, void *out);

/* Validate a dump's header and every record's bounds: 0 or -EINVAL */
int ibv_migr_check_dump(const void *dump, size_t length);

/* Destroy an object made by IBV_RESTORE_CREATE (undo on a failed restore) */
void ibv_migr_destroy_object(void *object, int object_type);

/* Which event fd of ctx is fd (the caller's)?  info->type is
 * IBV_MIGR_OBJ_ASYNC_EVENT or IBV_MIGR_OBJ_COMP_CHANNEL and info->handle the
 * handle of its dump record, or info->type is 0 if fd is no event fd of
 * ctx.  0, -EBADF (fd not open) or another negative errno. */
struct ibv_migr_fd_info {
	uint32_t type;
	uint32_t handle;
	uint32_t flags;		/* RXE_MIGR_EVF_* */
};
int ibv_migr_identify_fd(struct ibv_context *ctx, int fd,
			 struct ibv_migr_fd_info *info);

/* Single-QP control (tests; aborting a migration on the source) */
int ibv_migr_qp_stop(struct ibv_qp *qp);
int ibv_migr_qp_resume(struct ibv_qp *qp);

/* Ask for the number of the next QP / SRQ / MR created on ctx (0 clears) */
int ibv_migr_set_next(struct ibv_context *ctx, int object_type,
		      uint32_t number, uint32_t key);

/*
 * For checkpointers that restore the process's memory themselves (the
 * CRIU plugin): all take a context whose cmd_fd is the process's uverbs
 * file (a zeroed struct ibv_context with cmd_fd set is enough).
 */

/* The mmap offset and size of a restored queue's buffer (which: enum
 * rxe_migr_queue_which, handle: of its CQ / SRQ / QP).  flags
 * RXE_MIGR_MMAP_AGAIN: the buffer can be mmapped once more at that
 * offset, e.g. by the restorer at the address the process had it. */
int ibv_migr_queue_mmap(struct ibv_context *ctx, uint32_t which,
			uint32_t handle, unsigned int flags,
			uint64_t *offset, uint64_t *size);

/* Pin the pages of an MR restored with IBV_MIGR_RESTORE_UNPINNED, in the
 * address space of the process that registered it (any caller). */
int ibv_migr_mr_pin(struct ibv_context *ctx, uint32_t mr_handle);

/* Which pages of MR mr_handle (a user MR of ctx) the device has written
 * (RDMA WRITE and atomics answered, SENDs received, RDMA READ responses
 * placed) since they were last cleared or the MR was registered.  With
 * IBV_MIGR_WRITES_CLEAR the bits read are cleared.  A checkpointer that
 * copies an MR's memory clears first and copies after; the bit of a page
 * is set after the device's write, so no write ending after the copy
 * began is missed.  0 or -errno; on success out->bits is malloc()ed
 * (free() it), bit i of word w being page 64 w + i from out->addr, or
 * NULL when the MR spans no pages (registered unpinned, not pinned yet).
 * out->lost: MRs of the device (any context's) deregistered while they
 * had pages logged, whose writes no MR reports now; out->context tells
 * contexts apart (unique while the module is loaded). */
#define IBV_MIGR_WRITES_CLEAR	(1u << 0)
struct ibv_migr_mr_writes {
	uint64_t addr;
	uint64_t pages;
	uint64_t context;
	uint64_t lost;
	uint64_t *bits;
};
int ibv_migr_mr_writes(struct ibv_context *ctx, uint32_t mr_handle,
		       unsigned int flags, struct ibv_migr_mr_writes *out);

/* The uverbs file ctx->cmd_fd (the caller's fd) takes the credentials
 * task pid has now: the restored process can use write() commands on it
 * again after its restorer changed its credentials.  With
 * IBV_MIGR_ADOPT_CRED_THREADS, the other threads of pid whose credentials
 * equal pid's take pid's too (each when it next returns to user space), so
 * that every thread can use the file, as before the dump, when the
 * restorer gave each thread its own. */
#define IBV_MIGR_ADOPT_CRED_THREADS	(1u << 0)
int ibv_migr_adopt_cred(struct ibv_context *ctx, pid_t pid, unsigned int flags);

/* Resume every QP of ctx that is Stopped (after a dump whose process
 * runs on, or after a restore that left them stopped).  The number of
 * QPs resumed, or a negative errno (the others are resumed anyway). */
int ibv_migr_resume_stopped(struct ibv_context *ctx);

/* Stop every QP of the context that is not stopped yet (as a dump does),
 * without dumping: its partners pause at their next packet.  For the
 * moment a process is frozen, so that no partner runs out of RNR retries
 * before the dump.  Returns how many or -errno. */
int ibv_migr_stop_all(struct ibv_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* IBV_MIGR_H */
