/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * rxe_migr_abi.h - ioctl ABI between the patched rdma_rxe.ko (crx
 * rxe-patches/) and libverbs-ext (verbs-ext/lib).  Shared verbatim by the
 * kernel module build and user space; depends only on <linux/types.h> and
 * <rdma/ib_user_ioctl_cmds.h>.
 *
 * All methods but MR_PIN and MR_WRITES (of UVERBS_OBJECT_MR) are driver-specific uverbs
 * methods of UVERBS_OBJECT_DEVICE (object id 0), issued with
 * RDMA_VERBS_IOCTL on the uverbs fd of a context, driver_id RDMA_DRIVER_RXE.  Every method needs CAP_CHECKPOINT_RESTORE or
 * CAP_SYS_ADMIN.  Every input starts with a __u32 version that must equal
 * RXE_MIGR_ABI_VERSION, otherwise the method fails with EINVAL.
 *
 * Dump format (version 6), all fields host-endian, records 8-byte aligned:
 *
 *   struct rxe_migr_dump_hdr             magic, version, count, total_len
 *   count x {
 *     struct rxe_migr_rec_hdr            type, len (incl. header), handle
 *     body by type:
 *       RXE_MIGR_OBJ_ASYNC_EVENT    struct rxe_migr_event_file
 *       RXE_MIGR_OBJ_COMP_CHANNEL   struct rxe_migr_event_file
 *       RXE_MIGR_OBJ_PD    nothing
 *       RXE_MIGR_OBJ_AH    struct rxe_migr_ah
 *       RXE_MIGR_OBJ_MR    struct rxe_migr_mr
 *       RXE_MIGR_OBJ_CQ    struct rxe_migr_cq, then queue.data_len bytes
 *       RXE_MIGR_OBJ_SRQ   struct rxe_migr_srq, then queue.data_len bytes
 *       RXE_MIGR_OBJ_QP    struct rxe_migr_qp, then sq.data_len bytes of the
 *                          send ring, then rq.data_len bytes of the receive
 *                          ring (0 for a QP on an SRQ), then
 *                          resp_res_count x struct rxe_migr_resp_res
 *   }
 *
 * Records are ordered by object type (ASYNC_EVENT, COMP_CHANNEL, PD, AH,
 * MR, CQ, SRQ, QP) and by handle within a type, which is the order in which
 * restore must recreate them.
 *
 * Event files.  The async event fd and the completion channels of a
 * context are all anon_inode:[infinibandevent] files sharing one inode,
 * and ib_uverbs keeps no number for them (the uobject id is cleared once
 * the fd is installed; the fd number may change with dup2()/close()).
 * Their record handle is a keyed hash (random key per module load) of the
 * file's identity: stable while the file lives, not a kernel pointer, and
 * only meaningful on the node and module instance that made the dump.  A
 * dumper maps the process's fds to records with RXE_MIGR_METHOD_IDENTIFY_FD
 * on its own copy of each fd (CRIU hands a plugin such a copy; otherwise
 * pidfd_getfd()): the driver compares the struct file behind that fd with
 * the context's event files and answers with the record type and handle.
 * CQ records name their channel by that handle.
 *
 * Versions 1 (no event file records, CQ without notify state), 2 (no
 * user handles), 3 (no event counts), 4 (no address handles) and 5 (no
 * responder resources) are refused.
 * Ring data is the whole element array of the queue (num_elem * elem_size),
 * i.e. struct rxe_queue_buf.data of <rdma/rdma_user_rxe.h>; the indices are
 * in struct rxe_migr_queue.
 */
#ifndef RXE_MIGR_ABI_H
#define RXE_MIGR_ABI_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

#define RXE_MIGR_ABI_VERSION	6
#define RXE_MIGR_MAGIC		0x474d5852u	/* "RXMG" little endian */

