/* Internal: building driver-specific uverbs ioctls for rdma_rxe. */
#ifndef VERBS_EXT_MIGR_IOCTL_H
#define VERBS_EXT_MIGR_IOCTL_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#define MIGR_MAX_ATTRS 6

struct migr_call {
	uint16_t object;	/* UVERBS_OBJECT_DEVICE unless set */
	uint16_t method;
	uint16_t num_attrs;
	struct ib_uverbs_attr attrs[MIGR_MAX_ATTRS];
};

void migr_call_init(struct migr_call *c, uint16_t method);
void migr_attr_in(struct migr_call *c, uint16_t id, const void *p, size_t len);
void migr_attr_out(struct migr_call *c, uint16_t id, void *p, size_t len);
void migr_attr_handle(struct migr_call *c, uint16_t id, uint32_t handle);
/* 0 or -errno */
int migr_call_run(int cmd_fd, struct migr_call *c);

#endif
