/* SPDX-License-Identifier: MIT */
/* mqtt-util.c - libmosquitto glue shared by the forwarder and the receiver. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "mqtt-private.h"
#include "basic/clock.h"

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_init(void)
{
	mosquitto_lib_init();
}

void upl_mqtt_lib_init(void)
{
	/* mosquitto_lib_init() sets up OpenSSL and is not reentrant. */
	pthread_once(&lib_once, lib_init);
}

int upl_mqtt_errno(int rc)
{
	switch (rc) {
	case MOSQ_ERR_SUCCESS:
		return 0;
	case MOSQ_ERR_NOMEM:
		return -ENOMEM;
	case MOSQ_ERR_INVAL:
	case MOSQ_ERR_MALFORMED_UTF8:
		return -EINVAL;
	case MOSQ_ERR_NO_CONN:
		return -ENOTCONN;
	case MOSQ_ERR_CONN_LOST:
		return -ECONNRESET;
	case MOSQ_ERR_CONN_REFUSED:
		return -ECONNREFUSED;
	case MOSQ_ERR_TLS:
	case MOSQ_ERR_PROTOCOL:
	case MOSQ_ERR_MALFORMED_PACKET:
		return -EPROTO;
	case MOSQ_ERR_AUTH:
		return -EACCES;
	case MOSQ_ERR_PAYLOAD_SIZE:
		return -EMSGSIZE;
	case MOSQ_ERR_EAI:
		return -EHOSTUNREACH;
	case MOSQ_ERR_KEEPALIVE:
		return -ETIMEDOUT;
	case MOSQ_ERR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case MOSQ_ERR_ERRNO:
		return errno > 0 ? -errno : -EIO;
	default:
		return -EIO;
	}
}

void upl_mqtt_describe(int rc, int sys_errno, const char *logged, char *buf, size_t len)
{
	bool have_log = logged && *logged;

	switch (rc) {
	case MOSQ_ERR_ERRNO:
		snprintf(buf, len, "%s", strerror(sys_errno > 0 ? sys_errno : EIO));
		break;
	case MOSQ_ERR_EAI:
		/* "Lookup error." says nothing; getaddrinfo's own words do. */
		snprintf(buf, len, "cannot resolve the host name: %s", gai_strerror(sys_errno));
		break;
	case MOSQ_ERR_TLS:
		snprintf(buf, len, "TLS failure%s%s", have_log ? ": " : "", have_log ? logged : "");
		break;
	default:
		/* A broker that drops a TLS client mid-handshake shows up as a
		   lost connection; libmosquitto's log line says why. */
		snprintf(buf, len, "%s%s%s%s", mosquitto_strerror(rc), have_log ? " (" : "", have_log ? logged : "",
		         have_log ? ")" : "");
		break;
	}
}

bool upl_mqtt_tcp_connected(struct mosquitto *mosq)
{
	struct sockaddr_storage sa;
	socklen_t n = sizeof(sa);
	int fd = mosquitto_socket(mosq);

	return fd >= 0 && getpeername(fd, (struct sockaddr *)&sa, &n) == 0;
}

int upl_mqtt_connack_errno(int connack_rc)
{
	/* MQTT 3.1.1: 4 bad user name or password, 5 not authorised. */
	return connack_rc == 4 || connack_rc == 5 ? -EACCES : -ECONNREFUSED;
}

int upl_mqtt_tls_check(const struct upl_tls_cfg *tls)
{
	if (!tls || !tls->ca_file || !*tls->ca_file)
		return -EINVAL;
	/* A key without its certificate (or the reverse) is a board-file mistake
	   that would otherwise surface as an opaque handshake failure. */
	if (!tls->cert_file != !tls->key_file)
		return -EINVAL;
	return 0;
}

int upl_mqtt_tls_apply(struct mosquitto *mosq, const struct upl_tls_cfg *tls)
{
	int rc;

	rc = mosquitto_tls_set(mosq, tls->ca_file, NULL, tls->cert_file, tls->key_file, NULL);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	/* 1 = SSL_VERIFY_PEER: the broker's chain must verify against ca_file. */
	rc = mosquitto_tls_opts_set(mosq, 1, "tlsv1.2", NULL);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	return upl_mqtt_errno(mosquitto_tls_insecure_set(mosq, tls->insecure));
}


char *upl_strdup_opt(const char *s, bool *ok)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*ok = false;
	return d;
}

/* The vehicle level of railmon/<vehicle>/<kind> must name the Batch's
   vehicle: otherwise one vehicle could inject records into another's
   sequence space. */
bool upl_topic_vehicle_matches(const char *topic, const char *vehicle)
{
	const char *a, *b;

	if (!topic)
		return true;
	a = strchr(topic, '/');
	if (!a)
		return false;
	b = strchr(a + 1, '/');
	if (!b)
		return false;
	return (size_t)(b - a - 1) == strlen(vehicle) && !strncmp(a + 1, vehicle, (size_t)(b - a - 1));
}