/* methods of UVERBS_OBJECT_DEVICE in the driver namespace */
enum rxe_migr_methods {
	/* in: struct rxe_migr_set_next.  The next object of that type
	 * created on this context gets the given number (QPN, MR index +
	 * key byte, SRQ index, AH index); the create fails with EBUSY if the number
	 * is taken.  number 0 clears. */
	RXE_MIGR_METHOD_SET_NEXT = (1U << UVERBS_ID_NS_SHIFT),
	/* in: struct rxe_migr_dump_req; out: bytes [offset, offset + out
	 * length) of the dump (format above); out_len: __u32 total length
	 * of the dump.  offset 0 takes a new snapshot of all objects of the
	 * context (with RXE_MIGR_DUMP_STOP, every QP is put into Stopped
	 * first; with RXE_MIGR_DUMP_NO_RINGS, without the rings' contents;
	 * with RXE_MIGR_DUMP_CQ_WINDOWS, each CQ's ring as its live entries)
	 * and keeps it in the context; later offsets read that
	 * snapshot.  An ioctl attribute holds at most 64 KiB, hence the
	 * chunks. */
	RXE_MIGR_METHOD_DUMP,
	/* in: struct rxe_migr_restore_queue + ring bytes; exactly one of
	 * the CQ / SRQ / QP handle attributes.  Writes ring bytes at offset;
	 * with RXE_MIGR_RESTORE_SET_INDICES also sets the indices (call it
	 * last).  The queue geometry must equal the dumped one. */
	RXE_MIGR_METHOD_RESTORE_QUEUE,
	/* in: struct rxe_migr_restore_qp and the QP's responder
	 * resources; QP handle of a QP in RTS
	 * (brought there with ordinary modify_qp calls from the dumped
	 * attributes, rings already restored).  Sets the internal state,
	 * then REFILLs: the QP sends the resume message to its partner and
	 * retransmits from its oldest unacknowledged PSN. */
	RXE_MIGR_METHOD_RESTORE_QP,
	/* in: struct rxe_migr_qp_ctl; QP handle.  Stop / resume one QP
	 * (tests, and the source side when a migration is aborted). */
	RXE_MIGR_METHOD_QP_CTL,
	/* in: struct rxe_migr_identify_fd; out: struct rxe_migr_fd_ident.
	 * Which event file of this context (async event file or completion
	 * channel, by dump handle) is the file behind the caller's fd?
	 * type 0 if it is none of them; EBADF if fd is not open. */
	RXE_MIGR_METHOD_IDENTIFY_FD,
	/* in: struct rxe_migr_queue_mmap; out: struct
	 * rxe_migr_queue_mmap_out; one CQ / SRQ / QP handle as for
	 * RESTORE_QUEUE.  The mmap offset and size of the queue's buffer;
	 * with RXE_MIGR_MMAP_AGAIN the buffer can be mmapped once more at
	 * that offset (a checkpointer maps a restored queue at the address
	 * the application had it; the library that created the queue has
	 * used up the first mmap). */
	RXE_MIGR_METHOD_QUEUE_MMAP,
	/* in: struct rxe_migr_adopt_cred.  The uverbs file (the caller's fd
	 * of the file this method runs on) takes the current credentials of
	 * task pid: ib_uverbs refuses write() commands from a task whose
	 * credentials are not those the file was opened with, and a
	 * restorer changes them after the file was opened. */
	RXE_MIGR_METHOD_ADOPT_CRED,
};

/* methods of UVERBS_OBJECT_MR in the driver namespace (a uverbs object
 * has room for eight driver methods: the device's are taken) */
enum rxe_migr_mr_methods {
	/* in: struct rxe_migr_mr_pin; MR handle of an MR registered with
	 * RXE_MIGR_NEXT_MR_UNPINNED.  Pins its pages in the address space of
	 * the process that registered it (not the caller's) and makes the
	 * MR valid.  EINVAL if the MR is pinned already. */
	RXE_MIGR_METHOD_MR_PIN = (1U << UVERBS_ID_NS_SHIFT),
	/* in: struct rxe_migr_mr_writes_req; out: struct
	 * rxe_migr_mr_writes, then as many __u64 words of its bitmap as
	 * the out attribute has room for; MR handle of a user MR.  Which
	 * pages of the MR the device has written (RDMA WRITE and atomics
	 * answered, SENDs received, RDMA READ responses placed) since they
	 * were last cleared or the MR was registered.  A checkpointer that
	 * copied the MR's memory clears the bits first and copies after,
	 * and later reads which pages it has to copy again; the bit of a
	 * page is set after the device's write to it. */
	RXE_MIGR_METHOD_MR_WRITES,
};

