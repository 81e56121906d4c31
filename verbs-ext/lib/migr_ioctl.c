/* Driver-specific uverbs ioctls on ibv_context->cmd_fd (RDMA_DRIVER_RXE). */
#include "migr_ioctl.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>

void migr_call_init(struct migr_call *c, uint16_t method)
{
	memset(c, 0, sizeof(*c));
	c->method = method;
}

static struct ib_uverbs_attr *next_attr(struct migr_call *c, uint16_t id)
{
	struct ib_uverbs_attr *a = &c->attrs[c->num_attrs++];

	a->attr_id = id;
	a->flags = UVERBS_ATTR_F_MANDATORY;
	return a;
}

void migr_attr_in(struct migr_call *c, uint16_t id, const void *p, size_t len)
{
	struct ib_uverbs_attr *a = next_attr(c, id);

	a->len = (uint16_t)len;
	if (len <= sizeof(a->data))
		memcpy(&a->data, p, len);	/* small inputs travel inline */
	else
		a->data = (uintptr_t)p;
}

void migr_attr_out(struct migr_call *c, uint16_t id, void *p, size_t len)
{
	struct ib_uverbs_attr *a = next_attr(c, id);

	a->len = (uint16_t)len;
	a->data = (uintptr_t)p;
}

void migr_attr_handle(struct migr_call *c, uint16_t id, uint32_t handle)
{
	struct ib_uverbs_attr *a = next_attr(c, id);

	a->data = handle;
}

int migr_call_run(int cmd_fd, struct migr_call *c)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[MIGR_MAX_ATTRS];
	} buf;

	memset(&buf, 0, sizeof(buf));
	buf.hdr.length = sizeof(buf.hdr) + c->num_attrs * sizeof(buf.attrs[0]);
	buf.hdr.object_id = c->object;
	buf.hdr.method_id = c->method;
	buf.hdr.num_attrs = c->num_attrs;
	buf.hdr.driver_id = RDMA_DRIVER_RXE;
	memcpy(buf.attrs, c->attrs, c->num_attrs * sizeof(buf.attrs[0]));
	if (ioctl(cmd_fd, RDMA_VERBS_IOCTL, &buf.hdr))
		return -errno;
	return 0;
}
