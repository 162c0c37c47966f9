/*
 * tls.h - the server's certificate and key for HTTPS (serve --tls-cert/--tls-key).
 *
 * main.c calls tls_load() at `serve` when both files are given (command
 * line, else tls_cert/tls_key in the config file); http_daemon.c hands the PEM
 * text to libmicrohttpd, which serves TLS through GnuTLS. The files are
 * checked with OpenSSL first so that a wrong file gets a message naming
 * it: unreadable, not PEM, an encrypted key, a key that does not belong to
 * the certificate. The key text is wiped when it is freed.
 */
#ifndef KJ_TLS_H
#define KJ_TLS_H

#include <stddef.h>
#include "kj_err.h"

#define TLS_MAX_PEM_BYTES (1024 * 1024) /* a certificate chain or key file */
/* GnuTLS priorities: TLS 1.2 and 1.3 only; in TLS 1.2 only ECDHE key
 * exchange (forward secrecy: no static RSA, no DHE) with AEAD ciphers
 * (AES-GCM, ChaCha20-Poly1305: no CBC with SHA-1 or SHA-2 MACs, no CCM);
 * TLS 1.3 keeps its AES-GCM and ChaCha20-Poly1305 suites. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:" \
                       "-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:" \
                       "-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:" \
                       "-MAC-ALL:+AEAD"
/* Sent with every answer over HTTPS (http_queue), never over plain HTTP:
 * browsers that saw it use https:// for this host for a year. No
 * includeSubDomains: the server cannot speak for other hosts of its domain. */
#define TLS_HSTS "max-age=31536000"

struct tls_pem {
    char *cert;   /* owned: the certificate file (leaf first, then its chain) */
    char *key;    /* owned: the private key file, unencrypted PEM */
};

/* Read and check cert_path and key_path into out. KJ_EIO when a file
 * cannot be read, KJ_EINVAL when it holds no usable PEM certificate or
 * key, or when the key does not match the certificate; the message names
 * the file. Logs the certificate's subject and expiry (a warning when it
 * has expired or is not valid yet). */
int tls_load(const char *cert_path, const char *key_path, struct tls_pem *out,
             struct kj_err *err);

/* MHD's feature check: 1 when libmicrohttpd was built with TLS. */
int tls_supported(void);

/* Wipe and free what out holds; safe on a zeroed or freed struct. */
void tls_free(struct tls_pem *out);

#endif