enum rxe_migr_attrs {
	RXE_MIGR_ATTR_IN = (1U << UVERBS_ID_NS_SHIFT),
	RXE_MIGR_ATTR_OUT,
	RXE_MIGR_ATTR_OUT_LEN,
	RXE_MIGR_ATTR_QP_HANDLE,
	RXE_MIGR_ATTR_CQ_HANDLE,
	RXE_MIGR_ATTR_SRQ_HANDLE,
	RXE_MIGR_ATTR_MR_HANDLE,
};

/* largest buffer one attribute can carry */
#define RXE_MIGR_MAX_ATTR_LEN	0xffffu

enum rxe_migr_obj_type {
	RXE_MIGR_OBJ_PD = 1,
	RXE_MIGR_OBJ_MR = 2,
	RXE_MIGR_OBJ_CQ = 3,
	RXE_MIGR_OBJ_SRQ = 4,
	RXE_MIGR_OBJ_QP = 5,
	RXE_MIGR_OBJ_ASYNC_EVENT = 6,	/* an async event fd */
	RXE_MIGR_OBJ_COMP_CHANNEL = 7,	/* a completion channel fd */
	RXE_MIGR_OBJ_AH = 8,		/* an address handle (UD sends) */
};

/* migration state of a QP, as dumped (the application sees RTS) */
enum rxe_migr_qps {
	RXE_MIGR_QPS_RUNNING = 0,
	RXE_MIGR_QPS_STOPPED = 1,	/* sends nothing, NAKs everything */
	RXE_MIGR_QPS_PAUSED = 2,	/* partner stopped: no sends, no retries */
	RXE_MIGR_QPS_RESUMING = 3,	/* resume sent, partner has not answered:
					 * resent per timeout, counted as retries */
};

/* wire: NAK code answered by a stopped QP (AETH syndrome) and the resume
 * opcode (RC class, free in 6.1 and later kernels) */
#define RXE_MIGR_WIRE_NAK_STOPPED	0x65
#define RXE_MIGR_WIRE_OP_RESUME		0x18

struct rxe_migr_set_next {
	__u32 version;
	__u32 type;		/* RXE_MIGR_OBJ_QP, _MR, _SRQ or _AH */
	__u32 number;		/* QPN / MR index / SRQ index / AH index;
				 * 0 clears */
	__u32 key;		/* MR: low 8 bits of lkey/rkey, flags above */
};

/* SET_NEXT of an MR, in key: register the next MR without pinning its
 * pages (its memory is not in place yet); RXE_MIGR_METHOD_MR_PIN pins
 * them later.  Until then every access to the MR fails. */
#define RXE_MIGR_NEXT_MR_UNPINNED	(1u << 8)

#define RXE_MIGR_DUMP_STOP	(1u << 0)
/* the objects and their state without the ring bytes (every queue's
 * data_len is 0): enough to find QPs, MRs and migration states, much
 * smaller for deep queues; a restore refuses such a record */
#define RXE_MIGR_DUMP_NO_RINGS	(1u << 1)
/* each CQ's ring cut to its live entries, [consumer, producer) in order
 * from the consumer (data_len = their bytes); the other rings whole.  A
 * CQ's other slots hold completions already read or none yet.  A
 * restore refuses such a CQ record as it is: put the entries back in
 * their slots of a zeroed ring first */
#define RXE_MIGR_DUMP_CQ_WINDOWS	(1u << 2)

struct rxe_migr_dump_req {
	__u32 version;
	__u32 flags;
	__u32 offset;		/* 0: take a new snapshot */
	__u32 reserved;
};

struct rxe_migr_dump_hdr {
	__u32 magic;
	__u32 version;
	__u32 count;		/* number of records */
	__u32 total_len;	/* bytes including this header */
};

struct rxe_migr_rec_hdr {
	__u32 type;		/* enum rxe_migr_obj_type */
	__u32 len;		/* bytes including this header, multiple of 8 */
	__u32 handle;		/* uverbs handle (uobject id) */
	__u32 events_reported;	/* CQ, SRQ, QP: async events of the object
				 * the process has read (ib_uverbs' count,
				 * returned by a destroy) */
	__u64 user_handle;	/* CQ, SRQ, QP: the value the process's library
				 * gave at create time, returned in events */
};

