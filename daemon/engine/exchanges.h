/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a connection's exchanges are (exchanges.c; client_hello.c, protocols.c): TLS records walked,
 * the ClientHello's offers, HTTP/2's preface. The engine's own: its users
 * read the counts these give in struct cs_request_stats (engine.h).
 */
#ifndef CS_EXCHANGES_H
#define CS_EXCHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "request_stats.h"

/* What one exchange (bytes in, then the answer) of a connection is. */
enum cs_exchange_kind {
	CS_EXCHANGE_REQUEST = 0,    /* a request: application bytes in, an answer out */
	CS_EXCHANGE_TLS_HANDSHAKE,  /* TLS handshake records only: connection set-up */
	CS_EXCHANGE_TLS_CONTROL,    /* TLS records after the handshake with no application
	                               data: alerts (close_notify), key updates */
	CS_EXCHANGE_MULTIPLEXED,    /* on a connection whose requests overlap: not one request */
	CS_EXCHANGE_PROTOCOL_SETUP, /* the protocol's own set-up (PostgreSQL's start-up, password) */
	CS_EXCHANGE_GOODBYE,        /* the client's goodbye, unanswered (PostgreSQL's Terminate) */
};

/*
 * Where a TLS connection's handshake is, from the content types of the
 * records the client sent (exchanges.c has the rules and their limits).
 */
enum cs_tls_phase {
	CS_TLS_NONE = 0,        /* not TLS, or not seen from its start */
	CS_TLS_HELLO,           /* its first bytes were a handshake record: the ClientHello */
	CS_TLS_CLIENT_FLIGHT,   /* ClientHello read: the client's second flight next */
	CS_TLS_CLIENT_FLIGHT_CCS, /* ...which began with a ChangeCipherSpec */
	CS_TLS_12_FLIGHT,       /* TLS 1.2: handshake records until application data */
	CS_TLS_DONE,            /* handshake over: type 23 records are application data */
	CS_TLS_LOST,            /* records not followed: could not be told */
};

/* Why a connection counts as multiplexed. */
enum cs_multiplex_reason {
	CS_MUX_H2_PREFACE = 1, /* its first bytes were HTTP/2's "PRI * HTTP/2.0" */
	CS_MUX_OVERLAP,        /* bytes of a request were read after the previous answer began */
	CS_MUX_ONE_READ,       /* a read held a request and the next one (pipelined, read at once) */
	CS_MUX_UNCOUNTED,      /* a Redis read whose commands could not be counted */
	CS_MUX_H2_ALPN,        /* its TLS server chose HTTP/2 (ALPN, in a TLS 1.2 ServerHello) */
};

/* One exchange's TLS records, walked (cs_tls_walk). */
struct cs_tls_exchange {
	bool handshake;      /* it carried handshake records (or ChangeCipherSpec) */
	bool app_data;       /* it carried application data */
	bool ended;          /* the handshake ended in it */
	bool resumed;        /* a TLS 1.2 abbreviated handshake (session resumption) */
	uint8_t version;     /* 12 or 13 when this exchange told it; 0: not told here */
	int data_record;     /* the first record of application data, by position; -1: none */
};

/*
 * Walk an exchange's record content types (kept of count; count > kept:
 * some were not kept) from phase, which moves on. lost: the probe lost the
 * framing in this exchange. Pure: unit tests drive it with synthetic types.
 */
void cs_tls_walk(uint8_t *phase, const uint8_t *types, size_t kept, size_t count, bool lost,
		 struct cs_tls_exchange *out);

/* The exchange's one record is a TLS 1.3 alert (19 bytes of type 23, after the handshake). */
bool cs_is_tls13_alert(const struct cs_ev_request_bytes *ev, size_t first_len);

/* The kind of exchange a walk makes. */
enum cs_exchange_kind cs_tls_exchange_kind(const struct cs_tls_exchange *walk, uint8_t phase);

/* What a ClientHello's ALPN extension offers (cs_client_hello_alpn). */
enum cs_alpn_offer {
	CS_ALPN_NOT_TOLD = 0, /* cut before its extensions ended, or malformed */
	CS_ALPN_NONE,         /* no ALPN extension: HTTP/1.x */
	CS_ALPN_NO_H2,        /* an ALPN list without "h2" */
	CS_ALPN_H2,           /* "h2" offered: the server may choose HTTP/2 */
};

/*
 * The ALPN offer of a ClientHello handshake message (len bytes of it, from
 * its type byte; total_len: the whole record's body). Pure.
 */
enum cs_alpn_offer cs_client_hello_alpn(const uint8_t *hello, size_t len, size_t total_len);

/* Whether a ClientHello offered to resume a TLS 1.3 session (cs_client_hello_psk). */
enum cs_psk_offer {
	CS_PSK_NOT_TOLD = 0, /* cut before its extensions ended (pre_shared_key is the last), or malformed */
	CS_PSK_NONE,         /* no pre_shared_key extension: a full handshake */
	CS_PSK_OFFERED,      /* a pre_shared_key extension: a session ticket offered */
};

/* What a TLS server chose for ALPN, from its ServerHello (cs_server_hello_alpn). */
enum cs_alpn_choice {
	CS_ALPN_CHOICE_NOT_TOLD = 0, /* not a ServerHello, cut before its extensions ended, or malformed */
	CS_ALPN_CHOICE_NONE,         /* no ALPN extension: HTTP/1.x */
	CS_ALPN_CHOICE_OTHER,        /* a protocol other than "h2" (http/1.1) */
	CS_ALPN_CHOICE_H2,           /* HTTP/2 */
	CS_ALPN_CHOICE_ENCRYPTED,    /* TLS 1.3: the choice is in the encrypted extensions */
};

/*
 * The ALPN choice of a server's first flight (len bytes of it, from its
 * first record's header on). Pure.
 */
enum cs_alpn_choice cs_server_hello_alpn(const uint8_t *flight, size_t len);

/* The same walk as cs_client_hello_alpn, for the pre_shared_key extension (41). Pure. */
enum cs_psk_offer cs_client_hello_psk(const uint8_t *hello, size_t len, size_t total_len);

/*
 * A TLS 1.3 server's first flight when it resumed a session: ServerHello,
 * EncryptedExtensions and Finished, about 250 bytes. A full handshake's adds
 * a Certificate and CertificateVerify: even one Ed25519 certificate makes
 * it 600 bytes or more (RSA 2048: ~1 500).
 */
#define CS_TLS13_RESUMED_FLIGHT_MAX 512

/* first_len bytes begin with HTTP/2's connection preface. */
bool cs_is_h2_preface(const uint8_t *first, size_t first_len);

/* protocols.c: what a connection's first bytes (and the probe's flags on them) speak. Pure. */
enum cs_protocol cs_protocol_of(const uint8_t *first, size_t first_len, uint8_t peek_flags);
/* A bytes record of a protocol whose commands the probes count: Redis, PostgreSQL, MySQL. */
bool cs_counts_commands(const struct cs_ev_request_bytes *ev);
/* The requests a bytes record's exchange carried: a Redis pipeline's commands, PostgreSQL's queries; 1 otherwise. */
uint32_t cs_exchange_commands(const struct cs_ev_request_bytes *ev);
/* A PostgreSQL or MySQL exchange's kind by its messages: set-up, a goodbye, or a request. */
enum cs_exchange_kind cs_framed_kind(const struct cs_ev_request_bytes *ev);

#endif /* CS_EXCHANGES_H */
