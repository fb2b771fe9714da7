/* SPDX-License-Identifier: BSD-3-Clause */
/* tls_certs.h -- certificates for TLS tests, demos and bench, made with
 * the openssl command at run time (nothing is kept in the repository).
 *
 * rs_tls_certs(dir) writes into dir, all PEM:
 *   ca.crt ca.key             the test CA
 *   server.crt server.key     for 127.0.0.1 and localhost, by the CA
 *   client.crt client.key     a client certificate by the CA (mutual TLS)
 *   expired.crt               server.key's, 127.0.0.1/localhost, expired
 *                             in 2020
 *   other-name.crt            server.key's, for other.invalid only
 *   other-ca.crt other-ca.key a CA that signed none of the above
 *
 * Test support: blocking, prints openssl's complaints to stderr. The
 * program "openssl" is looked up in PATH. */
#ifndef HILOCK_TESTS_TLS_CERTS_H
#define HILOCK_TESTS_TLS_CERTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Make the files above in dir (which exists). 0, or -1 with a message on
 * stderr. */
int rs_tls_certs(const char *dir);

#ifdef __cplusplus
}
#endif

#endif
