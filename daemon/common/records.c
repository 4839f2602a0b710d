// SPDX-License-Identifier: BSD-2-Clause
#include "records.h"

size_t cs_record_size(uint16_t type)
{
	switch (type) {
	case CS_EV_ACCEPT:
		return sizeof(struct cs_ev_accept);
	case CS_EV_LISTENER_SAMPLE:
		return sizeof(struct cs_ev_listener_sample);
	case CS_EV_HANDSHAKE:
		return sizeof(struct cs_ev_handshake);
	case CS_EV_PROC_FORK:
	case CS_EV_PROC_EXIT:
		return sizeof(struct cs_ev_proc);
	case CS_EV_REQUEST:
		return sizeof(struct cs_ev_request);
	case CS_EV_CONN_CLOSE:
		return sizeof(struct cs_ev_conn_close);
	case CS_EV_RESET:
		return sizeof(struct cs_ev_reset);
	case CS_EV_THREAD_SAMPLE:
		return sizeof(struct cs_ev_thread_sample);
	case CS_EV_ACK_OVERFLOW:
		return sizeof(struct cs_ev_ack_overflow);
	case CS_EV_THREAD_CPU:
		return sizeof(struct cs_ev_thread_cpu);
	case CS_EV_THREAD_POLLS:
		return sizeof(struct cs_ev_thread_polls);
	case CS_EV_THREAD_NAME:
		return sizeof(struct cs_ev_thread_name);
	case CS_EV_HANDBACK:
		return sizeof(struct cs_ev_handback);
	case CS_EV_PROG_COST:
		return sizeof(struct cs_ev_prog_cost);
	case CS_EV_SELF_COST:
		return sizeof(struct cs_ev_self_cost);
	case CS_EV_REQUEST_BYTES:
		return sizeof(struct cs_ev_request_bytes);
	case CS_EV_CLIENT_HELLO:
		return sizeof(struct cs_ev_client_hello);
	case CS_EV_SERVER_HELLO:
		return sizeof(struct cs_ev_server_hello);
	case CS_EV_RUNTIME_PAUSE:
		return sizeof(struct cs_ev_runtime_pause);
	case CS_EV_UPSTREAM:
		return sizeof(struct cs_ev_upstream);
	case CS_EV_UPSTREAM_PATH:
		return sizeof(struct cs_ev_upstream_path);
	case CS_EV_CLIENT_READ:
		return sizeof(struct cs_ev_client_read);
	default:
		return 0;
	}
}

size_t cs_record_size_in(uint16_t type, uint32_t wire_version)
{
	if (type == CS_EV_CONN_CLOSE && wire_version < 9)
		return CS_EV_CONN_CLOSE_V8_SIZE;
	if (type == CS_EV_CONN_CLOSE && wire_version < 14)
		return CS_EV_CONN_CLOSE_V13_SIZE;
	if (type == CS_EV_REQUEST && wire_version < 16)
		return CS_EV_REQUEST_V15_SIZE;
	if (type == CS_EV_REQUEST && wire_version < 17)
		return CS_EV_REQUEST_V16_SIZE;
	if (type == CS_EV_REQUEST && wire_version < 18)
		return CS_EV_REQUEST_V17_SIZE;
	if (type == CS_EV_REQUEST && wire_version < 19)
		return CS_EV_REQUEST_V18_SIZE;
	if (type == CS_EV_RUNTIME_PAUSE && wire_version < 20)
		return CS_EV_RUNTIME_PAUSE_V19_SIZE;
	return cs_record_size(type);
}