struct rxe_migr_mr {
	__u32 pd_handle;
	__u32 mrn;		/* pool index = lkey >> 8 */
	__u32 lkey;
	__u32 rkey;
	__u32 access;		/* IBV_ACCESS_* */
	__u32 flags;		/* RXE_MIGR_MR_* */
	__u64 addr;		/* user address registered */
	__u64 iova;
	__u64 length;
};

/* registered with RXE_MIGR_NEXT_MR_UNPINNED, not pinned yet */
#define RXE_MIGR_MR_UNPINNED	(1u << 0)

/* An address handle of the context.  A UD work request names its AH by
 * ahn (librxe keeps it with the AH and writes it into each send WQE), so
 * a restored AH must get the same ahn.  sgid_index is the source GID's
 * index in the port's table: a restore on another node takes that node's
 * GID at the same index (the table's layout is the same on every node of
 * a network). */
struct rxe_migr_ah {
	__u32 pd_handle;
	__u32 ahn;		/* pool index, as librxe's ah_num */
	__u8 port_num;
	__u8 sgid_index;
	__u8 hop_limit;
	__u8 traffic_class;
	__u32 flow_label;
	__u8 dgid[16];
	__u8 dmac[6];
	__u8 network_type;	/* RXE_NETWORK_TYPE_IPV4 / _IPV6 */
	__u8 reserved;
};

struct rxe_migr_queue {
	__u32 num_elem;		/* index_mask + 1 */
	__u32 elem_size;
	__u32 producer;		/* shared producer index */
	__u32 consumer;		/* shared consumer index */
	__u32 priv_index;	/* the kernel's private index */
	__u32 data_len;		/* ring bytes following the record, 0 if none */
};

/* the async event file ibv_open_device() made for the context (events
 * of QPs, SRQs, CQs and the port go there) */
#define RXE_MIGR_EVF_DEFAULT_ASYNC	(1u << 0)

/* body of RXE_MIGR_OBJ_ASYNC_EVENT and RXE_MIGR_OBJ_COMP_CHANNEL; the
 * handle identifies the file (see "Event files" above) */
struct rxe_migr_event_file {
	__u32 flags;		/* RXE_MIGR_EVF_* */
	__u32 events_pending;	/* queued, not yet read by the process */
};

/* CQ notify state as armed by ibv_req_notify_cq() */
enum rxe_migr_cq_notify {
	RXE_MIGR_CQ_NOTIFY_NONE = 0,
	RXE_MIGR_CQ_NOTIFY_SOLICITED = 1,
	RXE_MIGR_CQ_NOTIFY_NEXT = 2,
};

struct rxe_migr_cq {
	__u32 cqe;		/* as given to create_cq */
	__u32 comp_channel;	/* handle of the COMP_CHANNEL record, ~0u if
				 * none (or its fd was closed) */
	__u32 notify;		/* enum rxe_migr_cq_notify */
	__u32 comp_events_pending;	/* events of this CQ queued on the
					 * channel, not yet read */
	__u32 comp_events_reported;	/* completion events of this CQ the
					 * process has read */
	__u32 reserved;
	struct rxe_migr_queue queue;
};

struct rxe_migr_identify_fd {
	__u32 version;
	__s32 fd;		/* the caller's fd */
};

struct rxe_migr_fd_ident {
	__u32 type;		/* RXE_MIGR_OBJ_ASYNC_EVENT, _COMP_CHANNEL, 0 */
	__u32 handle;		/* record handle */
	__u32 flags;		/* RXE_MIGR_EVF_* */
	__u32 reserved;
};

struct rxe_migr_srq {
	__u32 pd_handle;
	__u32 srqn;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 reserved;
	struct rxe_migr_queue queue;
};

struct rxe_migr_qp {
	__u32 qpn;
	__u32 qp_type;		/* IBV_QPT_* */
	__u32 pd_handle;
	__u32 send_cq_handle;
	__u32 recv_cq_handle;
	__u32 srq_handle;	/* ~0u without SRQ */
	__u32 max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	__u32 max_inline_data;
	__u32 sq_sig_all;
	__u32 migr_state;	/* enum rxe_migr_qps at dump time */

	/* ibv_qp_attr subset */
	__u32 qp_state;		/* IBV_QPS_* the application sees */
	__u32 path_mtu;
	__u32 dest_qp_num;
	__u32 rq_psn;
	__u32 sq_psn;
	__u32 qkey;
	__u32 qp_access_flags;
	__u16 pkey_index;
	__u8 port_num;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 min_rnr_timer;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 sgid_index;
	__u8 hop_limit;
	__u8 traffic_class;
	__u32 flow_label;
	__u8 dgid[16];
	__u8 dmac[6];
	__u16 src_port;

