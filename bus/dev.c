/* SPDX-License-Identifier: MIT */
/* dev.c - the device (bus_dev_t) every driver is: driver selection and the
   logic every backend shares (bus.h is its contract, bus-private.h the
   backends' side). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "bus-private.h"

static const struct bus_ops *bus_ops_for(const struct bus_cfg *cfg)
{
	if (cfg->kind == BUS_KIND_CAN) {
		switch (cfg->can.driver) {
		case BUS_CAN_TRACE:
			return &bus_can_trace_ops;
		case BUS_CAN_SOCKETCAN:
			return &bus_can_socket_ops;
		case BUS_CAN_SLCAN:
			return &bus_can_slcan_ops;
		default:
			return NULL;
		}
	}
	if (cfg->kind == BUS_KIND_MODBUS)
		return &bus_modbus_ops;
	if (cfg->kind == BUS_KIND_TRDP)
		return cfg->trdp.capture[0] ? &bus_trdp_trace_ops : &bus_trdp_ops;
	return NULL;
}

static int dev_new(const struct bus_cfg *cfg, bool absent_ok, bus_dev_t **ret_dev)
{
	const struct bus_ops *ops;
	bus_dev_t *dev;
	int r;

	if (!cfg || !ret_dev || cfg->kind >= BUS_KIND_MAX)
		return -EINVAL;
	ops = bus_ops_for(cfg);
	if (!ops)
		return -EPROTONOSUPPORT;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->ops = ops;
	dev->cfg = *cfg;
	dev->absent_ok = absent_ok && ops->reopen;
	r = ops->open(dev, cfg);
	if (r < 0) {
		free(dev);
		return r;
	}
	*ret_dev = dev;
	return 0;
}

int bus_dev_new(const struct bus_cfg *cfg, bus_dev_t **ret_dev)
{
	return dev_new(cfg, false, ret_dev);
}

int bus_dev_new_absent_ok(const struct bus_cfg *cfg, bus_dev_t **ret_dev)
{
	return dev_new(cfg, true, ret_dev);
}

bus_dev_t *bus_dev_free(bus_dev_t *dev)
{
	if (!dev)
		return NULL;
	if (dev->ops && dev->ops->close)
		dev->ops->close(dev);
	free(dev);
	return NULL;
}

int bus_dev_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	if (!dev || !items || !max)
		return -EINVAL;
	return dev->ops->recv(dev, items, max, timeout_ms);
}

int bus_dev_send(bus_dev_t *dev, const struct acq_item *item)
{
	if (!dev || !item)
		return -EINVAL;
	if (!dev->ops->send)
		return -EOPNOTSUPP;
	return dev->ops->send(dev, item);
}

int bus_dev_check(bus_dev_t *dev, struct acq_item *events, size_t max)
{
	if (!dev || (!events && max))
		return -EINVAL;
	if (!dev->ops->check)
		return 0;
	return dev->ops->check(dev, events, max);
}

bool bus_dev_has_check(const bus_dev_t *dev)
{
	return dev && dev->ops->check;
}

int bus_dev_gone_cause(const bus_dev_t *dev)
{
	if (!dev)
		return -EINVAL;
	return dev->gone_cause;
}

int bus_dev_release(bus_dev_t *dev)
{
	if (!dev)
		return -EINVAL;
	if (!dev->ops->release)
		return -EOPNOTSUPP;
	dev->ops->release(dev);
	return 0;
}

int bus_dev_reopen(bus_dev_t *dev)
{
	int r;

	if (!dev)
		return -EINVAL;
	if (!dev->ops->reopen)
		return -EOPNOTSUPP;
	r = dev->ops->reopen(dev);
	if (r == 0)
		dev->gone_cause = 0;
	return r;
}

int bus_dev_await(bus_dev_t *dev, int timeout_ms)
{
	if (!dev)
		return -EINVAL;
	if (!dev->ops->await_back)
		return -EOPNOTSUPP;
	return dev->ops->await_back(dev, timeout_ms);
}

int bus_dev_stats(const bus_dev_t *dev, struct bus_stats *ret_stats)
{
	if (!dev || !ret_stats)
		return -EINVAL;
	*ret_stats = (struct bus_stats){
		.rx_frames = atomic_load_explicit(&dev->stats.rx_frames, memory_order_relaxed),
		.rx_errors = atomic_load_explicit(&dev->stats.rx_errors, memory_order_relaxed),
		.rx_dropped = atomic_load_explicit(&dev->stats.rx_dropped, memory_order_relaxed) +
		              atomic_load_explicit(&dev->stats.check_dropped, memory_order_relaxed),
		.bad_input = atomic_load_explicit(&dev->stats.bad_input, memory_order_relaxed),
		.tx_frames = atomic_load_explicit(&dev->stats.tx_frames, memory_order_relaxed),
	};
	return 0;
}

const struct acq_latency *bus_dev_latency(const bus_dev_t *dev)
{
	if (!dev || !dev->ops->latency)
		return NULL;
	return dev->ops->latency(dev);
}

const struct acq_latency *bus_dev_transaction(const bus_dev_t *dev)
{
	if (!dev || !dev->ops->transaction)
		return NULL;
	return dev->ops->transaction(dev);
}
