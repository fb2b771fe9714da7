/* SPDX-License-Identifier: BSD-3-Clause */
/* tls_certs.c -- see tls_certs.h. Each step is one openssl command run by
 * the shell in dir; EC keys keep it quick. The expired certificate is
 * signed with `openssl ca`, the one command that takes explicit dates. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tls_certs.h"

#include <stdio.h>
#include <stdlib.h>

/* The steps, run in order with the directory as working directory. */
static const char *const steps[] = {
    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
    "-keyout ca.key -out ca.crt -days 30 -subj /CN=hilock-test-ca",
    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
    "-keyout other-ca.key -out other-ca.crt -days 30 "
    "-subj /CN=hilock-other-ca",
    "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
    "-keyout server.key -out server.csr -subj /CN=localhost",
    "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext",
    "printf 'subjectAltName=DNS:other.invalid\\n' > other.ext",
    "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
    "-CAcreateserial -days 30 -extfile server.ext -out server.crt",
    "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
    "-CAcreateserial -days 30 -extfile other.ext -out other-name.crt",
    "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
    "-keyout client.key -out client.csr -subj /CN=hilock-client",
    "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key "
    "-CAcreateserial -days 30 -out client.crt",
    "touch index.txt && echo 1000 > serial && printf '[ca]\\ndefault_ca=c\\n"
    "[c]\\ndatabase=index.txt\\nnew_certs_dir=.\\nserial=serial\\n"
    "default_md=sha256\\npolicy=p\\nunique_subject=no\\n[p]\\n"
    "commonName=supplied\\n' > ca.cnf",
    "openssl ca -batch -config ca.cnf -keyfile ca.key -cert ca.crt "
    "-startdate 20200101000000Z -enddate 20200102000000Z -notext "
    "-extfile server.ext -in server.csr -out expired.crt",
};

int rs_tls_certs(const char *dir)
{
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        char *cmd;
        if (asprintf(&cmd, "cd '%s' && { %s; } >/dev/null 2>openssl.err",
                     dir, steps[i]) < 0)
            return -1;
        int rc = system(cmd);
        free(cmd);
        if (rc != 0) {
            fprintf(stderr, "rs: openssl step %zu failed in %s (see "
                            "openssl.err there): %s\n",
                    i, dir, steps[i]);
            return -1;
        }
    }
    return 0;
}