	/* requester */
	__u32 req_state, req_wqe_index, req_psn;
	__s32 req_opcode;
	__u32 req_rd_atomic, req_wait_fence, req_need_rd_atomic, req_wait_psn;
	__u32 req_need_retry, req_wait_for_rnr_timer, req_noack_pkts;
	/* completer */
	__u32 comp_state, comp_psn;
	__s32 comp_opcode;
	__u32 comp_timeout, comp_timeout_retry, comp_started_retry;
	__u32 comp_retry_cnt, comp_rnr_retry;
	/* responder */
	__u32 resp_state, resp_msn, resp_psn, resp_ack_psn;
	__s32 resp_opcode;
	__u32 resp_drop_msg, resp_goto_error, resp_sent_psn_nak, resp_status;
	__u32 resp_aeth_syndrome;
	__u32 resp_has_wqe;	/* a receive WQE is in progress */
	__u32 resp_rkey;	/* RDMA write in progress: its MR is looked up
				 * again by rkey for each packet */
	__u64 resp_va;
	__u64 resp_offset;
	__u32 resp_resid, resp_length;
	__u32 ssn;
	__u32 srq_wqe_len;	/* bytes valid in srq_wqe */
	__u8 srq_wqe[576];	/* the responder's copy of its receive WQE
				 * (struct rxe_recv_wqe + RXE_MAX_SGE sges),
				 * raw: always for a QP on an SRQ, for a QP
				 * with its own RQ while a receive is in
				 * progress (the name is the kernel's) */
	/* responder resources: the ring of max_dest_rd_atomic slots in
	 * which the responder keeps the RDMA READs and atomics it accepted,
	 * to answer a retry of one (a retried READ without its resource is
	 * dropped, and its requester ends in a retry error) */
	__u32 resp_res_count;	/* records after the rings: used slots */
	__u32 resp_res_head;	/* the slot the next one takes */
	__u32 resp_res_tail;
	__s32 resp_res_cur;	/* slot of the READ whose reply is being
				 * sent, -1 for none: a restore moves the
				 * responder's PSN past it, the requester
				 * retries what it lacks */
	struct rxe_migr_queue sq;
	struct rxe_migr_queue rq;
};

enum rxe_migr_resp_res_type {
	RXE_MIGR_RES_READ = 1,
	RXE_MIGR_RES_ATOMIC = 2,
};

enum rxe_migr_resp_res_state {
	RXE_MIGR_RES_STATE_NEXT = 0,	/* reply under way: next packet */
	RXE_MIGR_RES_STATE_NEW = 1,	/* reply from its first packet */
	RXE_MIGR_RES_STATE_REPLAY = 2,	/* a retry from a middle packet */
};

/* One used slot of a QP's responder resources */
struct rxe_migr_resp_res {
	__u32 slot;		/* < max_dest_rd_atomic, each slot once */
	__u32 type;		/* enum rxe_migr_resp_res_type */
	__u32 state;		/* enum rxe_migr_resp_res_state */
	__u32 replay;		/* the reply being sent is a retry's */
	__u32 first_psn, last_psn, cur_psn;
	__u32 rkey;		/* READ: looked up again for each packet */
	__u64 va_org;		/* READ: the request's address */
	__u64 va;		/* READ: where the reply stands */
	__u32 length;		/* READ: the request's length */
	__u32 resid;		/* READ: bytes still to send */
	__u64 orig_val;		/* atomic: the value it returned */
};

enum rxe_migr_queue_which {
	RXE_MIGR_Q_CQ = 1,
	RXE_MIGR_Q_SRQ = 2,
	RXE_MIGR_Q_SQ = 3,	/* send queue of the QP */
	RXE_MIGR_Q_RQ = 4,	/* receive queue of the QP */
};

#define RXE_MIGR_RESTORE_SET_INDICES	(1u << 0)
/* CQ, with SET_INDICES: queue one completion event on the CQ's channel
 * (the dump had comp_events_pending != 0 for it) */
#define RXE_MIGR_RESTORE_CQ_EVENT	(1u << 1)
/* set the object's user handle (returned in its events) to user_handle */
#define RXE_MIGR_RESTORE_USER_HANDLE	(1u << 2)
/* set the counts of events the process has read (events_reported, and
 * comp_events_reported of a CQ) as dumped: libibverbs waits at destroy
 * until its count of acknowledged events equals them */
#define RXE_MIGR_RESTORE_EVENT_COUNTS	(1u << 3)

struct rxe_migr_restore_queue {
	__u32 version;
	__u32 which;		/* enum rxe_migr_queue_which */
	__u32 flags;
	__u32 offset;		/* into the ring data */
	struct rxe_migr_queue queue;	/* as dumped */
	__u64 user_handle;	/* with RXE_MIGR_RESTORE_USER_HANDLE */
	__u32 events_reported;		/* with RXE_MIGR_RESTORE_EVENT_COUNTS */
	__u32 comp_events_reported;	/* with RXE_MIGR_RESTORE_EVENT_COUNTS */
	/* followed by ring bytes for [offset, offset + n) */
};

#define RXE_MIGR_RESTORE_NO_RESUME	(1u << 0)

struct rxe_migr_restore_qp {
	__u32 version;
	__u32 flags;		/* RXE_MIGR_RESTORE_NO_RESUME: keep the QP
				 * stopped, send no resume (tests) */
	struct rxe_migr_qp qp;	/* as dumped */
	/* followed by qp.resp_res_count x struct rxe_migr_resp_res, as
	 * dumped */
};

enum rxe_migr_qp_ctl_op {
	RXE_MIGR_QP_STOP = 1,
	RXE_MIGR_QP_RESUME = 2,	/* back to running and send resume */
};

struct rxe_migr_qp_ctl {
	__u32 version;
	__u32 op;
};

#define RXE_MIGR_MMAP_AGAIN	(1u << 0)

struct rxe_migr_queue_mmap {
	__u32 version;
	__u32 which;		/* enum rxe_migr_queue_which */
	__u32 flags;		/* RXE_MIGR_MMAP_* */
	__u32 reserved;
};

struct rxe_migr_queue_mmap_out {
	__u64 offset;		/* mmap offset on the uverbs fd */
	__u64 size;		/* bytes, page aligned */
};

struct rxe_migr_mr_pin {
	__u32 version;
	__u32 reserved;
};

/* rxe_migr_mr_writes_req.flags: clear the bits read (atomically per
 * word: a write that races with the read is either in this answer or
 * stays set) */
#define RXE_MIGR_WRITES_CLEAR	(1u << 0)

struct rxe_migr_mr_writes_req {
	__u32 version;
	__u32 flags;		/* RXE_MIGR_WRITES_* */
	__u64 first_page;	/* first page of the answer's bitmap, a
				 * multiple of 64 */
};

/* Bit i of bitmap word w is page first_page + 64 * w + i of the MR,
 * whose page 0 is the page at addr. */
struct rxe_migr_mr_writes {
	__u64 addr;		/* user address of the MR's first page */
	__u64 pages;		/* pages the MR spans; 0 while not pinned */
	__u64 first_page;	/* as asked */
	__u64 count;		/* pages in the bitmap that follows */
	/* the context's serial number, unique while the module is loaded */
	__u64 context;
	/* user MRs of the device (any context) deregistered while they had
	 * bits set, since the device was added: their writes are in no
	 * bitmap any more, also when their context is gone with them */
	__u64 lost;
};

/* rxe_migr_adopt_cred.flags: the other threads of pid whose credentials
 * equal pid's take pid's struct cred too, each when it next returns to user
 * space (a restorer gives every thread its own struct cred, and ib_uverbs
 * compares the pointers) */
#define RXE_MIGR_ADOPT_CRED_THREADS	(1u << 0)

struct rxe_migr_adopt_cred {
	__u32 version;
	__s32 fd;		/* the caller's fd of this uverbs file */
	__s32 pid;		/* task whose credentials the file takes */
	__u32 flags;		/* RXE_MIGR_ADOPT_CRED_* */
};

/* payload of a resume packet (network byte order on the wire) */
struct rxe_migr_resume_payload {
	__be32 magic;
	__be32 version;
	__be32 src_qpn;
	__be32 reserved;
};

#endif /* RXE_MIGR_ABI_H */
